public import Foundation

/// An error of file coordination itself (not one a presenter returned, which is passed through intact, nor
/// cancellation, which is `CocoaError(.userCancelled)` as on Apple platforms).
///
/// Bridged to `NSError` in ``FileCoordinationError/errorDomain`` with the code's raw value; each code has a message
/// that says what happened and what to do (docs/SEMANTICS.md §5).
public struct FileCoordinationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The error domain of `NSError`s made from this error.
    public static let errorDomain = "FileCoordinationErrorDomain"

    /// What went wrong. New codes may be added; switch with a `default`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The `NSError` code.
        public var rawValue: Int
        /// A code from its `NSError` code.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// No arbiter could be reached or started (code 1).
        public static let arbiterUnreachable = Code(rawValue: 1)
        /// The connection to the arbiter was lost while the call waited (code 2).
        public static let connectionLost = Code(rawValue: 2)
        /// The call was failed to break a deadlock (code 3).
        public static let deadlock = Code(rawValue: 3)
        /// A presenter did not answer in time (code 4).
        public static let presenterTimeout = Code(rawValue: 4)
        /// The URL is not an absolute `file:` URL (code 5).
        public static let unsupportedURL = Code(rawValue: 5)
        /// The arbiter speaks another protocol version, or makes canonical paths by other rules (code 6; the message
        /// says which).
        public static let protocolVersionMismatch = Code(rawValue: 6)
        /// A write was nested inside an accessor of the same coordinator where that is not allowed (code 7).
        public static let nestedWrite = Code(rawValue: 7)
        /// The arbiter refused the request as malformed (code 8).
        public static let invalidRequest = Code(rawValue: 8)
        /// A symbolic link cycle, or another failure to make the path canonical (code 9).
        public static let unresolvablePath = Code(rawValue: 9)
        /// The call was not granted within the timeout it was given (code 10); the message says what it waited
        /// for.
        public static let timedOut = Code(rawValue: 10)
        /// The daemon's socket folder, its socket or the process listening on it is not this user's (code 11): the
        /// message names the folder, its owner and what to do. Nothing was sent, no daemon was started there, and
        /// the call was not coordinated in process (docs/SEMANTICS.md §12).
        public static let untrustedDaemon = Code(rawValue: 11)
        /// The item lies in a shared folder (a folder several hosts mount, `filecoordd --shared-folder`) and this
        /// host cannot decide claims there now (code 12): its cluster session is lost or could not be renewed in
        /// time, or the cluster did not take its request. The message names the cause; local items are unaffected
        /// (docs/SEMANTICS.md §14).
        public static let clusterUnreachable = Code(rawValue: 12)
        /// The call must not wait (`NSFileCoordinator.refusesToWait`, the package's own option: `fccoord -n`) and
        /// a conflicting claim of another coordinator held it back (code 13); the message names that claim
        /// (docs/SEMANTICS.md §2 rule 9). Only calls of this package's tools can fail so.
        package static let wouldWait = Code(rawValue: 13)

        /// The code's name.
        public var description: String {
            switch self {
            case .arbiterUnreachable: "arbiterUnreachable"
            case .connectionLost: "connectionLost"
            case .deadlock: "deadlock"
            case .presenterTimeout: "presenterTimeout"
            case .unsupportedURL: "unsupportedURL"
            case .protocolVersionMismatch: "protocolVersionMismatch"
            case .nestedWrite: "nestedWrite"
            case .invalidRequest: "invalidRequest"
            case .unresolvablePath: "unresolvablePath"
            case .timedOut: "timedOut"
            case .untrustedDaemon: "untrustedDaemon"
            case .clusterUnreachable: "clusterUnreachable"
            case .wouldWait: "wouldWait"
            default: "code\(rawValue)"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// What happened and what to do about it.
    public var message: String
    /// The URL the call was about, if any.
    public var url: URL?

    /// An error with its code, message and, if any, the URL it is about.
    public init(_ code: Code, _ message: String, url: URL? = nil) {
        self.code = code
        self.message = message
        self.url = url
    }

    /// The code and the message.
    public var description: String { "FileCoordinationError.\(code): \(message)" }
}

extension FileCoordinationError: CustomNSError, LocalizedError {
    /// The code's raw value.
    public var errorCode: Int { code.rawValue }
    /// The message as `NSLocalizedDescriptionKey`, and the URL as `NSURLErrorKey`.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let url { info[NSURLErrorKey] = url }
        return info
    }
    /// The message.
    public var errorDescription: String? { message }
}
