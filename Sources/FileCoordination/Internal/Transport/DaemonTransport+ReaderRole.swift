import FCCore
import FCProtocol
import FCSystem
import FCToolkit
import Foundation
import Logging
import Synchronization
import SystemPackage

// The reader role (docs/ARCHITECTURE.md §8.1): the one way the connection is read. A blocked caller takes it to read
// its own reply; the listener takes it only for data no caller reads. Also the listener thread and the connection's
// end.

extension DaemonTransport {
    /// Changes what must be read; when that changes whether frames may come unasked, wakes the listener (to poll
    /// again, for data or for the end only).
    func updateReading(_ change: (inout ReadingState) -> Void) {
        let (changed, next) = reading.withLock { state -> (Bool, Wake) in
            let before = state.unaskedExpected
            let watched = state.unattendedSince != nil
            change(&state)
            unattendedCount.store(state.unattendedClaims.count, ordering: .releasing)
            if state.unattendedClaims.isEmpty {
                state.unattendedSince = nil
            } else if state.unattendedSince == nil {
                state.unattendedSince = keepalive.now
            }
            guard state.unaskedExpected != before else {
                // The listener polls with a timeout while unattended claims wait (the daemon's silence is watched).
                return (watched != (state.unattendedSince != nil), .nobody)
            }
            return (true, Self.nextReader(&state))
        }
        guard changed else { return }
        wakeListener()
        next.wake()
    }

    /// Who is woken when the role is free: a parked caller, or nobody (the listener is never woken for the role: it
    /// looks again after its back-off).
    enum Wake {
        case nobody
        case waiter(ClaimWaiter)

        func wake() {
            if case .waiter(let waiter) = self { waiter.nudge() }
        }
    }

    /// With the role free (under `reading`): the first parked caller still waiting (it reads everything that comes,
    /// unasked frames included, until its own outcome). The listener is not woken: one that found the role busy
    /// looks again by itself within ``listenerBackoff``, so that a caller's release costs no wake-up.
    static func nextReader(_ state: inout ReadingState) -> Wake {
        guard !state.readerBusy else { return .nobody }
        while !state.parked.isEmpty {
            let waiter = state.parked.removeFirst()
            if waiter.outcome == nil { return .waiter(waiter) }
        }
        return .nobody
    }

    /// How long a listener that found the role busy (woken by a reply its caller reads) waits before it watches the
    /// socket again: the longest an unasked frame that comes right after a call of this process waits to be read.
    /// Measured against waking it at every release (issue 38, docs/ARCHITECTURE.md §8.1).
    static let listenerBackoff: DispatchTimeInterval = .milliseconds(5)

    func releaseRole() {
        let next = reading.withLock { state -> Wake in
            state.readerBusy = false
            return Self.nextReader(&state)
        }
        next.wake()
    }

    func awaitOutcome(of waiter: ClaimWaiter, holdingRole: Bool) -> ClaimOutcome {
        let since = keepalive.now
        var holds = holdingRole
        // Taken when the claim was sent: nothing of the reply can have been read, so the first step is the receive.
        var receiveFirst = holdingRole
        while true {
            if holds {
                var outcome: ClaimOutcome?
                readFrames(blocking: true, waitingSince: since, receiveFirst: receiveFirst) {
                    outcome = waiter.outcome
                    return outcome != nil
                }
                receiveFirst = false
                releaseRole()
                if let outcome { return outcome }
                holds = false
            }
            if let outcome = waiter.outcome { return outcome }
            let (reads, lostError) = reading.withLock { state -> (Bool, FileCoordinationError?) in
                if let lostError = state.lostError { return (false, lostError) }
                if !state.readerBusy && !state.closed {
                    state.readerBusy = true
                    return (true, nil)
                }
                state.parked.append(waiter)
                return (false, nil)
            }
            if let lostError {
                // The connection is gone and its callers were failed; one that came late fails the same way.
                waiter.resume(.failed(lostError))
                continue
            }
            if reads {
                holds = true
            } else {
                let woken = waiter.park(timeout: keepalive.enabled ? keepalive.policy.checkEvery : nil)
                let next = reading.withLock { state -> Wake in
                    state.parked.removeAll { $0 === waiter }
                    // Nudged to take a free role but resumed meanwhile (a lost connection, a silent daemon): the
                    // role passes on, so that no other parked caller sleeps with it free.
                    return waiter.outcome == nil ? .nobody : Self.nextReader(&state)
                }
                next.wake()
                if !woken { checkKeepalive(waitingSince: since) }
            }
        }
    }

    /// Holding the role: handles every frame received, receiving more until `done` holds (blocking), or until
    /// nothing more is available (not blocking). At the end of the stream or on an error the connection is lost.
    /// A blocking read wakes every ``KeepalivePolicy/checkEvery`` (the socket's receive timeout) to look at the
    /// daemon's silence for a call waiting since `waitingSince`. `receiveFirst`: the role was just taken, with
    /// nothing decoded left by its last holder (each handles every decoded frame before it stops), and the caller's
    /// outcome cannot have come yet: the first step is the receive. Returns how many frames it handled.
    @discardableResult
    func readFrames(
        blocking: Bool,
        waitingSince: ContinuousClock.Instant? = nil,
        receiveFirst: Bool = false,
        until done: () -> Bool
    ) -> Int {
        var handled = 0
        var skipsCheck = receiveFirst
        while true {
            if skipsCheck {
                skipsCheck = false
            } else {
                do {
                    while let frame = try decoder.next() {
                        handle(frame)
                        handled += 1
                    }
                } catch {
                    connectionLost("filecoordd sent a malformed frame: \(error)")
                    return handled
                }
                if done() { return handled }
            }
            let count: Int
            do {
                count = blocking ? try socket.receive(into: buffer) : try socket.receiveAvailable(into: buffer)
            } catch {
                if error == .resourceTemporarilyUnavailable {
                    guard blocking else { return handled }
                    if let waitingSince {
                        checkKeepalive(waitingSince: waitingSince)
                        continue
                    }
                }
                connectionLost("the connection to filecoordd failed: \(error)")
                return handled
            }
            guard count > 0 else {
                connectionLost("filecoordd closed the connection")
                return handled
            }
            keepalive.heard()
            decoder.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// The listener's name as the kernel shows it (`top -H`, `/proc/…/comm`; at most 15 bytes): Foundation's
    /// `Thread.name`, also set, does not reach the kernel on Linux.
    static let listenerThreadName = "fc.listener"

    func startListening() {
        let thread = Thread { [self] in
            nameCurrentThread(Self.listenerThreadName)
            listen()
        }
        thread.name = "FileCoordination.listener"
        thread.start()
    }

    /// Wakes the listener from `poll`, to look again at what it waits for (what it must read changed; a lease was
    /// granted: it sweeps for idle ones from now on).
    func wakeListener() {
        _ = try? wakeSender.sendSome([1])  // Non-blocking: when bytes are already waiting, one more is not needed.
    }

    /// The listener: while frames may come unasked, reads what arrives when no caller holds the role, else watches
    /// for the connection's end; ends when the connection does. While this client holds leases of its daemon it also wakes every
    /// ``TransportDelegate/leaseSweepInterval(of:)`` to have the idle ones returned.
    func listen() {
        let drain = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { drain.deallocate() }
        var sweepAt: ContinuousClock.Instant?
        // What to poll for, when the release of the role just read it (one lock for both).
        var known: (Bool, Bool, ContinuousClock.Instant?)?
        while true {
            let (readsData, closed, unattendedSince) =
                known ?? reading.withLock { ($0.unaskedExpected, $0.closed, $0.unattendedSince) }
            known = nil
            if closed { return }
            let watching = keepalive.enabled ? unattendedSince : nil
            var timeout = watching.map { _ in keepalive.policy.checkEvery }
            if let every = delegate?.leaseSweepInterval(of: self) {
                let due = sweepAt ?? .now + every
                sweepAt = due
                // Rounded up to the next millisecond: `poll` rounds down, and would spin until the time comes.
                let left = max(due - .now, .zero) + .milliseconds(1)
                timeout = min(timeout ?? left, left)
            } else {
                sweepAt = nil
            }
            let events: [UnixSocket.PollEvents]
            do {
                events = try UnixSocket.poll(
                    [(socket, readsData ? .readable : []), (wakeReceiver, .readable)],
                    timeout: timeout
                )
            } catch {
                connectionLost("waiting for filecoordd failed: \(error)")
                return
            }
            if !events[1].isEmpty { _ = try? wakeReceiver.receiveAvailable(into: drain) }
            if let due = sweepAt, ContinuousClock.now >= due {
                sweepAt = nil
                delegate?.returnIdleLeases(through: self)
            }
            if events[0].isEmpty {
                if let watching { checkKeepalive(waitingSince: watching) }
                continue
            }
            let reads = reading.withLock { state -> Bool in
                if !state.readerBusy {
                    state.readerBusy = true
                    return true
                }
                state.listenerParked = true
                return false
            }
            guard reads else {
                // A caller holds the role and reads what came; look again soon, unless the connection ends first.
                _ = listenerWakeUp.wait(timeout: .now() + Self.listenerBackoff)
                reading.withLock { $0.listenerParked = false }
                continue
            }
            let frames = readFrames(blocking: false) { false }
            ReaderDiagnostics.listenerFrames.add(frames, ordering: .relaxed)
            let next: Wake
            (next, known) = reading.withLock { state in
                state.readerBusy = false
                return (Self.nextReader(&state), (state.unaskedExpected, state.closed, state.unattendedSince))
            }
            next.wake()
        }
    }

    /// A claim was granted or failed: if no caller waited for it, the listener may stop reading for it.
    func claimEnded(_ claim: ClaimID) {
        // An unattended claim is inserted before its frame goes, so its reply finds the count raised.
        guard unattendedCount.load(ordering: .acquiring) > 0,
            reading.withLock({ $0.unattendedClaims.contains(claim) })
        else { return }
        updateReading { $0.unattendedClaims.remove(claim) }
    }

    func connectionLost(_ reason: String) {
        guard !lost.exchange(true, ordering: .acquiringAndReleasing) else { return }
        socket.shutdown()
        // Every parked caller and the listener look again: the delegate fails the callers' claims.
        let woken = reading.withLock { state -> ([ClaimWaiter], Bool) in
            state.closed = true
            defer {
                state.parked = []
                state.listenerParked = false
            }
            return (state.parked, state.listenerParked)
        }
        let error = FileCoordinationError(
            .connectionLost,
            "The connection to filecoordd was lost (\(reason)); the call failed instead of waiting. The next call reconnects."
        )
        delegate?.transportLost(error, from: self)
        // The delegate failed every claim of the connection in use; a caller of another one fails here, never hangs.
        let late = reading.withLock { state -> [ClaimWaiter] in
            state.lostError = error
            defer { state.parked = [] }
            return state.parked
        }
        for waiter in woken.0 + late {
            waiter.resume(.failed(error))
            waiter.nudge()
        }
        if woken.1 { listenerWakeUp.signal() }
    }
}
