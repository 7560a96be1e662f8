import Dispatch
import FCCore
import FCProtocol
import FCToolkit
import Foundation
import Logging
import Synchronization

/// The arbiter in this process: an ``InProcessArbiter`` behind a lock (docs/SEMANTICS.md §9).
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
/// - Important: Thread-safe. `state` guards the arbiter, its timers, the clients and the retirement; it is never
///   held while user code or a delegate runs.
// @unchecked: `state` (an `Arbiter`, not `Sendable`) is reached only under its lock.
final class LocalArbiterTransport: ArbiterTransport, @unchecked Sendable {
    /// A client's delegate, not kept alive by the arbiter.
    private struct Attached {
        weak var delegate: (any TransportDelegate)?
    }
    private struct State {
        var arbiter: InProcessArbiter
        var clients: [ClientID: Attached] = [:]
        /// Where a claim goes once this arbiter is retired (``retireIfIdle(reroute:)``): back to the client, which
        /// sends it to the daemon now in charge.
        var reroute: (@Sendable (ClaimRequest, ClaimWaiter) -> ClaimWait)?
    }
    private let state: Locked<State>
    private let delivery = SerialWorker(name: "FileCoordination.delivery", kernelName: "fc.delivery")
    private let logger: @Sendable (LogRecord) -> Void

    init(configuration: ArbiterConfiguration, logger: @escaping @Sendable (LogRecord) -> Void) {
        self.state = Locked(State(arbiter: InProcessArbiter(configuration: configuration)))
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

    @discardableResult
    func submitClaim(_ request: ClaimRequest, waiter: ClaimWaiter) -> ClaimWait {
        let reroute = state.withLock { state -> (@Sendable (ClaimRequest, ClaimWaiter) -> ClaimWait)? in
            if let reroute = state.reroute { return reroute }
            handle(.claimRequested(request), in: &state)
            return nil
        }
        // Retired: no new claim may be arbitrated here while other processes coordinate through the daemon.
        return reroute?(request, waiter) ?? .onWaiter
    }

    func send(_ message: ClientMessage) {
        guard let event = message.eventInProcess else { return }  // A lease's return: it grants none.
        submit(event)
    }

    /// Hands `event` to the arbiter.
    private func submit(_ event: ArbiterEvent) {
        state.withLock { handle(event, in: &$0) }
    }

    /// A timer of the arbiter fired: handed back to it unless it was cancelled meanwhile.
    private func timerFired(_ id: TimerID) {
        state.withLock { state in
            guard state.arbiter.isPending(id) else { return }
            handle(.timerFired(id), in: &state)
        }
    }

    /// Under the lock: hands `event` to the arbiter and queues its effects for clients, in order, each with the
    /// delegate of its client as attached now.
    private func handle(_ event: ArbiterEvent, in state: inout State) {
        let effects = state.arbiter.handle(event, fire: { [weak self] in self?.timerFired($0) }, log: logger)
        guard !effects.isEmpty else { return }
        let out = effects.map { (effect: $0, delegate: state.clients[$0.client]?.delegate) }
        delivery.async {
            for (effect, delegate) in out {
                guard let delegate else { continue }
                delegate.receive(effect.inbound { delegate.takePresenterError(of: $0) })
            }
        }
    }

    /// Stops arbitrating new claims if none is live here, handing each later claim to `reroute` instead; returns
    /// whether it did. Events of claims already here would still be handled, but there are none: the check and the
    /// switch are one step under the lock, so no claim can be granted here after a daemon took over.
    func retireIfIdle(reroute: @escaping @Sendable (ClaimRequest, ClaimWaiter) -> ClaimWait) -> Bool {
        state.withLock { state in
            guard state.arbiter.arbiter.snapshot().claims.isEmpty else { return false }
            state.reroute = reroute
            return true
        }
    }

    /// A picture of the arbiter's state, for tests.
    func snapshot() -> ArbiterSnapshot {
        state.withLock { $0.arbiter.arbiter.snapshot() }
    }
}
