import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

extension EtcdClient {
    /// Watches every key that starts with `prefix` (all keys for an empty one), from the revision `fromRevision` on
    /// (`nil`: from the next change; a range's `revision + 1` to miss nothing after it).
    ///
    /// Returns at once; the stream's task then opens the watch, trying the endpoints in turn within `timeout` as
    /// every call does, until a member confirms it (the first message, `created: true`), and yields the events in
    /// revision order (those of one revision, as a lease's expiry deleting all its keys, one after the other). It
    /// never finishes without an error: it throws ``EtcdError`` when no member could open the watch
    /// (``EtcdError/Reason/unavailable(_:)``), when the member's stream ends (the connection dropped, the member
    /// stopped: ``EtcdError/Reason/watchEnded(_:)``), or when etcd cancels the watch (`fromRevision` compacted:
    /// ``EtcdError/Reason/watchCanceled(compactRevision:reason:)``). The caller then watches anew from the last
    /// event's `modRevision + 1`, or reads the keys again after a cancel; a watch does not move to another member by
    /// itself.
    ///
    /// `POST /v3/watch` with one `create_request`: the gateway answers with a chunked stream of JSON objects, one a
    /// line (`{"result": {...}}\n`), which a read may cut anywhere (``EtcdMessageSplitter``).
    ///
    /// - Important: Callable from any task. The events are read by a task of the stream's own and buffered until
    ///   consumed; they are for one consumer. Cancelling the task that iterates the stream, or dropping the stream,
    ///   ends the HTTP request and that task.
    func watch(
        prefix: [UInt8],
        fromRevision: Int64? = nil,
        timeout: Duration = defaultTimeout
    ) -> AsyncThrowingStream<EtcdWatchEvent, any Error> {
        let path = "/v3/watch"
        let (key, end) = EtcdWire.prefixRange(prefix)
        let create = EtcdWire.WatchCreateRequest(
            key: Data(key),
            range_end: Data(end),
            start_revision: .init(fromRevision ?? 0)
        )
        let (events, continuation) = AsyncThrowingStream.makeStream(of: EtcdWatchEvent.self)
        let pump = Task {
            do {
                let body = try EtcdWire.encode(EtcdWire.WatchRequest(create_request: create))
                let opened = try await withEndpoints(path, timeout: timeout) { endpoint, deadline in
                    try await open(path, endpoint: endpoint, body: body, deadline: deadline)
                }
                await opened.pump(into: continuation)
            } catch {
                continuation.finish(throwing: Task.isCancelled ? nil : error)
            }
        }
        continuation.onTermination = { _ in pump.cancel() }
        return events
    }

    /// ``watch(prefix:fromRevision:timeout:)`` of a prefix given as UTF-8 text.
    func watch(
        prefix: String,
        fromRevision: Int64? = nil,
        timeout: Duration = defaultTimeout
    ) -> AsyncThrowingStream<EtcdWatchEvent, any Error> {
        watch(prefix: Array(prefix.utf8), fromRevision: fromRevision, timeout: timeout)
    }

    /// One attempt at a watch: the request, its answer's head, and its first message, which must confirm it.
    private func open(
        _ path: String,
        endpoint: String,
        body: [UInt8],
        deadline: ContinuousClock.Instant
    ) async throws -> EtcdWatchBody {
        var request = Self.request(.POST, endpoint + path, body: body)
        // A member cut off from the quorum would keep the watch open and silent: etcd ends it instead (the
        // gateway passes `Grpc-Metadata-*` headers on as gRPC metadata; `hasleader` is etcd's require-leader key).
        request.headers.add(name: "Grpc-Metadata-hasleader", value: "true")
        let response = try await httpClient.execute(request, deadline: Self.nioDeadline(deadline))
        guard (200..<300).contains(response.status.code) else {
            let bytes = try await response.body.collect(upTo: Self.maximumBodySize)
            try EtcdWire.check(
                status: response.status.code,
                Array(bytes.readableBytesView),
                operation: path,
                endpoint: endpoint
            )
            throw EtcdError(operation: path, endpoint: endpoint, reason: .malformedResponse("no answer"))
        }
        let watch = EtcdWatchBody(operation: path, endpoint: endpoint, body: response.body)
        try await watch.awaitCreated()
        return watch
    }
}

/// The body of one watch's HTTP response, cut into messages and decoded into events.
///
/// Dropping it (and so its iterator) cancels the HTTP request: AsyncHTTPClient ends a request whose body is no
/// longer read.
///
/// - Important: Used by one task at a time: the attempt of ``EtcdClient/watch(prefix:fromRevision:timeout:)`` that
///   reads the first message (a child task of the attempt's deadline), then, once that attempt has returned, the
///   stream's task only.
// @unchecked: `iterator`, `splitter`, `ready`, `early` and `ended` are used by one task at a time, as said above: the
// attempt hands the value over by returning it, and never touches it after.
final class EtcdWatchBody: @unchecked Sendable {
    /// The gateway path and the member, for errors.
    let operation: String
    let endpoint: String
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private var splitter = EtcdMessageSplitter()
    /// Messages cut from the body and not decoded yet.
    private var ready: [[UInt8]] = []
    /// Events that came with the created message (none from etcd 3.4; kept in case).
    private var early: [EtcdWatchEvent] = []
    private var ended = false

    init(operation: String, endpoint: String, body: HTTPClientResponse.Body) {
        self.operation = operation
        self.endpoint = endpoint
        iterator = body.makeAsyncIterator()
    }

    /// Reads up to the first message, which must confirm the watch (`created: true`).
    func awaitCreated() async throws {
        guard let message = try await nextMessage() else {
            throw error(.watchEnded("the stream ended before etcd confirmed the watch"))
        }
        let (created, events) = try decode(message)
        guard created else { throw error(.malformedResponse("the first message is not `created`")) }
        early = events
    }

    /// Yields every event until the stream ends, then finishes the stream with the reason; finishes it quietly when
    /// its consumer went away (the task was cancelled).
    func pump(into continuation: AsyncThrowingStream<EtcdWatchEvent, any Error>.Continuation) async {
        do {
            for event in Self.marked(early) { continuation.yield(event) }
            early = []
            while let message = try await nextMessage() {
                for event in Self.marked(try decode(message).events) { continuation.yield(event) }
            }
            continuation.finish(throwing: error(.watchEnded("the member closed it")))
        } catch {
            if Task.isCancelled {
                continuation.finish()
            } else {
                continuation.finish(
                    throwing: (error as? EtcdError) ?? self.error(.watchEnded(EtcdClient.describe(error)))
                )
            }
        }
    }

    /// One message's events, the last marked as such (``EtcdWatchEvent/endsMessage``).
    static func marked(_ events: [EtcdWatchEvent]) -> [EtcdWatchEvent] {
        events.indices.map { index in
            var event = events[index]
            event.endsMessage = index == events.count - 1
            return event
        }
    }

    /// The next whole message, `nil` at the end of the body.
    private func nextMessage() async throws -> [UInt8]? {
        while ready.isEmpty {
            if ended { return nil }
            if let buffer = try await iterator.next() {
                ready = try splitter.append(buffer)
            } else {
                ended = true
                ready = splitter.finish().map { [$0] } ?? []
            }
        }
        return ready.removeFirst()
    }

    /// A message's events, and whether it is the one that confirms the watch; throws when it cancels the watch or
    /// carries an error.
    private func decode(_ message: [UInt8]) throws -> (created: Bool, events: [EtcdWatchEvent]) {
        let decoded = try EtcdWire.decode(
            EtcdWire.StreamMessage<EtcdWire.WatchResponse>.self,
            message,
            operation: operation,
            endpoint: endpoint
        )
        if let failure = decoded.error {
            throw error(.server(code: failure.grpc_code, message: failure.message ?? "", httpStatus: failure.http_code))
        }
        guard let result = decoded.result else { throw error(.malformedResponse("no result")) }
        if result.canceled == true {
            throw error(
                .watchCanceled(compactRevision: result.compact_revision?.value ?? 0, reason: result.cancel_reason ?? "")
            )
        }
        return (result.created == true, (result.events ?? []).map(\.watchEvent))
    }

    private func error(_ reason: EtcdError.Reason) -> EtcdError {
        EtcdError(operation: operation, endpoint: endpoint, reason: reason)
    }
}

/// Cuts the body of a streaming RPC into its messages: the gateway writes one JSON object a line, each followed by
/// `\n`, and a read may end anywhere, so a message may span several buffers and a buffer may hold several messages.
///
/// - Important: A value; not to be shared while it is being fed.
struct EtcdMessageSplitter: Sendable {
    /// Longest message kept: past it, ``append(_:)`` throws (a runaway stream must not take all the memory).
    let maximumMessageSize: Int
    /// The start of a message whose end has not come yet.
    private var pending: [UInt8] = []

    /// A splitter that accepts messages of up to `maximumMessageSize` bytes.
    init(maximumMessageSize: Int = 64 << 20) {
        self.maximumMessageSize = maximumMessageSize
    }

    /// Takes in `buffer` and returns the messages it completed, in order (blank lines skipped).
    mutating func append(_ buffer: ByteBuffer) throws(EtcdMessageSplitter.Overflow) -> [[UInt8]] {
        var messages: [[UInt8]] = []
        var rest = buffer.readableBytesView[...]
        while let newline = rest.firstIndex(of: UInt8(ascii: "\n")) {
            pending.append(contentsOf: rest[..<newline])
            if pending.contains(where: { !Self.isBlank($0) }) { messages.append(pending) }
            pending.removeAll(keepingCapacity: true)
            rest = rest[rest.index(after: newline)...]
        }
        pending.append(contentsOf: rest)
        guard pending.count <= maximumMessageSize else { throw Overflow(size: pending.count) }
        return messages
    }

    /// What is left at the end of the stream: a last message without its newline, if any.
    mutating func finish() -> [UInt8]? {
        defer { pending.removeAll() }
        return pending.contains(where: { !Self.isBlank($0) }) ? pending : nil
    }

    /// A message longer than ``maximumMessageSize``.
    struct Overflow: Error, CustomStringConvertible, Sendable {
        var size: Int
        var description: String { "a message longer than the limit (\(size) bytes so far)" }
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\t")
    }
}
