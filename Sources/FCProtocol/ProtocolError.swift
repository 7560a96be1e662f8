/// A violation of the wire protocol: a frame that cannot be accepted, or a message whose contents are invalid.
///
/// Whoever meets one ends that one connection: the daemon sends the peer a `ProtocolError` frame carrying
/// ``description`` and closes it, dropping the client's claims and presenters exactly as on a disconnect; a client
/// closes and reconnects. A frame that is merely incomplete is not an error: ``FrameDecoder`` waits for more bytes.
///
/// A value type: `Sendable`, usable from any thread.
public struct ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of violation it is. Extensible: switch over it with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case frameTooLarge = "frame too large"
            case emptyFrame = "empty frame"
            case malformedFrame = "malformed frame"
            case unknownMessage = "unknown message"
            case unexpectedMessage = "unexpected message"
            case invalidPath = "invalid path"
            case pathTooLong = "path too long"
            case invalidValue = "invalid value"
            case limitExceeded = "limit exceeded"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A length prefix above the maximum frame size (checked before any of the body is buffered), or a frame
        /// to encode that is larger.
        public static let frameTooLarge = Code(.frameTooLarge)
        /// A length prefix of 0: no frame may be empty, since each carries exactly one message.
        public static let emptyFrame = Code(.emptyFrame)
        /// The frame's body is not a valid protobuf encoding of `Frame`.
        public static let malformedFrame = Code(.malformedFrame)
        /// The frame carries no message this version knows (an empty `payload`, or one added by a later version).
        public static let unknownMessage = Code(.unknownMessage)
        /// A message the receiver does not accept from that peer or at that point: a daemon-to-client message sent
        /// to the daemon, a claim before `Hello`, a second `Hello`, and so on.
        public static let unexpectedMessage = Code(.unexpectedMessage)
        /// A path that is empty, relative, or contains a NUL byte.
        public static let invalidPath = Code(.invalidPath)
        /// A path longer than the maximum path length.
        public static let pathTooLong = Code(.pathTooLong)
        /// A field with a value that is not allowed: an unspecified or unknown enum value, a missing `oneof`, a
        /// request id on a message that needs no reply or none on one that does, and so on.
        public static let invalidValue = Code(.invalidValue)
        /// More of something than ``ProtocolLimits`` allows (items per claim, presenters per client).
        public static let limitExceeded = Code(.limitExceeded)

        /// The code in words, for logs.
        public var description: String { base.rawValue }
    }

    /// What kind of violation it is.
    public var code: Code
    /// What exactly was wrong, naming the message and field where there is one.
    public var reason: String

    /// Creates an error.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// The code and the reason, for logs and the `ProtocolError` frame.
    public var description: String { "\(code): \(reason)" }
}
