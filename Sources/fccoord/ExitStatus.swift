import ArgumentParser
import FCBridge
import Foundation

/// fccoord's own exit statuses (the EXIT STATUS section of `fccoord --help` and docs/man/fccoord.1), in the range
/// timeout(1) and the shells use for a tool's own failures, so that scripts can tell them from a command's status.
enum ExitStatus {
    /// `-n` and the claim would have waited for a conflicting claim (flock(1) uses 1; `-E` sets another).
    static let wouldWait: Int32 = 119
    static let refusedByPresenter: Int32 = 120
    static let daemonUnreachable: Int32 = 121
    static let badPath: Int32 = 122
    static let deadlock: Int32 = 123
    static let timedOut: Int32 = 124
    static let failed: Int32 = 125
    static let cannotExecute: Int32 = 126
    static let notFound: Int32 = 127

    /// The status of a failed coordinated call or operation.
    static func status(for error: BridgeError) -> Int32 {
        switch error.code {
        case .refused: refusedByPresenter
        case .unreachable, .connectionLost, .protocolVersionMismatch: daemonUnreachable
        case .unsupportedPath, .unresolvablePath: badPath
        case .io where error.errno == ENOENT || error.errno == ENOTDIR: badPath
        case .deadlock: deadlock
        case .timedOut: timedOut
        case .wouldWait: wouldWait
        default: failed
        }
    }

    /// Says what failed on standard error and exits with its status: `conflictStatus` (`-E`) instead of
    /// ``wouldWait`` and ``timedOut`` when given.
    static func fail(_ error: BridgeError, conflictStatus: Int32? = nil) -> ExitCode {
        complain(error.message)
        return ExitCode(status(for: error, conflictStatus: conflictStatus))
    }

    /// ``status(for:)``, or `conflictStatus` (`-E`) for a claim that would wait or timed out.
    static func status(for error: BridgeError, conflictStatus: Int32?) -> Int32 {
        if let conflictStatus, error.code == .wouldWait || error.code == .timedOut { return conflictStatus }
        return status(for: error)
    }
}

/// One line on standard error, prefixed with the tool's name.
func complain(_ message: String) {
    FileHandle.standardError.write(Data("fccoord: \(message)\n".utf8))
}
