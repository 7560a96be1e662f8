import FileCoordination
import Foundation

/// A failed coordinated call or operation of `fccoord` and `libfilecoord`, classified once for both: the code is
/// `libfilecoord`'s (`filecoord.h`, `FILECOORD_ERR_*`), from which `fccoord` derives its exit status.
///
/// The codes 1 to 10 are ``FileCoordinationError/Code``'s raw values; the others are the bridge's own.
public struct BridgeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// `FILECOORD_ERR_*` of `filecoord.h`.
    public struct Code: RawRepresentable, Hashable, Sendable {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// No daemon answered and none could be started (`FileCoordinationError.Code.arbiterUnreachable`).
        public static let unreachable = Code(rawValue: 1)
        /// The connection to the daemon was lost while the call waited.
        public static let connectionLost = Code(rawValue: 2)
        /// The call was failed to break a deadlock.
        public static let deadlock = Code(rawValue: 3)
        /// A presenter did not answer in time.
        public static let presenterTimeout = Code(rawValue: 4)
        /// The path cannot be coordinated (relative, or not a file path).
        public static let unsupportedPath = Code(rawValue: 5)
        /// The daemon speaks another protocol version, or makes canonical paths by other rules.
        public static let protocolVersionMismatch = Code(rawValue: 6)
        /// A write nested in a single-item accessor.
        public static let nestedWrite = Code(rawValue: 7)
        /// The arbiter refused the request (a limit, a malformed request).
        public static let invalidRequest = Code(rawValue: 8)
        /// The path could not be resolved (a loop of symbolic links, a component that is not a directory).
        public static let unresolvablePath = Code(rawValue: 9)
        /// Not granted within the timeout.
        public static let timedOut = Code(rawValue: 10)
        /// The call must not wait (``CallSettings/nonblocking``) and a conflicting claim held it back
        /// (`FileCoordinationError.Code.wouldWait`).
        public static let wouldWait = Code(rawValue: 13)
        /// The call was cancelled.
        public static let cancelled = Code(rawValue: 20)
        /// A presenter refused (its save or accommodation failed); the message names its error.
        public static let refused = Code(rawValue: 21)
        /// The operation itself (the rename of a move, the removal of a delete) failed; ``errno`` says why.
        public static let io = Code(rawValue: 22)
        /// A bad argument: a missing path, an empty command.
        public static let invalidArgument = Code(rawValue: 23)
        /// Anything else.
        public static let other = Code(rawValue: 99)
    }

    public var code: Code
    public var message: String
    /// The `errno` of an ``Code/io`` failure, else 0.
    public var errno: Int32

    public init(_ code: Code, _ message: String, errno: Int32 = 0) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String { message }

    /// Classifies an error a coordinated call failed with.
    public init(classifying error: any Error) {
        if let error = error as? BridgeError {
            self = error
            return
        }
        if let error = error as? FileCoordinationError {
            self.init(Code(rawValue: Int32(truncatingIfNeeded: error.code.rawValue)), error.message)
            return
        }
        let nsError = error as NSError
        if nsError.domain == NSCocoaErrorDomain && nsError.code == CocoaError.userCancelled.rawValue {
            self.init(.cancelled, "The call was cancelled.")
            return
        }
        if nsError.domain == FileCoordinationError.errorDomain {
            self.init(Code(rawValue: Int32(truncatingIfNeeded: nsError.code)), nsError.localizedDescription)
            return
        }
        // Every other error a coordinated call fails with is the one a presenter answered with.
        self.init(
            .refused,
            "A presenter refused: \(nsError.localizedDescription) (\(nsError.domain) \(nsError.code))."
        )
    }
}
