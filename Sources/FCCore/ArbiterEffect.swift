/// Why a claim failed.
public enum ClaimFailure: Hashable, Sendable, CustomStringConvertible {
    /// `cancel()` was called, or the claim was abandoned (`CocoaError(.userCancelled)`).
    case cancelled
    /// A presenter's save or accommodate failed; the error is passed through intact. The arbiter always names the
    /// presenter; the daemon's router leaves it out (`nil`) for a client that does not own it, to which its number
    /// means nothing (docs/PROTOCOL.md, `ClaimFailed.presenter_id`).
    case presenterError(PresenterError, presenter: PresenterID?)
    /// The request was malformed (no items, duplicate id, …).
    case invalidRequest(String)
    /// The claim was failed to break a deadlock; the report closes the cycle, one line per edge.
    case deadlock(String)
    /// The claim was not granted within its own deadline (``ClaimRequest/timeout``); the report says what it still
    /// waited for, one line per edge.
    case timedOut(String)
    /// The claim lies in a shared folder and this host cannot decide it (issue 40; docs/SEMANTICS.md §14): its
    /// cluster session is lost or could not be renewed in time, or the cluster did not take its request.
    case clusterUnreachable(String)
    /// The claim must not wait (``ClaimRequest/nonblocking``) and a conflicting claim held it back; the report names
    /// that claim (issue 43; docs/SEMANTICS.md §2 rule 9).
    case wouldWait(String)

    /// A short explanation of the failure, for logs.
    public var description: String {
        switch self {
        case .cancelled: "cancelled"
        case .presenterError(let error, let presenter?): "\(presenter) failed: \(error)"
        case .presenterError(let error, nil): "a presenter of another client failed: \(error)"
        case .invalidRequest(let reason): "invalid request: \(reason)"
        case .deadlock(let report): "deadlock: \(report)"
        case .timedOut(let report): "timed out: \(report)"
        case .clusterUnreachable(let reason): reason
        case .wouldWait(let report): "would wait: \(report)"
        }
    }
}

/// Severity of a log record.
public enum LogLevel: Int, Hashable, Sendable, Comparable {
    case trace, debug, info, notice, warning, error
    /// Orders levels by severity, `trace` lowest.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A log record the host should write (through swift-log in the daemon).
public struct LogRecord: Hashable, Sendable, CustomStringConvertible {
    /// The record's severity.
    public var level: LogLevel
    /// What happened, in words.
    public var message: String
    /// Structured metadata with dotted keys (`claim.id`, `client.id`, `item.path`).
    public var metadata: [String: String]

    /// Creates a log record.
    public init(level: LogLevel, message: String, metadata: [String: String] = [:]) {
        self.level = level
        self.message = message
        self.metadata = metadata
    }

    /// The level, the message and the metadata sorted by key, on one line.
    public var description: String {
        let meta = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return "[\(level)] \(message)" + (meta.isEmpty ? "" : " \(meta)")
    }
}

/// What the arbiter asks its host to do, in order.
public enum ArbiterEffect: Hashable, Sendable {
    /// Run the claim's accessor with these paths, one per requested item in request order (moves applied).
    case grant(ClaimID, client: ClientID, paths: [ItemPath])
    /// The claim failed; its accessor must not run.
    case fail(ClaimID, client: ClientID, ClaimFailure)
    /// Deliver a message to a presenter, on its queue, after every message emitted before it for that presenter.
    case message(PresenterMessage)
    /// Start a timer; when it fires, feed ``ArbiterEvent/timerFired(_:)``.
    case startTimer(TimerID, after: Duration)
    /// Stop a timer that is no longer needed.
    case cancelTimer(TimerID)
    /// Write a log record.
    case log(LogRecord)
    /// Watch this directory for changes made without coordination (its direct entries; the host uses no watch when
    /// it is not a directory), feeding them as ``ArbiterEvent/fileSystemChanged(_:observed:readAt:drainedAt:)``. Emitted when the first
    /// presenter needs it (``ArbiterConfiguration/watchesFileSystem``), and again when it was created after a
    /// failed watch: the host then scans it and reports what it holds as created.
    case watch(ItemPath)
    /// Stop watching a directory: the last presenter that needed it is gone. In one batch of effects every unwatch
    /// comes before any watch.
    case unwatch(ItemPath)
    /// A presenter's item or its parent cannot be watched (out of watches, say): changes made without coordination
    /// will not reach it. For the presenter's client.
    case watchUnavailable(PresenterID, client: ClientID, directory: ItemPath, reason: String)
    /// A directory the presenter was told of in ``watchUnavailable(_:client:directory:reason:)`` is watched again
    /// (``FileSystemEvent/watchAdded(_:)``): changes made without coordination reach it again. For its client.
    case watchAvailable(PresenterID, client: ClientID, directory: ItemPath)
    /// The client may decide the claims inside `subtree` itself, until the lease is recalled (docs/SEMANTICS.md §13).
    case grantLease(LeaseID, client: ClientID, subtree: ItemPath)
    /// The holder must stop granting claims inside the lease, and return it with the claims still running
    /// (``ArbiterEvent/leaseReturned(_:client:running:)``).
    case recallLease(LeaseID, client: ClientID)
    /// The lease is gone without a return (its holder disconnected); for the host's records.
    case leaseDropped(LeaseID, client: ClientID)
    /// The claim lies inside a lease its own client holds (sent before the client could know of the lease): it is
    /// not arbitrated here, and the client decides it itself, or sends it again if the lease is gone by then.
    case claimInsideLease(ClaimID, client: ClientID, lease: LeaseID)
    /// A granted claim that wrote a file with other names (hard links: ``ClaimItem/hasOtherNames``) ended (issue 26):
    /// the host's watcher reports the write under the file's names in the directories it watches where no watch of
    /// its own saw it (a folder presenter alone, with the link made elsewhere after the folder's watch). Once per
    /// file and claim, after the claim's own notifications; only with ``ArbiterConfiguration/watchesFileSystem``.
    case fileWithOtherNamesWritten(ItemIdentity)
    /// A claim waits at the closed host gate of the shared folder `folder` (``HostGateCommand/close``): for the host's
    /// cluster adapter, which asks the cluster for the folder (``HostLeaseEvent/claimArrived(folder:)``). At most
    /// once per claim and event.
    case hostGateWanted(ItemPath)
    /// After ``HostGateCommand/drain``: no claim inside `folder` is granted any more, nor a process lease held
    /// (``HostLeaseEvent/localClaimsEnded(folder:)``). Once per drain.
    case hostGateDrained(ItemPath)
    /// The host's watcher is to report how far it has read once it has read what is queued now (an empty batch with
    /// its `drainedAt`, ``ArbiterEvent/fileSystemChanged(_:observed:readAt:drainedAt:)``): an echo record past its
    /// retention waits for it. At most once until the watcher next reports.
    case drainWatcher
}
