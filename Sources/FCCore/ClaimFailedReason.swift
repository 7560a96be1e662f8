/// Why a claim failed, as its client learns it: the arbiter's ``ClaimFailure`` cases, and the failures the daemon
/// decides itself. The daemon sends it as `ClaimFailed` (FCProtocol); the library's in-process arbiter makes it
/// with ``init(_:)``; the library turns it into the caller's error in one place, whichever arbiter failed the claim.
///
/// A value type: `Sendable`, usable from any thread.
public enum ClaimFailedReason: Hashable, Sendable, CustomStringConvertible {
    /// `cancel()` on the coordinator, or `CancelClaim` (``ClaimFailure/cancelled``).
    case cancelled
    /// A presenter's save or accommodate failed (``ClaimFailure/presenterError(_:presenter:)``). `presenter` is set
    /// when the presenter is the receiving client's own, in its numbering; `nil` when it is another client's.
    case presenterError(PresenterError, presenter: PresenterID?)
    /// The arbiter refused the request (``ClaimFailure/invalidRequest(_:)``).
    case invalidRequest(String)
    /// The claim was failed to break a deadlock; the message names every edge of the cycle.
    case deadlock(String)
    /// The daemon is shutting down.
    case shuttingDown(String)
    /// The client holds as many live claims as the daemon allows, or a claim exceeds a limit of the protocol.
    case limitExceeded(String)
    /// The claim was not granted within its own timeout; the message says what it still waited for.
    case timedOut(String)
    /// The claim lies in a shared folder this host cannot decide claims in (``ClaimFailure/clusterUnreachable(_:)``).
    case clusterUnreachable(String)
    /// The claim must not wait and a conflicting claim held it back (``ClaimFailure/wouldWait(_:)``).
    case wouldWait(String)

    /// The reason for an arbiter failure. A presenter id is copied as it is: the daemon maps it to the receiving
    /// client's numbering first, or passes a reason with `presenter: nil` when the presenter is another client's.
    public init(_ failure: ClaimFailure) {
        switch failure {
        case .cancelled: self = .cancelled
        case .presenterError(let error, let presenter): self = .presenterError(error, presenter: presenter)
        case .invalidRequest(let reason): self = .invalidRequest(reason)
        case .deadlock(let report): self = .deadlock(report)
        case .timedOut(let report): self = .timedOut(report)
        case .clusterUnreachable(let reason): self = .clusterUnreachable(reason)
        case .wouldWait(let report): self = .wouldWait(report)
        }
    }

    /// The arbiter's failure this reason stands for; `nil` for the failures the daemon decides itself, and for a
    /// presenter error whose presenter is not the client's own.
    public var claimFailure: ClaimFailure? {
        switch self {
        case .cancelled: .cancelled
        case .presenterError(let error, let presenter?): .presenterError(error, presenter: presenter)
        case .invalidRequest(let reason): .invalidRequest(reason)
        case .deadlock(let report): .deadlock(report)
        case .timedOut(let report): .timedOut(report)
        case .clusterUnreachable(let reason): .clusterUnreachable(reason)
        case .wouldWait(let report): .wouldWait(report)
        case .presenterError(_, nil), .shuttingDown, .limitExceeded: nil
        }
    }

    /// The reason in words, for logs and `ClaimFailed.message`.
    public var description: String {
        switch self {
        case .cancelled: "cancelled"
        case .presenterError(let error, let presenter?): "\(presenter) failed: \(error)"
        case .presenterError(let error, nil): "a presenter of another process failed: \(error)"
        case .invalidRequest(let reason): "invalid request: \(reason)"
        case .deadlock(let report): "deadlock: \(report)"
        case .shuttingDown(let reason): "filecoordd is shutting down: \(reason)"
        case .limitExceeded(let reason): "limit exceeded: \(reason)"
        case .timedOut(let report): "timed out: \(report)"
        case .clusterUnreachable(let reason): reason
        case .wouldWait(let report): "would wait: \(report)"
        }
    }
}
