import FCCore
import FCSystem
import Logging
import NIOCore
import SystemPackage

/// The recovery grace after a crash of the previous daemon (docs/PROTOCOL.md "A daemon that restarts"): for the
/// grace, only claims still held (`RequestClaim.held`) and leases given back are taken; every other event is held
/// back, in order, and handed back when the grace ends, after the marker that started it is removed.
///
/// - Important: Everything runs on the arbiter's event loop, ``loop`` (``start(for:because:marker:then:)`` asserts
///   it); not `Sendable`.
final class RecoveryGate {
    let loop: any EventLoop
    let logger: Logger
    /// Whether the grace runs.
    private(set) var isRecovering = false
    /// Events held back while the daemon recovers, in order, and about how many bytes each client's take
    /// (``estimatedBytes(of:)``).
    private var heldBack: [(ClientID, ArbiterEvent)] = []
    private var heldBytes: [ClientID: (bytes: Int, events: Int)] = [:]
    /// Clients whose connection ended during the grace (``forget(_:)``), and how many of their events are still in
    /// ``heldBack``: removed once they are half of it (a removal per connection ended would cost O(events) each).
    private var forgotten: Set<ClientID> = []
    private var forgottenEvents = 0
    /// The most bytes of one client's events held back (``heldBackBytes(of:)``): a client past it sends without end,
    /// and the host closes its connection (until stop 70 the daemon kept whatever came during the grace). Far above
    /// what a client that reconnects sends: its presenters (at most 100,000) and claims (10,000) again.
    static let maximumHeldBackBytesPerClient = 64 << 20
    /// The marker that started this daemon's recovery, removed when the grace ends: a daemon stopped or crashed
    /// before then leaves it to the next.
    private var marker: String?

    init(loop: any EventLoop, logger: Logger) {
        self.loop = loop
        self.logger = logger
    }

    /// Starts the grace; when it ends, `end` gets the events held back, in order.
    func start(
        for grace: Duration,
        because reason: String,
        marker: String?,
        then end: @escaping (_ heldBack: [(ClientID, ArbiterEvent)]) -> Void
    ) {
        loop.preconditionInEventLoop()
        isRecovering = true
        self.marker = marker
        logger.notice(
            "\(reason): only claims still held are taken for \(grace)",
            metadata: ["grace.seconds": "\(Double(grace.nanoseconds) / 1e9)"]
        )
        loop.assumeIsolated().scheduleTask(in: .nanoseconds(grace.nanoseconds)) { [weak self] in
            guard let self else { return }
            end(self.end())
        }
    }

    /// Whether `event` from `client` is held back (then kept, in order, until the grace ends): during the grace,
    /// every event but a claim still held and a lease given back.
    func holdsBack(_ event: ArbiterEvent, from client: ClientID) -> Bool {
        guard isRecovering else { return false }
        if case .claimRequested(let request) = event, request.isHeld {
            // Taken at once: it is what recovery waits for.
            return false
        } else if case .leaseReturned = event {
            // So is a lease of the previous daemon given back with the claims still running in it.
            return false
        }
        heldBack.append((client, event))
        heldBytes[client, default: (0, 0)].bytes += Self.estimatedBytes(of: event)
        heldBytes[client, default: (0, 0)].events += 1
        return true
    }

    /// About how many bytes of `client`'s events are held back.
    func heldBackBytes(of client: ClientID) -> Int { heldBytes[client]?.bytes ?? 0 }

    /// Drops what `client` sent during the grace: its connection ended (closed by the host for sending too much, or
    /// by the client, which may connect again and send as much again). Amortised O(1) per event held back.
    func forget(_ client: ClientID) {
        guard let held = heldBytes.removeValue(forKey: client) else { return }
        forgotten.insert(client)
        forgottenEvents += held.events
        guard forgottenEvents * 2 > heldBack.count else { return }
        heldBack.removeAll { forgotten.contains($0.0) }
        (forgotten, forgottenEvents) = ([], 0)
    }

    /// About what `event` takes in memory: its paths' bytes and a fixed part.
    static func estimatedBytes(of event: ArbiterEvent) -> Int {
        let fixed = 128
        switch event {
        case .claimRequested(let request):
            return fixed + request.items.reduce(0) { $0 + 64 + $1.path.bytes.count }
        case .presenterAdded(let registration):
            return fixed + (registration.path?.bytes.count ?? 0)
        case .presenterURLChanged(_, let path):
            return fixed + (path?.bytes.count ?? 0)
        case .itemMoved(_, let from, let to, let name):
            return fixed + from.bytes.count + to.bytes.count + (name?.count ?? 0)
        case .claimFinished(_, let created, _):
            return fixed + created.reduce(0) { $0 + $1.bytes.count }
        default:
            return fixed
        }
    }

    /// Ends the grace: removes the marker, returns the events held back.
    private func end() -> [(ClientID, ArbiterEvent)] {
        isRecovering = false
        if let marker {
            self.marker = nil
            do throws(Errno) {
                try FileSystemCalls.removeFile(marker)
            } catch {
                if error != .noSuchFileOrDirectory {
                    logger.warning("cannot remove the recovery marker: \(error)", metadata: ["marker": "\(marker)"])
                }
            }
        }
        let events = forgotten.isEmpty ? heldBack : heldBack.filter { !forgotten.contains($0.0) }
        heldBack = []
        heldBytes = [:]
        (forgotten, forgottenEvents) = ([], 0)
        logger.info("recovery over", metadata: ["events.heldBack": "\(events.count)"])
        return events
    }
}
