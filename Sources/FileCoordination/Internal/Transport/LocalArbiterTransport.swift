import Dispatch
import FCCore
import FCProtocol
import FCToolkit
import Foundation
import Logging
import Synchronization

/// The arbiter in this process: an `FCCore.Arbiter` behind a lock (docs/SEMANTICS.md §9).
///
/// Effects leave the lock in order: they are queued on one serial delivery queue while the lock is still held, so
/// two events handled on two threads deliver their effects in the order the arbiter produced them. On that queue
/// they become ``InboundMessage``s (failures mapped by ``ClaimFailureMapping``) for the delegate of the client they
/// are addressed to. Timers run on a global queue and come back as events.
///
/// Usually one client is attached (``attach(_:as:)``): the process's, coordinating in process. A test may attach
/// several clients with distinct ids to one arbiter, to see them coordinate with each other (docs/ARCHITECTURE.md
/// §8).
///
/// - Important: Thread-safe. `state` guards the arbiter, the timers, the clients and the retirement; it is never
///   held while user code or a delegate runs.
// @unchecked: `state` (an `Arbiter`, its timers' work items: not `Sendable`) is reached only under its lock.
final class LocalArbiterTransport: ArbiterTransport, @unchecked Sendable {
    /// A client's delegate, not kept alive by the arbiter.
    private struct Attached {
        weak var delegate: (any TransportDelegate)?
    }
    private struct State {
        let arbiter: Arbiter
        var timers: [TimerID: DispatchWorkItem] = [:]
        var clients: [ClientID: Attached] = [:]
        /// Where a claim goes once this arbiter is retired (``retireIfIdle(reroute:)``): back to the client, which
        /// sends it to the daemon now in charge.
        var reroute: (@Sendable (ClaimRequest, ClaimWaiter) -> Void)?
    }
    private let state: Locked<State>
    /// The origin of the times given to the arbiter (for the wait times in deadlock reports).
    private let origin: ContinuousClock.Instant
    private let delivery = SerialWorker(name: "FileCoordination.delivery")
    private let logger: @Sendable (LogRecord) -> Void

    init(configuration: ArbiterConfiguration, logger: @escaping @Sendable (LogRecord) -> Void) {
        self.state = Locked(State(arbiter: Arbiter(configuration: configuration)))
        self.origin = .now
        self.logger = logger
    }

    /// An arbiter with the default configuration that logs its records through `logger` (read at each record).
    convenience init(logger: @escaping @Sendable () -> Logger = { FileCoordinationLogging.logger }) {
        self.init(configuration: ArbiterConfiguration()) { logger().log($0) }
    }

    /// Connects the client `client`, whose grants, failures and presenter messages go to `delegate` from now on.
    func attach(_ delegate: any TransportDelegate, as client: ClientID) {
        state.withLock { $0.clients[client] = Attached(delegate: delegate) }
        let info = ProcessInfo.processInfo
        submit(.clientConnected(ClientInfo(id: client, pid: info.processIdentifier, name: info.processName)))
    }

    /// The delegate of the client an effect is addressed to.
    private func delegate(of effect: ArbiterEffect) -> (any TransportDelegate)? {
        let client: ClientID
        switch effect {
        case .grant(_, let to, _), .fail(_, let to, _): client = to
        case .message(let message): client = message.client
        case .startTimer, .cancelTimer, .log, .watch, .unwatch, .watchUnavailable, .fileWithOtherNamesWritten:
            return nil
        case .grantLease, .recallLease, .leaseDropped, .claimInsideLease: return nil  // It grants no leases.
        }
        return state.withLock { $0.clients[client]?.delegate }
    }

    func submitClaim(_ request: ClaimRequest, waiter: ClaimWaiter) {
        let reroute = state.withLock { state -> (@Sendable (ClaimRequest, ClaimWaiter) -> Void)? in
            if let reroute = state.reroute { return reroute }
            handle(.claimRequested(request), in: &state)
            return nil
        }
        // Retired: no new claim may be arbitrated here while other processes coordinate through the daemon.
        reroute?(request, waiter)
    }

    func send(_ message: ClientMessage) {
        guard let event = message.eventInProcess else { return }  // A lease's return: it grants none.
        submit(event)
    }

    /// Hands `event` to the arbiter.
    private func submit(_ event: ArbiterEvent) {
        state.withLock { handle(event, in: &$0) }
    }

    /// Under the lock: hands `event` to the arbiter, runs its timer effects and queues the client's in order.
    private func handle(_ event: ArbiterEvent, in state: inout State) {
        let effects = state.arbiter.handle(event, at: .now - origin)
        var forClients: [ArbiterEffect] = []
        for effect in effects {
            switch effect {
            case .startTimer(let id, let after):
                let item = DispatchWorkItem { [weak self] in self?.submit(.timerFired(id)) }
                state.timers[id]?.cancel()
                state.timers[id] = item
                DispatchQueue.global().asyncAfter(deadline: .now() + after.timeInterval, execute: item)
            case .cancelTimer(let id):
                state.timers.removeValue(forKey: id)?.cancel()
            case .log(let record):
                logger(record)
            case .grant, .fail, .message:
                forClients.append(effect)
            case .watch, .unwatch, .watchUnavailable, .fileWithOtherNamesWritten:
                break  // Only the daemon watches (ArbiterConfiguration.watchesFileSystem).
            case .grantLease, .recallLease, .leaseDropped, .claimInsideLease:
                break  // Only the daemon grants leases (ArbiterConfiguration.leases).
            }
        }
        if case .timerFired(let id) = event { state.timers[id] = nil }
        if !forClients.isEmpty {
            let out = forClients
            delivery.async { [self] in
                for effect in out {
                    guard let delegate = delegate(of: effect) else { continue }
                    let message = ClaimFailureMapping.inbound(effect) { delegate.takePresenterError(of: $0) }
                    if let message { delegate.receive(message) }
                }
            }
        }
    }

    /// Stops arbitrating new claims if none is live here, handing each later claim to `reroute` instead; returns
    /// whether it did. Events of claims already here would still be handled, but there are none: the check and the
    /// switch are one step under the lock, so no claim can be granted here after a daemon took over.
    func retireIfIdle(reroute: @escaping @Sendable (ClaimRequest, ClaimWaiter) -> Void) -> Bool {
        state.withLock { state in
            guard state.arbiter.snapshot().claims.isEmpty else { return false }
            state.reroute = reroute
            return true
        }
    }

    /// A picture of the arbiter's state, for tests.
    func snapshot() -> ArbiterSnapshot {
        state.withLock { $0.arbiter.snapshot() }
    }
}
