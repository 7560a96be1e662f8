import Dispatch
import FCCore

/// An `FCCore.Arbiter` run in this process, with its timers: the one place the client runs an arbiter, for the
/// in-process transport (``LocalArbiterTransport``) and for each lease (``LeaseTable``) alike (issue 38).
///
/// ``handle(_:fire:log:)`` gives the arbiter an event at the time since this arbiter was made, carries out its timer
/// and log effects, and returns what is for a client (``ClientEffect``): grants, failures, presenter messages. The
/// daemon's own effects (watches, leases, linked files) cannot arise, since neither owner configures the arbiter to
/// watch or lease, and are dropped.
///
/// - Important: Not thread-safe: its owner keeps it under its own lock and calls it only there. A timer fires on a
///   global queue and calls the `fire` closure given when it was started, which must take that lock and hand
///   `.timerFired` back through ``handle(_:fire:log:)``.
// @unchecked: the timers' work items (not `Sendable`) are reached only under the owner's lock.
struct InProcessArbiter: @unchecked Sendable {
    /// What the arbiter decided for a client.
    enum ClientEffect {
        case grant(ClaimID, client: ClientID, paths: [ItemPath])
        case fail(ClaimID, client: ClientID, ClaimFailure)
        case message(PresenterMessage)

        /// The client it is for.
        var client: ClientID {
            switch self {
            case .grant(_, let client, _), .fail(_, let client, _): client
            case .message(let message): message.client
            }
        }

        /// The client's message for it, a failure mapped to the caller's error (``ClaimFailureMapping``).
        func inbound(originalError: (PresenterID) -> (any Error)?) -> InboundMessage {
            switch self {
            case .grant(let claim, _, let paths):
                .granted(claim, paths: paths)
            case .fail(let claim, _, let failure):
                .failed(claim, ClaimFailureMapping.error(for: ClaimFailedReason(failure), originalError: originalError))
            case .message(let message):
                .presenter(message)
            }
        }
    }

    let arbiter: Arbiter
    private var timers: [TimerID: DispatchWorkItem] = [:]
    /// The origin of the times given to the arbiter (for the wait times in deadlock reports).
    private let origin: ContinuousClock.Instant = .now

    init(configuration: ArbiterConfiguration) {
        precondition(
            !configuration.watchesFileSystem && configuration.leases == nil,
            "an arbiter in process watches nothing and grants no lease (only the daemon does)"
        )
        arbiter = Arbiter(configuration: configuration)
    }

    /// Hands `event` to the arbiter; starts and cancels its timers (each firing calls `fire` on a global queue) and
    /// logs its records through `log`, in order; returns the effects for clients, in the arbiter's order.
    mutating func handle(
        _ event: ArbiterEvent,
        fire: @escaping @Sendable (TimerID) -> Void,
        log: (LogRecord) -> Void
    ) -> [ClientEffect] {
        if case .timerFired(let id) = event { timers[id] = nil }
        var forClients: [ClientEffect] = []
        for effect in arbiter.handle(event, at: .now - origin) {
            switch effect {
            case .grant(let claim, let client, let paths):
                forClients.append(.grant(claim, client: client, paths: paths))
            case .fail(let claim, let client, let failure): forClients.append(.fail(claim, client: client, failure))
            case .message(let message): forClients.append(.message(message))
            case .startTimer(let id, let after):
                let item = DispatchWorkItem { fire(id) }
                timers[id]?.cancel()
                timers[id] = item
                DispatchQueue.global().asyncAfter(deadline: .now() + after.timeInterval, execute: item)
            case .cancelTimer(let id):
                timers.removeValue(forKey: id)?.cancel()
            case .log(let record):
                log(record)
            case .watch, .unwatch, .watchUnavailable, .watchAvailable, .fileWithOtherNamesWritten, .grantLease,
                .recallLease,
                .leaseDropped, .claimInsideLease, .hostGateWanted, .hostGateDrained, .drainWatcher:
                break  // Only the daemon watches, grants leases and shares folders (see the type's comment).
            }
        }
        return forClients
    }

    /// Whether a timer `id` is pending: a timer that fired after it was cancelled (the work item's cancel lost the
    /// race with its start) finds itself gone and is dropped by the owner.
    func isPending(_ id: TimerID) -> Bool { timers[id] != nil }

    /// Cancels every timer (the arbiter is being dropped).
    mutating func cancelTimers() {
        for timer in timers.values { timer.cancel() }
        timers = [:]
    }
}
