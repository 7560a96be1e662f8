import SwiftProtobuf

/// Who sends a message: every `Frame` payload travels in one direction only. A value: usable from any thread.
public enum FrameDirection: Hashable, Sendable, CustomStringConvertible {
    /// Sent by a client, received by the daemon (`Hello`, `RequestClaim`, ...).
    case toDaemon
    /// Sent by the daemon, received by a client (`HelloReply`, `Granted`, ...).
    case toClient

    /// `to daemon` or `to client`, for logs.
    public var description: String {
        switch self {
        case .toDaemon: "to daemon"
        case .toClient: "to client"
        }
    }
}

extension Filecoord_V1_Frame.OneOf_Payload {
    /// The direction this message travels in.
    public var direction: FrameDirection {
        switch self {
        case .hello, .registerPresenter, .unregisterPresenter, .presenterURLChanged, .requestClaim, .finishClaim,
            .cancelCoordinator, .cancelClaim, .presenterReply, .itemMoved, .versionChanged, .dumpRequest:
            .toDaemon
        case .preparationReturned:
            .toDaemon
        case .helloReply, .refused, .granted, .claimFailed, .presenterMessage, .protocolError, .dumpReply:
            .toClient
        case .watchUnavailable, .watchAvailable:
            .toClient
        case .versionStoreRequest: .toDaemon
        case .versionStoreReply: .toClient
        case .ping: .toDaemon
        case .pong: .toClient
        case .leaseReturned, .leaseCounterIdle: .toDaemon
        case .leaseGranted, .leaseRecalled, .claimInsideLease: .toClient
        case .progressPublish, .progressUpdate, .progressUnpublish, .progressSubscribe, .progressUnsubscribe,
            .progressControl:
            .toDaemon
        case .progressAppeared, .progressChanged, .progressGone, .progressControlRequested: .toClient
        case .queryStart, .queryStop, .queryResults: .toDaemon
        case .queryItems, .queryWatchUnavailable, .queryWatchAvailable: .toClient
        }
    }

    /// The message's name in `filecoord.proto`, for logs and errors.
    public var messageName: String {
        switch self {
        case .hello: "Hello"
        case .registerPresenter: "RegisterPresenter"
        case .unregisterPresenter: "UnregisterPresenter"
        case .presenterURLChanged: "PresenterURLChanged"
        case .requestClaim: "RequestClaim"
        case .finishClaim: "FinishClaim"
        case .cancelCoordinator: "CancelCoordinator"
        case .cancelClaim: "CancelClaim"
        case .presenterReply: "PresenterReply"
        case .itemMoved: "ItemMoved"
        case .versionChanged: "VersionChanged"
        case .dumpRequest: "DumpRequest"
        case .preparationReturned: "PreparationReturned"
        case .helloReply: "HelloReply"
        case .refused: "Refused"
        case .granted: "Granted"
        case .claimFailed: "ClaimFailed"
        case .presenterMessage: "PresenterMessage"
        case .protocolError: "ProtocolError"
        case .dumpReply: "DumpReply"
        case .watchUnavailable: "WatchUnavailable"
        case .watchAvailable: "WatchAvailable"
        case .versionStoreRequest: "VersionStoreRequest"
        case .versionStoreReply: "VersionStoreReply"
        case .ping: "Ping"
        case .pong: "Pong"
        case .leaseReturned: "LeaseReturned"
        case .leaseCounterIdle: "LeaseCounterIdle"
        case .leaseGranted: "LeaseGranted"
        case .leaseRecalled: "LeaseRecalled"
        case .claimInsideLease: "ClaimInsideLease"
        case .progressPublish: "ProgressPublish"
        case .progressUpdate: "ProgressUpdate"
        case .progressUnpublish: "ProgressUnpublish"
        case .progressSubscribe: "ProgressSubscribe"
        case .progressUnsubscribe: "ProgressUnsubscribe"
        case .progressControl: "ProgressControl"
        case .progressAppeared: "ProgressAppeared"
        case .progressChanged: "ProgressChanged"
        case .progressGone: "ProgressGone"
        case .progressControlRequested: "ProgressControlRequested"
        case .queryStart: "QueryStart"
        case .queryStop: "QueryStop"
        case .queryResults: "QueryResults"
        case .queryItems: "QueryItems"
        case .queryWatchUnavailable: "QueryWatchUnavailable"
        case .queryWatchAvailable: "QueryWatchAvailable"
        }
    }
}

extension Filecoord_V1_Frame {
    /// Creates a frame carrying one message.
    public init(_ payload: Filecoord_V1_Frame.OneOf_Payload) {
        self.init()
        self.payload = payload
    }
}

/// The size of a frame's length prefix: a 4-byte big-endian unsigned integer.
public let frameLengthPrefixSize = 4

/// Turns a byte stream into `Frame`s: the receiving half of the framing (docs/PROTOCOL.md, "Framing").
///
/// Each frame is a 4-byte big-endian length, then that many bytes of a protobuf-encoded `Frame`. Feed the bytes as
/// they arrive, in any chunks; the decoder buffers an incomplete frame until the rest arrives ("need more" is not an
/// error). It throws a ``ProtocolError`` for a length of 0 or above ``maximumFrameSize`` (as soon as the prefix has
/// arrived, before buffering any of the body), for a body that is not a valid `Frame`, for a frame with no known
/// message, and, when ``accepting`` is set, for a message travelling the other way.
///
/// After it has thrown, the decoder throws the same error from every call: the connection is over. Memory held is
/// at most one frame plus the last chunk fed.
///
/// Performs no I/O (no NIO, no sockets). Not thread-safe: one owner at a time (the connection's event loop or
/// reader thread) calls its mutating methods. It is `Sendable`, so it can be handed to another owner.
public struct FrameDecoder: Sendable {
    /// The largest frame body accepted, in bytes.
    public let maximumFrameSize: Int
    /// When set, a message travelling in the other direction is a protocol error (`.unexpectedMessage`).
    public let accepting: FrameDirection?

    private var storage: [UInt8] = []
    private var readIndex = 0
    private var failure: ProtocolError?

    /// The message depth `Frame` needs is 3 (`Frame` > `PresenterReply` > `PresenterFailure`); deeper input is
    /// malformed, and refusing it early bounds the decoder's recursion.
    private static let messageDepthLimit = 8

    /// Creates a decoder.
    ///
    /// - Parameters:
    ///   - maximumFrameSize: the largest frame body accepted (``ProtocolLimits/maximumFrameSize``).
    ///   - accepting: the direction of the messages this end receives (`.toDaemon` in the daemon, `.toClient` in
    ///     a client), or `nil` to accept both.
    /// - Precondition: `maximumFrameSize` is positive and at most `UInt32.max`.
    public init(
        maximumFrameSize: Int = ProtocolLimits.defaultMaximumFrameSize,
        accepting: FrameDirection? = nil
    ) {
        precondition(maximumFrameSize > 0 && maximumFrameSize <= Int(UInt32.max), "maximumFrameSize out of range")
        self.maximumFrameSize = maximumFrameSize
        self.accepting = accepting
    }

    /// The number of bytes received and not yet returned as frames.
    public var bufferedByteCount: Int { storage.count - readIndex }

    /// The error the decoder failed with, if it has.
    public var error: ProtocolError? { failure }

    /// Appends received bytes to the buffer, without decoding. Call ``next()`` until it returns `nil`.
    ///
    /// Bytes appended after a failure are dropped.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard failure == nil, !bytes.isEmpty else { return }
        compactIfWorthIt()
        storage.append(contentsOf: bytes)
    }

    /// The next complete frame, or `nil` when the buffer holds no complete frame yet.
    ///
    /// - Throws: ``ProtocolError`` when the next frame is oversized, empty, malformed, carries no known message or
    ///   travels the wrong way; then again on every later call.
    public mutating func next() throws(ProtocolError) -> Filecoord_V1_Frame? {
        if let failure { throw failure }
        let available = storage.count - readIndex
        guard available >= frameLengthPrefixSize else { return nil }
        let length =
            Int(storage[readIndex]) << 24 | Int(storage[readIndex + 1]) << 16 | Int(storage[readIndex + 2]) << 8
            | Int(storage[readIndex + 3])
        do {
            try Self.checkLength(length, maximumFrameSize: maximumFrameSize)
            guard available - frameLengthPrefixSize >= length else { return nil }
            let bodyStart = readIndex + frameLengthPrefixSize
            // Decoded in place, from the buffer's own bytes (no copy of the body).
            let frame = try Self.frame(
                fromBody: storage.span.bytes.extracting(bodyStart..<(bodyStart + length)),
                accepting: accepting
            )
            readIndex = bodyStart + length
            if readIndex == storage.count {
                storage.removeAll(keepingCapacity: storage.capacity <= 2 * maximumFrameSize)
                readIndex = 0
            }
            return frame
        } catch {
            failure = error
            storage = []
            readIndex = 0
            throw error
        }
    }

    /// Checks a frame's length prefix: a frame is refused as soon as its prefix says it is empty or larger than
    /// `maximumFrameSize`, before any of its body is buffered. Shared with the daemon's NIO decoder.
    ///
    /// - Throws: ``ProtocolError`` with `.emptyFrame` or `.frameTooLarge`.
    public static func checkLength(_ length: Int, maximumFrameSize: Int) throws(ProtocolError) {
        if length == 0 {
            throw ProtocolError(.emptyFrame, "a frame's length is 0; every frame carries one message")
        }
        if length > maximumFrameSize {
            throw ProtocolError(
                .frameTooLarge,
                "a frame's length is \(length) bytes; the limit is \(maximumFrameSize)"
            )
        }
    }

    /// The `Frame` a complete body holds, decoded in place from `body` (no copy): the one body decoding of the
    /// protocol, used by ``next()`` and by the daemon's NIO decoder on its `ByteBuffer`'s bytes.
    ///
    /// - Parameter accepting: the direction this end receives, or `nil` to accept both.
    /// - Throws: ``ProtocolError`` with `.malformedFrame` (not a valid `Frame`, or nested too deep),
    ///   `.unknownMessage` (no message this version knows) or `.unexpectedMessage` (travelling the other way).
    public static func frame(
        fromBody body: RawSpan,
        accepting: FrameDirection?
    ) throws(ProtocolError)
        -> Filecoord_V1_Frame
    {
        var options = BinaryDecodingOptions()
        options.messageDepthLimit = messageDepthLimit
        options.discardUnknownFields = true
        var frame = Filecoord_V1_Frame()
        do {
            try frame.merge(serializedBytes: body, options: options)
        } catch {
            throw ProtocolError(.malformedFrame, "a \(body.byteCount)-byte frame is not a valid Frame: \(error)")
        }
        guard let payload = frame.payload else {
            throw ProtocolError(
                .unknownMessage,
                "a \(body.byteCount)-byte frame carries no message this protocol version knows"
            )
        }
        if let accepting, payload.direction != accepting {
            throw ProtocolError(
                .unexpectedMessage,
                "\(payload.messageName) travels \(payload.direction), but this end receives messages \(accepting)"
            )
        }
        return frame
    }

    /// Appends received bytes and returns every frame they complete, in order.
    ///
    /// If a frame is invalid this throws, and the valid frames before it in `bytes` are not returned; a host that
    /// wants to act on those first calls ``append(_:)`` and then ``next()`` in a loop.
    ///
    /// - Throws: ``ProtocolError``, as ``next()``.
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> [Filecoord_V1_Frame] {
        if let failure { throw failure }
        append(bytes)
        var frames: [Filecoord_V1_Frame] = []
        while let frame = try next() {
            frames.append(frame)
        }
        return frames
    }

    /// The capacity of the internal buffer, for tests of what the decoder allocates.
    var storageCapacity: Int { storage.capacity }

    /// Drops consumed bytes when they are at least half the buffer, so that appending stays amortised O(n).
    private mutating func compactIfWorthIt() {
        guard readIndex > 0 else { return }
        if readIndex == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= 2 * maximumFrameSize)
            readIndex = 0
        } else if readIndex >= storage.count / 2 {
            storage.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }
}

/// Turns `Frame`s into bytes: the sending half of the framing (docs/PROTOCOL.md, "Framing").
///
/// Writes each frame as a 4-byte big-endian length, then the frame's protobuf encoding. Refuses a frame with no
/// message, and one whose encoding is larger than ``maximumFrameSize`` (the peer would refuse it).
///
/// Performs no I/O. A stateless value: `Sendable`, usable from any thread.
public struct FrameEncoder: Sendable {
    /// The largest frame body this encoder writes, in bytes: the peer's limit.
    public let maximumFrameSize: Int

    /// Creates an encoder.
    ///
    /// - Parameter maximumFrameSize: the peer's ``ProtocolLimits/maximumFrameSize`` (a client learns the daemon's
    ///   from `HelloReply.limits`).
    /// - Precondition: `maximumFrameSize` is positive and at most `UInt32.max`.
    public init(maximumFrameSize: Int = ProtocolLimits.defaultMaximumFrameSize) {
        precondition(maximumFrameSize > 0 && maximumFrameSize <= Int(UInt32.max), "maximumFrameSize out of range")
        self.maximumFrameSize = maximumFrameSize
    }

    /// The frame's bytes: length prefix, then body.
    ///
    /// - Throws: ``ProtocolError`` with `.unknownMessage` for a frame with no payload, `.frameTooLarge` for one
    ///   larger than ``maximumFrameSize``, `.malformedFrame` if the message cannot be serialized.
    public func encode(_ frame: Filecoord_V1_Frame) throws(ProtocolError) -> [UInt8] {
        var out: [UInt8] = []
        try encode(frame, into: &out)
        return out
    }

    /// Appends the frame's bytes (length prefix, then body) to `buffer`; on error `buffer` is left as it was.
    ///
    /// - Throws: ``ProtocolError``, as ``encode(_:)``.
    public func encode(_ frame: Filecoord_V1_Frame, into buffer: inout [UInt8]) throws(ProtocolError) {
        let body = try self.body(of: frame)
        let length = UInt32(body.count)
        buffer.reserveCapacity(buffer.count + frameLengthPrefixSize + body.count)
        buffer.append(UInt8(truncatingIfNeeded: length >> 24))
        buffer.append(UInt8(truncatingIfNeeded: length >> 16))
        buffer.append(UInt8(truncatingIfNeeded: length >> 8))
        buffer.append(UInt8(truncatingIfNeeded: length))
        buffer.append(contentsOf: body)
    }

    /// The frame's body alone (its protobuf encoding, checked like ``encode(_:)``), for a sender that writes the
    /// 4-byte big-endian length (`UInt32(body.count)`) and the body straight into an I/O buffer of its own, such
    /// as the daemon's NIO `ByteBuffer`, with no intermediate frame array. SwiftProtobuf encodes into a buffer it
    /// allocates, so this is the one copy-free form its public API allows.
    ///
    /// - Throws: ``ProtocolError``, as ``encode(_:)``.
    public func body(of frame: Filecoord_V1_Frame) throws(ProtocolError) -> [UInt8] {
        guard let payload = frame.payload else {
            throw ProtocolError(.unknownMessage, "a frame to send carries no message")
        }
        let body: [UInt8]
        do {
            body = try frame.serializedBytes()
        } catch {
            throw ProtocolError(.malformedFrame, "\(payload.messageName) could not be serialized: \(error)")
        }
        guard body.count <= maximumFrameSize else {
            throw ProtocolError(
                .frameTooLarge,
                "\(payload.messageName) encodes to \(body.count) bytes; the limit is \(maximumFrameSize)"
            )
        }
        return body
    }
}
