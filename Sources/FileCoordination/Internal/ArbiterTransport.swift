import Dispatch
import FCCore
import Foundation
import Synchronization

/// Where this process's claims and presenters are arbitrated: the in-process arbiter now, the daemon's connection
/// later (issue #4). A transport feeds events to an arbiter and hands the effects addressed to this process back to
/// ``CoordinationClient/perform(_:)``, in the order the arbiter emitted them.
///
/// - Important: `submit(_:)` may be called from any thread, including from inside `perform(_:)`.
protocol ArbiterTransport: AnyObject, Sendable {
    func submit(_ event: ArbiterEvent)
    /// Sends a claim whose outcome `waiter` waits for (a transport may let a blocked caller read its own reply).
    func submitClaim(_ request: ClaimRequest, waiter: ClaimWaiter)
}

extension ArbiterTransport {
    func submitClaim(_ request: ClaimRequest, waiter: ClaimWaiter) {
        submit(.claimRequested(request))
    }
}

/// The arbiter in this process: an `FCCore.Arbiter` behind a lock (SEMANTICS.md §9).
///
/// Effects leave the lock in order: they are queued on one serial delivery queue while the lock is still held, so
/// two events handled on two threads deliver their effects in the order the arbiter produced them. Timers run on a
/// global queue and come back as events.
///
/// - Important: Thread-safe. The lock protects `arbiter` and `timers`; it is never held while user code runs.
final class LocalArbiterTransport: ArbiterTransport, @unchecked Sendable {
    private let lock = NSLock()
    private let arbiter: Arbiter
    /// The origin of the times given to the arbiter (for the wait times in deadlock reports).
    private let origin: ContinuousClock.Instant
    private var timers: [TimerID: DispatchWorkItem] = [:]
    private let delivery = SerialWorker(name: "FileCoordination.delivery")
    private let sink: @Sendable ([ArbiterEffect]) -> Void
    private let logger: @Sendable (LogRecord) -> Void
    /// Where a claim goes once this arbiter is retired (``retireIfIdle(reroute:)``): back to the client, which
    /// sends it to the daemon now in charge.
    private var reroute: (@Sendable (ArbiterEvent) -> Void)?

    init(
        configuration: ArbiterConfiguration,
        logger: @escaping @Sendable (LogRecord) -> Void,
        sink: @escaping @Sendable ([ArbiterEffect]) -> Void
    ) {
        self.arbiter = Arbiter(configuration: configuration)
        self.origin = .now
        self.sink = sink
        self.logger = logger
    }

    func submit(_ event: ArbiterEvent) {
        lock.lock()
        if case .claimRequested = event, let reroute {
            // Retired: no new claim may be arbitrated here while other processes coordinate through the daemon.
            lock.unlock()
            reroute(event)
            return
        }
        defer { lock.unlock() }
        let effects = arbiter.handle(event, at: .now - origin)
        var forClients: [ArbiterEffect] = []
        for effect in effects {
            switch effect {
            case .startTimer(let id, let after):
                let item = DispatchWorkItem { [weak self] in self?.submit(.timerFired(id)) }
                timers[id]?.cancel()
                timers[id] = item
                DispatchQueue.global().asyncAfter(deadline: .now() + after.timeInterval, execute: item)
            case .cancelTimer(let id):
                timers.removeValue(forKey: id)?.cancel()
            case .log(let record):
                logger(record)
            case .grant, .fail, .message:
                forClients.append(effect)
            case .watch, .unwatch, .watchUnavailable:
                break  // Only the daemon watches (ArbiterConfiguration.watchesFileSystem).
            }
        }
        if case .timerFired(let id) = event { timers[id] = nil }
        if !forClients.isEmpty {
            let sink = self.sink
            let out = forClients
            delivery.async { sink(out) }
        }
    }

    /// Stops arbitrating new claims if none is live here, handing each later claim to `reroute` instead; returns
    /// whether it did. Events of claims already here would still be handled, but there are none: the check and the
    /// switch are one step under the lock, so no claim can be granted here after a daemon took over.
    func retireIfIdle(reroute: @escaping @Sendable (ArbiterEvent) -> Void) -> Bool {
        lock.withLock {
            guard arbiter.snapshot().claims.isEmpty else { return false }
            self.reroute = reroute
            return true
        }
    }

    /// A picture of the arbiter's state, for tests.
    func snapshot() -> ArbiterSnapshot {
        lock.withLock { arbiter.snapshot() }
    }
}

extension Duration {
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
