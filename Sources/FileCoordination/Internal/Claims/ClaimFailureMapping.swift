import FCCore
import Foundation

/// The one place where the reason a claim failed becomes the error its caller gets, for the daemon's `ClaimFailed`
/// frames and the in-process arbiter's failures alike (docs/SEMANTICS.md §3 and §7).
///
/// - Important: Thread-safe (it keeps no state); `originalError` is called at most once per failure.
enum ClaimFailureMapping {
    /// The caller's error for `reason`. `originalError` gives the very error object a presenter of this process
    /// failed with, when it still has it (a presenter of another process is known only by its domain, code and
    /// message).
    static func error(
        for reason: ClaimFailedReason,
        originalError: (PresenterID) -> (any Error)?
    ) -> any Error {
        switch reason {
        case .cancelled:
            return CocoaError(.userCancelled)
        case .presenterError(let error, let presenter):
            if let presenter, let original = originalError(presenter) { return original }
            return NSError(domain: error.domain, code: error.code, userInfo: [NSLocalizedDescriptionKey: error.message])
        case .deadlock(let report):
            return FileCoordinationError(.deadlock, report)
        case .timedOut(let report):
            return FileCoordinationError(.timedOut, report)
        case .invalidRequest(let reason):
            return FileCoordinationError(.invalidRequest, "The arbiter refused the request: \(reason).")
        case .shuttingDown(let message):
            return FileCoordinationError(.connectionLost, message)
        case .limitExceeded(let message):
            return FileCoordinationError(.invalidRequest, message)
        case .clusterUnreachable(let message):
            return FileCoordinationError(.clusterUnreachable, message)
        case .wouldWait(let report):
            return FileCoordinationError(.wouldWait, report)
        }
    }
}
