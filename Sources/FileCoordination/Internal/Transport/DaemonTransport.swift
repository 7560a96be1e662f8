import FCCore
import FCProtocol
import FCSystem
import Foundation
import Logging
import Synchronization
import SystemPackage

/// The connection to `filecoordd`: events go out as frames, frames come back as ``InboundMessage``s
/// (docs/ARCHITECTURE.md §8.1 and §9).
///
/// A blocking socket. The handshake happens in ``connect(socketPath:client:delegate:mayStart:handshakeTimeout:)``;
/// from then on `submit(_:)` writes frames from any thread, and whoever holds the *reader role* reads frames and hands
/// grants, failures, presenter messages and version replies to the delegate in the order the daemon sent them
/// (docs/ARCHITECTURE.md, "The client"):
///
/// - A caller blocked in a synchronous call reads its own reply on its own thread (``awaitOutcome(of:)``): the
///   grant wakes the caller and nobody else, two wake-ups per round trip as for a bare socket. Callers take turns;
///   one whose reply another reader handled is woken by it.
/// - The *listener* thread reads when something must be read without a caller waiting for it: while presenters are
///   registered (their messages come unasked) or a claim of an `async` or intents call waits. Otherwise it only
///   watches for the connection's end (`poll` for a hang-up, which data arriving does not wake), so that a daemon
///   that dies while claims are held is noticed at once (issue 11).
///
/// When the connection drops, the delegate hears ``TransportDelegate/transportLost(_:from:)`` once; the transport is
/// not used again.
///
/// - Important: Thread-safe. `reading` guards the role; `decoder` and `buffer` belong to the role's holder.
final class DaemonTransport: ArbiterTransport, ReplyReader, @unchecked Sendable {
    private let socket: UnixSocket
    /// Serialises sends, so that frames sent from several threads never interleave.
    private let sendLock = Locked(())
    private let encoder = FrameEncoder()
    private let client: ClientID
    private weak var delegate: (any TransportDelegate)?
    private let lost = Locked(false)
    /// The daemon's pid, from its `HelloReply`.
    let daemonPID: Int32
    /// Tells a daemon that is busy for a waiting call from one that stopped answering (issue 28).
    let keepalive: KeepaliveClock

    /// Who may read, and who waits to.
    private struct ReadingState {
        /// A thread holds the reader role (it reads, or is about to).
        var readerBusy = false
        /// The listener waits for the role (it found it busy).
        var listenerParked = false
        /// Blocked callers that wait for their outcome or for the role, in arrival order.
        var parked: [ClaimWaiter] = []
        /// Presenters registered on this connection: their messages come unasked.
        var presenters: Set<PresenterID> = []
        /// Claims of calls that do not block a thread (`async`, intents): no caller reads their replies.
        var unattendedClaims: Set<ClaimID> = []
        /// Version store requests sent and not answered yet: the listener reads their replies.
        var versionRequests = 0
        /// Since when ``unattendedClaims`` is not empty: the listener then watches the daemon's silence for them.
        var unattendedSince: ContinuousClock.Instant?
        /// The connection is gone.
        var closed = false
        /// Why, once the delegate heard it.
        var lostError: FileCoordinationError?

        /// Whether the listener must read data, rather than only watch for the connection's end.
        var listenerReads: Bool { !presenters.isEmpty || !unattendedClaims.isEmpty || versionRequests > 0 }
    }
    private let reading = Locked(ReadingState())
    /// Frames received and not yet handled. Only the reader role's holder touches it.
    private var decoder: FrameDecoder
    /// The receive buffer, one for the connection's life. Only the reader role's holder touches it.
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
    /// Where the listener sleeps while the role is busy.
    private let listenerWakeUp = DispatchSemaphore(value: 0)
    /// A byte sent here wakes the listener from `poll`, to read or stop reading data.
    private let wakeSender: UnixSocket
    private let wakeReceiver: UnixSocket

    private init(
        socket: UnixSocket,
        decoder: FrameDecoder,
        wake: (UnixSocket, UnixSocket),
        client: ClientID,
        daemonPID: Int32,
        keepalive: KeepaliveClock,
        delegate: any TransportDelegate
    ) {
        self.keepalive = keepalive
        self.socket = socket
        self.decoder = decoder
        (self.wakeSender, self.wakeReceiver) = wake
        self.client = client
        self.daemonPID = daemonPID
        self.delegate = delegate
    }

    deinit {
        buffer.deallocate()
    }

    /// Why ``connect(socketPath:client:delegate:mayStart:handshakeTimeout:)`` got no connection.
    enum ConnectFailure: Error {
        /// Nothing answers and there is no daemon to start (in-process coordination may be right).
        case noDaemon(String)
        /// Worth trying again: refused, reset or closed during the handshake, no answer in time (a daemon that is
        /// starting, stopping, restarting or stopped).
        case transient(String)
        /// Trying again will not help: the daemon refused this protocol version.
        case permanent(FileCoordinationError)
    }

    /// Connects (starting the daemon if needed and `mayStart` is set), says hello within `handshakeTimeout`, and
    /// starts the listener thread. Calls that wait on the connection send a keepalive after a while, and fail when
    /// the daemon leaves it unanswered, as `keepalive` says.
    static func connect(
        socketPath: String,
        client: ClientID,
        delegate: any TransportDelegate,
        mayStart: Bool = true,
        handshakeTimeout: Duration = .seconds(2),
        keepalive: KeepalivePolicy = .standard
    ) -> Result<DaemonTransport, ConnectFailure> {
        let socket: UnixSocket
        switch DaemonLauncher.connectOrStart(socketPath: socketPath, mayStart: mayStart) {
        case .failure(.noDaemon(let message)): return .failure(.noDaemon(message))
        case .failure(.failed(let message)): return .failure(.transient(message))
        case .success(let connected): socket = connected
        }
        var hello = Filecoord_V1_Hello()
        hello.protocolVersion = ProtocolVersion.current
        hello.clientName = ProcessInfo.processInfo.processName
        hello.pid = ProcessInfo.processInfo.processIdentifier
        var decoder = FrameDecoder(accepting: .toClient)
        do {
            // A daemon that accepted but does not answer (stopped, or not a daemon at all) must not hold the call.
            try socket.setTimeouts(handshakeTimeout)
            try socket.send(try FrameEncoder().encode(Filecoord_V1_Frame(.hello(hello))))
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
            defer { buffer.deallocate() }
            while true {
                let count = try socket.receive(into: buffer)
                guard count > 0 else {
                    return .failure(
                        .transient("filecoordd at \(socketPath) closed the connection during the handshake")
                    )
                }
                decoder.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                guard let frame = try decoder.next() else { continue }
                switch frame.payload {
                case .helloReply(let reply)?:
                    try socket.setTimeouts(nil)
                    let clock = KeepaliveClock(policy: keepalive, enabled: reply.answersPing)
                    // A blocked reader wakes this often to look at the daemon's silence (sends never time out).
                    if clock.enabled { try socket.setReceiveTimeout(keepalive.checkEvery) }
                    let wake = try UnixSocket.pair()
                    try wake.0.setNonBlocking(true)
                    let transport = DaemonTransport(
                        socket: socket,
                        decoder: decoder,
                        wake: wake,
                        client: client,
                        daemonPID: reply.daemonPid,
                        keepalive: clock,
                        delegate: delegate
                    )
                    transport.startListening()
                    return .success(transport)
                case .refused(let refused)?:
                    return .failure(.permanent(FileCoordinationError(.protocolVersionMismatch, refused.reason)))
                default:
                    return .failure(
                        .transient("filecoordd at \(socketPath) answered the handshake with something else")
                    )
                }
            }
        } catch let failure as Errno where failure == .resourceTemporarilyUnavailable {
            return .failure(
                .transient(
                    "filecoordd at \(socketPath) accepted but did not answer the handshake within \(handshakeTimeout)"
                )
            )
        } catch {
            return .failure(.transient("the handshake with filecoordd at \(socketPath) failed: \(error)"))
        }
    }

    func submit(_ event: ArbiterEvent) {
        switch event {
        case .presenterAdded(let registration):
            // Before the frame goes: the presenter's first message may come at once.
            updateReading { $0.presenters.insert(registration.id) }
        case .presenterRemoved(let presenter):
            updateReading { $0.presenters.remove(presenter) }
        default:
            break
        }
        send(event)
    }

    /// Sends a claim whose outcome `waiter` waits for: a blocked caller will read the reply itself; for any other
    /// the listener reads until the claim ends.
    func submitClaim(_ request: ClaimRequest, waiter: ClaimWaiter) {
        if waiter.blocksThread {
            waiter.readsReplies(from: self)
        } else {
            updateReading { $0.unattendedClaims.insert(request.id) }
        }
        send(.claimRequested(request))
        // A claim sent on a connection already lost fails here, whoever waits for it (never hangs).
        if let lostError = reading.withLock({ $0.lostError }) { waiter.resume(.failed(lostError)) }
    }

    private func send(_ event: ArbiterEvent) {
        guard let frame = Filecoord_V1_Frame(event) else { return }
        do {
            try sendFrame(frame)
        } catch {
            connectionLost("writing to filecoordd failed: \(error)")
        }
    }

    /// The one way a frame leaves: encoded, then written whole under `sendLock`, so that frames sent from several
    /// threads never interleave.
    private func sendFrame(_ frame: Filecoord_V1_Frame) throws {
        let bytes = try encoder.encode(frame)
        try sendLock.withLock { () throws(Errno) in try socket.send(bytes) }
    }

    /// Sends a version store request (issue 15), whose reply no caller reads itself: the listener reads until it
    /// arrives (``versionRequestEnded()``), and hands it to the delegate as ``InboundMessage/versionReply(_:)``.
    /// Throws if the connection is gone.
    func sendVersionRequest(_ frame: Filecoord_V1_Frame) throws {
        updateReading { $0.versionRequests += 1 }
        do {
            try sendFrame(frame)
        } catch {
            versionRequestEnded()
            throw error
        }
    }

    /// A version store request was answered (or could not be sent): the listener need not read for it any more.
    func versionRequestEnded() {
        updateReading { $0.versionRequests = max(0, $0.versionRequests - 1) }
    }

    /// Closes the connection; the listener ends and the delegate hears it.
    func close() {
        socket.shutdown()
    }

    // MARK: The reader role

    /// Changes what must be read; when that changes whether the listener reads data, wakes it (to poll again) and,
    /// if the role is free, whoever should take it now.
    private func updateReading(_ change: (inout ReadingState) -> Void) {
        let (changed, next) = reading.withLock { state -> (Bool, Wake) in
            let before = state.listenerReads
            let watched = state.unattendedSince != nil
            change(&state)
            if state.unattendedClaims.isEmpty {
                state.unattendedSince = nil
            } else if state.unattendedSince == nil {
                state.unattendedSince = keepalive.now
            }
            guard state.listenerReads != before else {
                // The listener polls with a timeout while unattended claims wait (the daemon's silence is watched).
                return (watched != (state.unattendedSince != nil), .nobody)
            }
            return (true, Self.nextReader(&state))
        }
        guard changed else { return }
        _ = try? wakeSender.sendSome([1])  // Non-blocking: when bytes are already waiting, one more is not needed.
        next.wake(listener: listenerWakeUp)
    }

    /// Who is woken when the role is free.
    private enum Wake {
        case nobody, listener
        case waiter(ClaimWaiter)

        func wake(listener: DispatchSemaphore) {
            switch self {
            case .nobody: break
            case .listener: listener.signal()
            case .waiter(let waiter): waiter.nudge()
            }
        }
    }

    /// With the role free (under `reading`): the listener when it must read data and waits for the role; else the
    /// first parked caller still waiting; else the listener if it waits (to watch the connection again).
    private static func nextReader(_ state: inout ReadingState) -> Wake {
        guard !state.readerBusy else { return .nobody }
        if !state.listenerReads {
            while !state.parked.isEmpty {
                let waiter = state.parked.removeFirst()
                if waiter.outcome == nil { return .waiter(waiter) }
            }
        }
        if state.listenerParked {
            state.listenerParked = false
            return .listener
        }
        return .nobody
    }

    private func releaseRole() {
        let next = reading.withLock { state -> Wake in
            state.readerBusy = false
            return Self.nextReader(&state)
        }
        next.wake(listener: listenerWakeUp)
    }

    func awaitOutcome(of waiter: ClaimWaiter) -> ClaimOutcome {
        let since = keepalive.now
        while true {
            if let outcome = waiter.outcome { return outcome }
            let (reads, lostError) = reading.withLock { state -> (Bool, FileCoordinationError?) in
                if let lostError = state.lostError { return (false, lostError) }
                if !state.readerBusy && !state.listenerReads && !state.closed {
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
                readFrames(blocking: true, waitingSince: since) { waiter.outcome != nil }
                releaseRole()
            } else {
                let woken = waiter.park(timeout: keepalive.enabled ? keepalive.policy.checkEvery : nil)
                reading.withLock { $0.parked.removeAll { $0 === waiter } }
                if !woken { checkKeepalive(waitingSince: since) }
            }
        }
    }

    /// Holding the role: handles every frame received, receiving more until `done` holds (blocking), or until
    /// nothing more is available (not blocking). At the end of the stream or on an error the connection is lost.
    /// A blocking read wakes every ``KeepalivePolicy/checkEvery`` (the socket's receive timeout) to look at the
    /// daemon's silence for a call waiting since `waitingSince`.
    private func readFrames(
        blocking: Bool,
        waitingSince: ContinuousClock.Instant? = nil,
        until done: () -> Bool
    ) {
        while true {
            do {
                while let frame = try decoder.next() { handle(frame) }
            } catch {
                connectionLost("filecoordd sent a malformed frame: \(error)")
                return
            }
            if done() { return }
            let count: Int
            do {
                count = blocking ? try socket.receive(into: buffer) : try socket.receiveAvailable(into: buffer)
            } catch {
                if error == .resourceTemporarilyUnavailable {
                    guard blocking else { return }
                    if let waitingSince {
                        checkKeepalive(waitingSince: waitingSince)
                        continue
                    }
                }
                connectionLost("the connection to filecoordd failed: \(error)")
                return
            }
            guard count > 0 else {
                connectionLost("filecoordd closed the connection")
                return
            }
            keepalive.heard()
            decoder.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    private func startListening() {
        let thread = Thread { [self] in listen() }
        thread.name = "FileCoordination.listener"
        thread.start()
    }

    /// The listener: reads while something must be read with no caller waiting, else watches for the connection's
    /// end; ends when the connection does.
    private func listen() {
        let drain = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { drain.deallocate() }
        while true {
            let (readsData, closed, unattendedSince) = reading.withLock {
                ($0.listenerReads, $0.closed, $0.unattendedSince)
            }
            if closed { return }
            let watching = keepalive.enabled ? unattendedSince : nil
            let events: [UnixSocket.PollEvents]
            do {
                events = try UnixSocket.poll(
                    [(socket, readsData ? .readable : []), (wakeReceiver, .readable)],
                    timeout: watching.map { _ in keepalive.policy.checkEvery }
                )
            } catch {
                connectionLost("waiting for filecoordd failed: \(error)")
                return
            }
            if !events[1].isEmpty { _ = try? wakeReceiver.receiveAvailable(into: drain) }
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
                listenerWakeUp.wait()
                continue
            }
            readFrames(blocking: false) { false }
            releaseRole()
        }
    }

    private func handle(_ frame: Filecoord_V1_Frame) {
        guard let delegate else { return }
        switch frame.payload {
        case .granted(let granted)?:
            let claim = ClaimID(granted.claimID)
            claimEnded(claim)
            guard let paths = try? granted.itemPaths() else { return }
            delegate.receive(.granted(claim, paths: paths))
        case .claimFailed(let failed)?:
            let claim = ClaimID(failed.claimID)
            claimEnded(claim)
            let error =
                if let reason = try? ClaimFailedReason(wire: failed) {
                    ClaimFailureMapping.error(for: reason) { delegate.takePresenterError(of: $0) }
                } else {
                    ClaimFailureMapping.error(forUnreadable: failed)
                }
            delegate.receive(.failed(claim, error))
        case .presenterMessage(let wire)?:
            guard let message = try? PresenterMessage(wire: wire, client: client) else { return }
            delegate.receive(.presenter(message))
        case .versionStoreReply(let reply)?:
            delegate.receive(.versionReply(reply))
            versionRequestEnded()
        case .pong?:
            // The keepalive's answer: counted as heard when it was received.
            break
        case .protocolError(let error)?:
            FileCoordinationLogging.logger.error("filecoordd closed the connection: \(error.reason)")
        case .watchUnavailable(let message)?:
            // Issue 13: changes made without coordination will not reach this presenter; coordination goes on.
            FileCoordinationLogging.logger.warning(
                "changes made without coordination will not reach a presenter: its directory cannot be watched",
                metadata: [
                    "presenter.id": "\(message.presenterID)",
                    "item.path": "\(String(decoding: message.directory, as: UTF8.self))",
                    "reason": "\(message.reason)",
                ]
            )
        default:
            break
        }
    }

    // MARK: Keepalive (issue 28)

    /// For a thread waiting since `waitingSince`: sends a `Ping` when the daemon has been silent for a while, or,
    /// when a `Ping` stayed unanswered for the keepalive's timeout, tells the delegate that the daemon stopped
    /// answering (it fails the waiting calls, abandoning their claims). The connection stays: claims held on it
    /// stay declared, so the daemon, if it ever answers again, grants nothing that conflicts with them.
    func checkKeepalive(waitingSince: ContinuousClock.Instant) {
        switch keepalive.check(waitingSince: waitingSince) {
        case .wait:
            return
        case .ping(let nonce):
            var ping = Filecoord_V1_Ping()
            ping.nonce = nonce
            do {
                try sendFrame(Filecoord_V1_Frame(.ping(ping)))
            } catch {
                connectionLost("writing to filecoordd failed: \(error)")
            }
        case .silent(let silence):
            let seconds = Int(silence.components.seconds)
            delegate?.daemonStoppedAnswering(
                FileCoordinationError(
                    .arbiterUnreachable,
                    "filecoordd (pid \(daemonPID)) stopped answering: nothing came from it for \(seconds) s, not even "
                        + "the answer to a keepalive (FILECOORD_KEEPALIVE_TIMEOUT, \(keepalive.policy.timeout)). Is it "
                        + "stopped (SIGSTOP, a debugger, a frozen cgroup) or hung? The call failed instead of "
                        + "waiting and its claim was given up; later calls work again once the daemon answers."
                ),
                on: self
            )
        }
    }

    /// Gives up a claim whose caller no longer waits (the daemon stopped answering): the daemon, when it reads the
    /// `FinishClaim`, cancels it if not yet granted, or ends it if it granted it meanwhile.
    func abandon(_ claim: ClaimID) {
        if reading.withLock({ $0.unattendedClaims.contains(claim) }) {
            updateReading { $0.unattendedClaims.remove(claim) }
        }
        send(.claimFinished(claim, created: []))
    }

    /// A claim was granted or failed: if no caller waited for it, the listener may stop reading for it.
    private func claimEnded(_ claim: ClaimID) {
        guard reading.withLock({ $0.unattendedClaims.contains(claim) }) else { return }
        updateReading { $0.unattendedClaims.remove(claim) }
    }

    /// `true` once the connection is gone.
    var isLost: Bool { lost.withLock { $0 } }

    private func connectionLost(_ reason: String) {
        let first = lost.withLock { lost in
            defer { lost = true }
            return !lost
        }
        guard first else { return }
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

/// Who a transport reports to: the client (``CoordinationClient``).
///
/// - Important: `receive(_:)` is called on the transport's reading thread (a blocked caller's, the listener's, or
///   the in-process arbiter's delivery queue), one message at a time, in the arbiter's order; it must not block.
protocol TransportDelegate: AnyObject, Sendable {
    /// Grants, failures (already the caller's error) and presenter messages, in order.
    func receive(_ message: InboundMessage)
    /// The error object this client's presenter `presenter` failed with, taken (once) so that a failed claim's
    /// caller gets that very object (docs/SEMANTICS.md §3).
    func takePresenterError(of presenter: PresenterID) -> (any Error)?
    /// The connection `transport` is gone: its version store calls fail; if it was the one in use, every waiting
    /// call must fail, and the next call reconnects.
    func transportLost(_ error: FileCoordinationError, from transport: DaemonTransport)
    /// The daemon of `transport` left a keepalive unanswered for its timeout (issue 28): every call waiting on it
    /// fails with `error` (claims abandoned through ``DaemonTransport/abandon(_:)``); the connection stays.
    func daemonStoppedAnswering(_ error: FileCoordinationError, on transport: DaemonTransport)
}
