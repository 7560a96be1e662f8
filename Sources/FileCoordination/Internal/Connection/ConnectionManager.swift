import FCCore
import FCSystem
import FCToolkit
import Foundation
import Logging
import Synchronization

/// What a ``ConnectionManager`` needs of the client it connects.
///
/// - Important: Called from the manager's callers' threads and from its probe and reconnect threads.
protocol ConnectionOwner: TransportDelegate {
    /// `transport` is put in charge: the owner calls `install` (which makes it the manager's current transport)
    /// where it must, so that each of its presenters is registered exactly once (here, or by the call that adds it),
    /// then registers its presenters with it and declares again the claims whose accessors still run.
    func connected(to transport: any ArbiterTransport, install: () -> Void)
    /// Whether the client needs a connection without a call asking for one: it has presenters (they must hear what
    /// other processes do) or claims held (a new daemon must know of them).
    var needsConnection: Bool { get }
    /// Sends a claim through whichever transport is in charge now (a retired in-process arbiter's claims); returns
    /// how its blocked caller waits.
    @discardableResult
    func submitClaim(_ request: ClaimRequest, waiter: ClaimWaiter) -> ClaimWait
}

/// Chooses, makes and keeps a client's transport: the daemon's connection (started, retried, reconnected after a
/// loss), the in-process arbiter by choice, or the in-process fallback while no daemon can be had, left for a daemon
/// as soon as one answers (docs/SEMANTICS.md §7 and §9; ``ConnectionPolicy``).
///
/// - Important: Thread-safe. `connecting` serialises connecting (one thread connects or starts the daemon while the
///   others wait for it; it may be held for the policy's connect deadline); `state` guards the rest and is never
///   held while a transport or the owner is called. The probe and reconnect threads are the manager's own, at
///   most one of each, and end when their job is done.
// @unchecked: `owner` is set once, before the manager is shared; the rest is `let`s and `Locked` state.
final class ConnectionManager: @unchecked Sendable {
    /// How the daemon is reached.
    let policy: ConnectionPolicy
    let clientID: ClientID
    private let logger: @Sendable () -> Logger
    /// The client this manager connects. Set once, right after both are made, before either is shared.
    weak var owner: (any ConnectionOwner)?

    private struct State {
        var transport: (any ArbiterTransport)?
        /// Set while the client coordinates in process: by choice, or because no daemon answers and none can be
        /// started (then ``fallbackReason`` says why, and a probe thread moves the client to a daemon once one
        /// answers).
        var local: LocalArbiterTransport?
        /// Why the client coordinates in process although it did not choose to; `nil` otherwise.
        var fallbackReason: String?
        /// A thread is probing for a daemon to leave the in-process fallback (at most one).
        var probing = false
        /// A thread is reconnecting for the presenters after the connection was lost (at most one).
        var reconnecting = false
    }
    private let state = Locked(State())
    private let connecting = Locked(())
    /// Whether this client has seen a daemon (then it never falls back to in process).
    private let sawDaemon = DaemonSighting()

    /// A manager for the client `clientID` under `policy`, logging through `logger` (read at each use, so that the
    /// app may set ``FileCoordinationLogging/logger`` late).
    init(policy: ConnectionPolicy, clientID: ClientID, logger: @escaping @Sendable () -> Logger) {
        self.policy = policy
        self.clientID = clientID
        self.logger = logger
    }

    /// The transport in charge now, if any (no connecting).
    var current: (any ArbiterTransport)? { state.withLock { $0.transport } }

    /// The in-process arbiter's state, for tests (`nil` when a daemon arbitrates).
    func snapshot() -> ArbiterSnapshot? { state.withLock { $0.local }?.snapshot() }

    /// The in-process arbiter for the owner: the one the policy names (shared with other clients), or a new one.
    private func makeLocal(owner: any ConnectionOwner) -> LocalArbiterTransport {
        let local = policy.sharedInProcessArbiter ?? LocalArbiterTransport(logger: logger)
        local.attach(owner, as: clientID)
        return local
    }

    /// The transport to use now: the live connection; or a new one (the daemon started if needed, the owner's
    /// presenters registered again), tried again after failures that may pass until the connect deadline; or the
    /// in-process arbiter, by choice or when no daemon answers and none can be started (``ConnectionPolicy``).
    /// With `retrying` false, one attempt only (a presenter's registration must not block its caller: it is kept,
    /// and registered by the reconnecting thread).
    func transport(retrying: Bool = true) -> Result<any ArbiterTransport, FileCoordinationError> {
        // A child that fork() made: its parent's connection is not its own, and it may make none (CoordinationClient).
        if ForkWatch.isForkedChild { return .failure(CoordinationClient.forkedChildError) }
        if let transport = current { return .success(transport) }
        return connecting.withLock {
            if let transport = current { return .success(transport) }
            guard let owner else {
                return .failure(FileCoordinationError(.connectionLost, "The file coordination client is gone."))
            }
            if policy.inProcessByChoice {
                let local = makeLocal(owner: owner)
                state.withLock { $0.local = local }
                put(local, inChargeFor: owner)
                return .success(local)
            }
            let chosen: any ArbiterTransport
            var policy = self.policy
            if !retrying { policy.connectDeadline = .zero }
            switch DaemonConnector.connect(
                policy: policy,
                client: clientID,
                delegate: owner,
                sawDaemon: sawDaemon,
                logger: logger
            ) {
            case .success(let daemon):
                chosen = daemon
            case .failure(.noDaemon(let reason)):
                logger().warning(
                    """
                    coordinating in this process only: \(reason) Accesses are coordinated with this process's own \
                    presenters and calls, not with other processes; the process moves to filecoordd as soon as one \
                    answers.
                    """
                )
                let local = makeLocal(owner: owner)
                state.withLock {
                    $0.local = local
                    $0.fallbackReason = reason
                }
                chosen = local
                startProbing()
            case .failure(let failure):
                let error = failure.error
                logger().error("no arbiter: \(error.message)")
                if owner.needsConnection { startReconnecting() }
                return .failure(error)
            }
            put(chosen, inChargeFor: owner)
            return .success(chosen)
        }
    }

    /// Makes `chosen` the transport and lets the owner register on it.
    private func put(_ chosen: any ArbiterTransport, inChargeFor owner: any ConnectionOwner) {
        owner.connected(to: chosen) { state.withLock { $0.transport = chosen } }
    }

    /// `lost` is gone. Returns `true` if it was the transport in charge (then the next call reconnects), `false`
    /// for a probe's connection that was never put in charge.
    func lose(_ lost: DaemonTransport) -> Bool {
        state.withLock { state in
            guard let current = state.transport, current === lost else { return false }
            state.transport = nil
            return true
        }
    }

    /// While the client coordinates in process for want of a daemon, looks for one (a daemon another process
    /// started, or an executable that appeared) with a backoff from 0.2 s to 5 s, and moves there once the
    /// in-process arbiter holds no claim: from then on every claim goes to the daemon, and the presenters are
    /// registered there.
    private func startProbing() {
        guard
            state.withLock({ state -> Bool in
                defer { state.probing = true }
                return !state.probing
            })
        else { return }
        let thread = Thread { [self] in
            nameCurrentThread("fc.probe")
            var delay = 0.2
            while state.withLock({ $0.fallbackReason != nil }), let owner {
                Thread.sleep(forTimeInterval: delay)
                delay = min(delay * 2, 5)
                guard
                    case .success(let daemon) = DaemonTransport.connect(
                        policy: policy,
                        mayStart: true,
                        client: clientID,
                        delegate: owner,
                        logger: logger
                    )
                else { continue }
                // Wait for the in-process arbiter to be idle, as long as the new connection lasts.
                while !daemon.isLost {
                    if moveToDaemon(daemon, owner: owner) {
                        state.withLock { $0.probing = false }
                        return
                    }
                    Thread.sleep(forTimeInterval: 0.05)
                }
            }
            state.withLock { $0.probing = false }
        }
        thread.name = "FileCoordination.probe"
        thread.start()
    }

    /// Leaves the in-process fallback for `daemon` if the in-process arbiter holds no claim.
    private func moveToDaemon(_ daemon: DaemonTransport, owner: any ConnectionOwner) -> Bool {
        connecting.withLock {
            guard let local = state.withLock({ $0.fallbackReason != nil ? $0.local : nil }) else { return true }
            guard local.retireIfIdle(reroute: { [weak owner] in owner?.submitClaim($0, waiter: $1) ?? .onWaiter })
            else {
                return false
            }
            sawDaemon.record()
            state.withLock {
                $0.local = nil
                $0.fallbackReason = nil
            }
            put(daemon, inChargeFor: owner)
            logger().warning(
                "filecoordd answers now: this process coordinates through it again",
                metadata: ["daemon.pid": "\(daemon.daemonPID)"]
            )
            return true
        }
    }

    /// After the connection was lost, reconnects for the owner's presenters and held claims, trying again with a
    /// backoff up to 5 s for as long as the owner needs a connection.
    func startReconnecting() {
        guard
            state.withLock({ state -> Bool in
                defer { state.reconnecting = true }
                return !state.reconnecting
            })
        else { return }
        let thread = Thread { [self] in
            nameCurrentThread("fc.reconnect")
            var delay = 0.1
            while current == nil, owner?.needsConnection == true {
                if case .success = transport() { break }
                Thread.sleep(forTimeInterval: delay)
                delay = min(delay * 2, 5)
            }
            state.withLock { $0.reconnecting = false }
        }
        thread.name = "FileCoordination.reconnect"
        thread.start()
    }
}
