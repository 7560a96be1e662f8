import FCCore
import FCProtocol
import FCSystem
import FCToolkit
import Foundation
import Logging
import Synchronization
import SystemPackage

// The connection's frames: what the client sends (``ClientMessage``s and claims, each one frame written whole) and
// what the daemon sends back, made into the client's ``InboundMessage``s; and the keepalive that tells a busy daemon
// from a silent one (issue 28).

extension DaemonTransport {
    func send(_ message: ClientMessage) {
        switch message {
        case .addPresenter(let registration):
            // Before the frame goes: the presenter's first message may come at once.
            updateReading { $0.presenters.insert(registration.id) }
        case .removePresenter(let presenter):
            updateReading { $0.presenters.remove(presenter) }
        case .preparationReturned:
            // Informational (fcdump): an older daemon of this protocol version would not know the message.
            guard daemonRevision >= ProtocolVersion.preparationReturnedRevision else { return }
        default:
            break
        }
        send(Filecoord_V1_Frame(message))
    }

    /// Sends a claim whose outcome `waiter` waits for: a blocked caller will read the reply itself, and takes the
    /// reader role before the frame goes when it is free (so that its reply cannot be read by the listener first,
    /// which would cost a thread hop); for any other the listener reads until the claim ends.
    @discardableResult
    func submitClaim(_ request: ClaimRequest, waiter: ClaimWaiter) -> ClaimWait {
        guard waiter.blocksThread else {
            updateReading { $0.unattendedClaims.insert(request.id) }
            send(Filecoord_V1_Frame(claim: request))
            // A claim sent on a connection already lost fails here, whoever waits for it (never hangs).
            if let lostError = reading.withLock({ $0.lostError }) { waiter.resume(.failed(lostError)) }
            return .onWaiter
        }
        let (holdsRole, lostError) = reading.withLock { state -> (Bool, FileCoordinationError?) in
            if let lostError = state.lostError { return (false, lostError) }
            guard !state.readerBusy, !state.closed else { return (false, nil) }
            state.readerBusy = true
            return (true, nil)
        }
        if let lostError {
            // The connection is gone and its callers were failed: this one fails the same way, never hangs.
            waiter.resume(.failed(lostError))
            return .onWaiter
        }
        send(Filecoord_V1_Frame(claim: request))
        // Lost meanwhile: a caller holding the role sees it when it reads; one that does not, here.
        if !holdsRole, let lostError = reading.withLock({ $0.lostError }) { waiter.resume(.failed(lostError)) }
        return .reading(self, holdingRole: holdsRole)
    }

    /// A claim submitted for a caller that already waits on its waiter without reading (moved from a lease by a
    /// retired in-process arbiter): the listener reads its reply, and the role the submission took is given back.
    func leaveToListener(_ claim: ClaimID, releasingRole: Bool) {
        updateReading { $0.unattendedClaims.insert(claim) }
        if releasingRole { releaseRole() }
    }

    /// Sends `frame` (made by FCProtocol's conversions, docs/PROTOCOL.md), and reports the connection lost if it
    /// cannot be written.
    fileprivate func send(_ frame: Filecoord_V1_Frame) {
        do {
            try sendFrame(frame)
        } catch {
            connectionLost("writing to filecoordd failed: \(error)")
        }
    }

    /// The one way a frame leaves: encoded, then written whole under `sendLock`, so that frames sent from several
    /// threads never interleave.
    func sendFrame(_ frame: Filecoord_V1_Frame) throws {
        let bytes = try encoder.encode(frame)
        try sendLock.withLock { () throws(Errno) in try socket.send(bytes) }
    }

    /// Writes a lease's return with the claims still running in it (issue 23). A failed write is not reported here:
    /// the caller holds the leases' lock, which the report of a lost connection takes; the listener reports the loss.
    func returnLease(_ lease: LeaseID, running: [ClaimRequest]) {
        try? sendFrame(Filecoord_V1_Frame(ClientMessage.returnLease(lease, running: running)))
    }

    /// Sends a claim whose reply the listener reads, whoever waits for it: a claim moved to the daemon from a
    /// recalled lease (issue 23), whose caller may already be waiting without reading.
    func submitClaimReadByListener(_ request: ClaimRequest, waiter: ClaimWaiter) {
        updateReading { $0.unattendedClaims.insert(request.id) }
        send(Filecoord_V1_Frame(claim: request))
        if let lostError = reading.withLock({ $0.lostError }) { waiter.resume(.failed(lostError)) }
    }

    /// Sends a version store request (issue 15), whose reply no caller reads itself: the listener reads until it
    /// arrives (``versionRequestEnded()``), and hands it to the delegate as ``InboundMessage/versionReply(_:)``.
    /// Throws if the connection is gone.
    func sendVersionRequest(_ request: VersionStoreRequest, id: UInt64) throws {
        updateReading { $0.versionRequests += 1 }
        do {
            try sendFrame(Filecoord_V1_Frame(.versionStoreRequest(request.wire(requestID: id))))
        } catch {
            versionRequestEnded()
            // The daemon is gone (a restart the listener has not read yet): the next call connects anew.
            connectionLost("writing to filecoordd failed: \(error)")
            throw error
        }
    }

    /// Sends a file progress or live query frame (issue 44), and from then on has the listener read what comes
    /// unasked for the process's publications, subscriptions and queries. Returns `false` when the daemon is too old for file progress or the
    /// frame could not be written (the loss is reported as for any frame).
    @discardableResult
    func sendProgress(_ frame: Filecoord_V1_Frame) -> Bool {
        guard daemonRevision >= ProtocolVersion.progressRevision else { return false }
        if !reading.withLock({ $0.progress }) { updateReading { $0.progress = true } }
        do {
            try sendFrame(frame)
            return true
        } catch {
            connectionLost("writing to filecoordd failed: \(error)")
            return false
        }
    }

    /// A version store request was answered (or could not be sent): the listener need not read for it any more.
    func versionRequestEnded() {
        updateReading { $0.versionRequests = max(0, $0.versionRequests - 1) }
    }

    func handle(_ frame: Filecoord_V1_Frame) {
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
                    // A kind this client does not know: the daemon's words are all there is.
                    FileCoordinationError(.invalidRequest, failed.message)
                }
            delegate.receive(.failed(claim, error))
        case .presenterMessage(let wire)?:
            guard let message = try? PresenterMessage(wire: wire, client: client) else { return }
            delegate.receive(.presenter(message))
        case .versionStoreReply(let reply)?:
            delegate.receive(.versionReply(VersionStoreReply(wire: reply)))
            versionRequestEnded()
        case .pong?:
            // The keepalive's answer: counted as heard when it was received.
            break
        case .leaseGranted(let message)?:
            guard let subtree = try? ItemPath(wire: message.subtree) else { return }
            delegate.receive(.leaseGranted(LeaseID(message.leaseID), subtree: subtree, on: self))
        case .leaseRecalled(let message)?:
            delegate.receive(.leaseRecalled(LeaseID(message.leaseID), on: self))
        case .claimInsideLease(let message)?:
            let claim = ClaimID(message.claimID)
            claimEnded(claim)
            delegate.receive(.claimInsideLease(claim, lease: LeaseID(message.leaseID), on: self))
        case .progressAppeared(let message)?:
            guard let path = try? ItemPath(wire: message.path) else { return }
            let news = ProgressNews.appeared(
                subscription: message.subscriptionID,
                publication: message.publicationID,
                path: path,
                state: ProgressSnapshot(wire: message.state)
            )
            delegate.receive(.progress(news, on: self))
        case .progressChanged(let message)?:
            let news = ProgressNews.changed(publication: message.publicationID, ProgressSnapshot(wire: message.state))
            delegate.receive(.progress(news, on: self))
        case .progressGone(let message)?:
            delegate.receive(.progress(.gone(publication: message.publicationID), on: self))
        case .progressControlRequested(let message)?:
            guard let action = ProgressAction(wire: message.action) else { return }
            delegate.receive(.progress(.control(publication: message.publicationID, action), on: self))
        case .queryItems(let message)?:
            delegate.receive(.queryItems(message, on: self))
        case .protocolError(let error)?:
            logger().error("filecoordd closed the connection: \(error.reason)")
        case .queryWatchUnavailable(let message)?:
            // Revision 9: a folder of a live query's tree is not watched; the query goes on, deaf to changes there.
            logger().warning(
                "changes in a folder will not reach a live query: the folder cannot be watched",
                metadata: [
                    "query.id": "\(message.queryID)",
                    "item.path": "\(String(decoding: message.directory, as: UTF8.self))",
                    "reason": "\(message.reason)",
                ]
            )
        case .queryWatchAvailable(let message)?:
            // Revision 11: every folder of that tree is watched again; what changed meanwhile came in its items.
            logger().notice(
                "every folder of a live query's tree is watched again: changes in them reach the query",
                metadata: [
                    "query.id": "\(message.queryID)",
                    "item.path": "\(String(decoding: message.root, as: UTF8.self))",
                ]
            )
        case .watchUnavailable(let message)?:
            // Issue 13: changes made without coordination will not reach this presenter; coordination goes on.
            logger().warning(
                "changes made without coordination will not reach a presenter: its directory cannot be watched",
                metadata: [
                    "presenter.id": "\(message.presenterID)",
                    "item.path": "\(String(decoding: message.directory, as: UTF8.self))",
                    "reason": "\(message.reason)",
                ]
            )
        case .watchAvailable(let message)?:
            // Revision 13: that directory is watched again; the presenter was told its item did change.
            logger().notice(
                "changes made without coordination reach a presenter again: its directory is watched",
                metadata: [
                    "presenter.id": "\(message.presenterID)",
                    "item.path": "\(String(decoding: message.directory, as: UTF8.self))",
                ]
            )
        default:
            break
        }
    }
}

// MARK: Keepalive (issue 28)

/// How long a waiting call lets the daemon stay silent before it asks, and how long it waits for the answer (issue
/// 28; docs/ARCHITECTURE.md §8.1, "A busy daemon or a hung one").
struct KeepalivePolicy: Sendable, Equatable {
    /// How long a `Ping` may stay unanswered before the calls waiting on the connection fail:
    /// `FILECOORD_KEEPALIVE_TIMEOUT` seconds, default 10.
    var timeout: Duration

    /// How long a call waits, with nothing heard from the daemon for as long, before a `Ping` goes: 5 s, or half the
    /// timeout when that is less.
    var interval: Duration { min(.seconds(5), timeout / 2) }

    /// How often a waiting thread looks: a quarter of the interval, at most 1 s.
    var checkEvery: Duration { min(.seconds(1), interval / 4) }

    static let standard = KeepalivePolicy(timeout: .seconds(10))

    /// The policy `environment` asks for (`FILECOORD_KEEPALIVE_TIMEOUT`, in seconds; unset, invalid or not
    /// positive: 10).
    static func fromEnvironment(_ environment: [String: String]) -> KeepalivePolicy {
        guard let seconds = environment["FILECOORD_KEEPALIVE_TIMEOUT"].flatMap(Double.init), seconds > 0,
            seconds < 1e9
        else { return .standard }
        return KeepalivePolicy(timeout: .milliseconds(Int64(seconds * 1000)))
    }
}

/// One connection's keepalive: how much it has received, and the `Ping` it waits an answer for. The reader role's
/// holder counts what it receives (``heard()``, one relaxed atomic add); the threads that wait for the daemon ask
/// ``check(waitingSince:)`` every ``KeepalivePolicy/checkEvery``, which says whether to send a `Ping` or to give up.
///
/// - Important: Thread-safe.
final class KeepaliveClock: Sendable {
    let policy: KeepalivePolicy
    /// Whether the daemon answers `Ping` (its `HelloReply.revision` is 2 or more); an older daemon is never asked.
    let enabled: Bool
    private let clock = ContinuousClock()
    private let received = Atomic<UInt64>(0)

    private struct State {
        /// ``received`` when it was last seen to change, and when.
        var lastCount: UInt64 = 0
        var lastChange: ContinuousClock.Instant
        /// The `Ping` waiting for an answer: when it went.
        var pingSentAt: ContinuousClock.Instant?
        var nonce: UInt64 = 0
    }
    private let state: Locked<State>

    init(policy: KeepalivePolicy, enabled: Bool) {
        self.policy = policy
        self.enabled = enabled
        self.state = Locked(State(lastChange: ContinuousClock.now))
    }

    var now: ContinuousClock.Instant { clock.now }

    /// Something arrived from the daemon.
    func heard() {
        received.add(1, ordering: .relaxed)
    }

    /// What a thread waiting since `waitingSince` should do now.
    enum Verdict: Equatable {
        /// Keep waiting.
        case wait
        /// Send a `Ping` with this nonce, then keep waiting.
        case ping(UInt64)
        /// Nothing came for `silence`, and a `Ping` went unanswered for the timeout: the daemon stopped answering.
        case silent(Duration)
    }

    func check(waitingSince: ContinuousClock.Instant) -> Verdict {
        guard enabled else { return .wait }
        let now = clock.now
        let count = received.load(ordering: .relaxed)
        return state.withLock { state in
            if count != state.lastCount {
                state.lastCount = count
                state.lastChange = now
                state.pingSentAt = nil
            }
            // One Ping at a time, whoever sent it: a daemon silent for its whole timeout fails every waiting call
            // (also one that began waiting meanwhile: the daemon has been silent for longer than that call).
            if let sent = state.pingSentAt {
                guard now - sent >= policy.timeout else { return .wait }
                // Given up: a call made after this waits its own interval and timeout again.
                state.pingSentAt = nil
                return .silent(now - state.lastChange)
            }
            guard now - waitingSince >= policy.interval, now - state.lastChange >= policy.interval else {
                return .wait
            }
            state.pingSentAt = now
            state.nonce &+= 1
            return .ping(state.nonce)
        }
    }
}

extension DaemonTransport {
    /// Tells the daemon that this process has declared, on this connection, everything it held on an earlier one
    /// (a `Ping` with `held_declared`; its `Pong` counts as any other frame heard).
    func sayHeldDeclared() {
        var ping = Filecoord_V1_Ping()
        ping.heldDeclared = true
        do {
            try sendFrame(Filecoord_V1_Frame(.ping(ping)))
        } catch {
            connectionLost("writing to filecoordd failed: \(error)")
        }
    }

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
        send(.finishClaim(claim, created: []))
    }
}
