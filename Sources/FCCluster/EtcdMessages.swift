import Foundation

/// A key as etcd stores it (`mvccpb.KeyValue`), as ``EtcdClient/range(prefix:timeout:)`` returns it.
///
/// - Important: A value; thread-safe.
struct EtcdKeyValue: Sendable, Hashable {
    /// The key, its bytes read as UTF-8 (the keys of cluster mode are text; other bytes read as U+FFFD).
    var key: String
    /// The value's bytes (empty when etcd sent none: proto3 JSON leaves out empty fields).
    var value: [UInt8]
    /// The revision of the put that created the key: the order of claims (the oldest first).
    var createRevision: Int64
    /// The revision of the key's last put.
    var modRevision: Int64
    /// How many puts the key had since it was created (1 for a new key).
    var version: Int64
    /// The lease the key is attached to (0: none); it is deleted when the lease expires or is revoked.
    var lease: Int64
}

/// One change a watch reported (``EtcdClient/watch(prefix:fromRevision:timeout:)``).
///
/// - Important: A value; thread-safe.
struct EtcdWatchEvent: Sendable, Hashable {
    /// What happened to the key.
    enum EventType: Sendable, Hashable {
        /// The key was created or changed (etcd leaves the type out for a put: proto3's default).
        case put
        /// The key was deleted: by a delete, or by the expiry or revocation of its lease.
        case delete
    }

    /// Put or delete.
    var type: EventType
    /// The key, its bytes read as UTF-8 (as ``EtcdKeyValue/key``).
    var key: String
    /// The value put (empty for a delete).
    var value: [UInt8]
    /// The revision that created the key; 0 for a delete (etcd sends only the key and the revision of the delete).
    var createRevision: Int64
    /// The revision of this change.
    var modRevision: Int64
    /// The key's lease (0 for a delete, or a key without lease).
    var lease: Int64
    /// No other event of the same watch message follows: etcd sends all the changes of one revision (a lease's
    /// expiry deleting all its keys, a `del --prefix`) in one message, so a revision's changes end no earlier.
    var endsMessage = true
}

/// A call of ``EtcdClient`` that failed: which call (its gateway path), which member answered if one did, and why.
///
/// - Important: A value; thread-safe.
struct EtcdError: Error, CustomStringConvertible, Sendable {
    /// Why the call failed.
    enum Reason: Sendable, Hashable {
        /// etcd answered with an error: its gRPC code (5 `NOT_FOUND`, 3 `INVALID_ARGUMENT`, 14 `UNAVAILABLE`...),
        /// its message, and the HTTP status (`nil` for an error inside a 200 answer).
        case server(code: Int?, message: String, httpStatus: Int?)
        /// No member answered in time: what each endpoint met, in the order tried.
        case unavailable([Attempt])
        /// An answer that is not the JSON expected.
        case malformedResponse(String)
        /// etcd canceled the watch: its start revision was compacted (to `compactRevision`), or `reason`.
        case watchCanceled(compactRevision: Int64, reason: String)
        /// The watch's stream ended: the connection dropped, or the member closed it.
        case watchEnded(String)
    }

    /// One endpoint tried, and what it met.
    struct Attempt: Sendable, Hashable {
        var endpoint: String
        var failure: String
    }

    /// The gateway path of the call (`/v3/kv/put`).
    var operation: String
    /// The member that answered; `nil` when none did.
    var endpoint: String?
    /// Why it failed.
    var reason: Reason
    /// The call's bound, for ``Reason/unavailable(_:)``.
    var timeout: Duration?

    /// The error of `operation`.
    init(operation: String, endpoint: String?, reason: Reason, timeout: Duration? = nil) {
        self.operation = operation
        self.endpoint = endpoint
        self.reason = reason
        self.timeout = timeout
    }

    /// etcd's gRPC code, when etcd answered with an error.
    var code: Int? {
        guard case .server(let code, _, _) = reason else { return nil }
        return code
    }

    /// etcd said `NOT_FOUND`: the lease is gone (a put with it, a revoke).
    var isNotFound: Bool { code == 5 }

    /// Whether another member could answer better: no answer, no etcd answer, or one that says this member cannot
    /// serve now (`UNAVAILABLE`: no leader, request timed out; `DEADLINE_EXCEEDED`; and the gateway's own timeout,
    /// `UNKNOWN` "context deadline exceeded", which a grant on a member without quorum gets after 7 s).
    var isRetriable: Bool {
        switch reason {
        case .server(let code, let message, _):
            code == nil || code == 14 || code == 4 || (code == 2 && message.contains("context deadline exceeded"))
        case .unavailable, .malformedResponse, .watchEnded: true
        case .watchCanceled: false
        }
    }

    var description: String {
        let place = "etcd \(operation)" + (endpoint.map { " at \($0)" } ?? "")
        switch reason {
        case .server(let code, let message, let status):
            let details = [code.map { "gRPC code \($0)" }, status.map { "HTTP \($0)" }].compactMap { $0 }
            return "\(place): \(message)" + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))")
        case .unavailable(let attempts):
            let within = timeout.map { " within \($0)" } ?? ""
            let tried = attempts.map { "\($0.endpoint): \($0.failure)" }.joined(separator: "; ")
            return "\(place): no member served it\(within)" + (attempts.isEmpty ? " (no endpoints)" : ": \(tried)")
        case .malformedResponse(let detail):
            return "\(place): unexpected answer: \(detail)"
        case .watchCanceled(let compactRevision, let reason):
            let compacted = compactRevision > 0 ? "history compacted to revision \(compactRevision)" : ""
            return "\(place): the watch was canceled: "
                + ([compacted, reason].filter { !$0.isEmpty }.joined(separator: ", "))
        case .watchEnded(let detail):
            return "\(place): the watch's stream ended: \(detail)"
        }
    }
}

/// The JSON of etcd 3.4's gRPC gateway (`/v3/...` on the client port): proto3 JSON with the `.proto` field names
/// (the properties below are named after them), bytes as base64 strings, 64-bit integers as decimal strings, and
/// fields at their default (0, false, empty) left out.
///
/// - Important: Values and pure functions; thread-safe.
enum EtcdWire {
    /// A 64-bit integer, sent as a decimal string; read from a string or a number.
    struct Int64Text: Codable, Sendable, Hashable {
        var value: Int64

        /// The text of `value`.
        init(_ value: Int64) { self.value = value }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self), let value = Int64(text) {
                self.value = value
            } else {
                value = try container.decode(Int64.self)
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(String(value))
        }
    }

    /// Every response's `header`: `{"cluster_id": "…", "member_id": "…", "revision": "5", "raft_term": "2"}`; only
    /// its revision is used.
    struct Header: Decodable, Sendable {
        var revision: Int64Text?
    }

    /// What a non-2xx answer carries: `{"error": "...", "message": "...", "code": 5}` (`code` is the gRPC code).
    struct ErrorBody: Decodable, Sendable {
        var error: String?
        var message: String?
        var code: Int?
    }

    /// An error inside a stream's body (with status 503 when it comes first): `{"error": {"grpc_code": 14,
    /// "http_code": 503, "message": "etcdserver: no leader", "http_status": "Service Unavailable"}}`.
    struct StreamError: Decodable, Sendable {
        var grpc_code: Int?
        var http_code: Int?
        var message: String?
    }

    /// One message of a streaming RPC (keepalive, watch): one JSON object a line, `{"result": {...}}` or
    /// `{"error": {...}}`.
    struct StreamMessage<Result: Decodable & Sendable>: Decodable, Sendable {
        var result: Result?
        var error: StreamError?
    }

    /// `POST /v3/lease/grant` `{"TTL": "5"}`.
    struct LeaseGrantRequest: Encodable, Sendable {
        var TTL: Int64Text
    }

    /// `{"header": {...}, "ID": "7587869482914400262", "TTL": "5"}`; `error` is set (in a 200) when the grant
    /// failed.
    struct LeaseGrantResponse: Decodable, Sendable {
        var ID: Int64Text?
        var TTL: Int64Text?
        var error: String?
    }

    /// `POST /v3/lease/keepalive` and `/v3/lease/revoke`: `{"ID": "..."}`.
    struct LeaseRequest: Encodable, Sendable {
        var ID: Int64Text
    }

    /// One keepalive answer, `{"header": {...}, "ID": "…", "TTL": "5"}`; `TTL` is left out (0) when the lease is
    /// gone.
    struct LeaseKeepAliveResponse: Decodable, Sendable {
        var ID: Int64Text?
        var TTL: Int64Text?
    }

    /// `POST /v3/lease/timetolive`'s answer, `{"header": {...}, "ID": "…", "TTL": "4", "grantedTTL": "5"}`; `TTL` is
    /// `"-1"` for a lease that is gone.
    struct LeaseTimeToLiveResponse: Decodable, Sendable {
        var ID: Int64Text?
        var TTL: Int64Text?
    }

    /// A response of which only the header is read (put, delete, revoke).
    struct HeaderResponse: Decodable, Sendable {
        var header: Header?
    }

    /// `POST /v3/kv/put`.
    struct PutRequest: Encodable, Sendable {
        var key: Data
        var value: Data
        var lease: Int64Text?
    }

    /// `POST /v3/kv/range`, sorted by create revision, oldest first.
    struct RangeRequest: Encodable, Sendable {
        var key: Data
        var range_end: Data
        var sort_order = "ASCEND"
        var sort_target = "CREATE"
    }

    /// `{"header": {...}, "kvs": [...], "count": "2"}`; `kvs` and `count` are left out when nothing matched.
    struct RangeResponse: Decodable, Sendable {
        var header: Header?
        var kvs: [KeyValue]?
    }

    /// `mvccpb.KeyValue`: `{"key": "L2ZjL2E=", "create_revision": "2", "mod_revision": "2", "version": "1",
    /// "value": "eA==", "lease": "12345"}`; a delete event's has only `key` and `mod_revision`.
    struct KeyValue: Decodable, Sendable {
        var key: Data?
        var value: Data?
        var create_revision: Int64Text?
        var mod_revision: Int64Text?
        var version: Int64Text?
        var lease: Int64Text?

        var keyValue: EtcdKeyValue {
            EtcdKeyValue(
                key: key.map { String(decoding: $0, as: UTF8.self) } ?? "",
                value: value.map { Array($0) } ?? [],
                createRevision: create_revision?.value ?? 0,
                modRevision: mod_revision?.value ?? 0,
                version: version?.value ?? 0,
                lease: lease?.value ?? 0
            )
        }
    }

    /// `POST /v3/kv/deleterange` of one key.
    struct DeleteRequest: Encodable, Sendable {
        var key: Data
        /// With a range end: every key in `[key, range_end)`.
        var range_end: Data?
    }

    /// `POST /v3/watch`: the one request of the stream.
    struct WatchRequest: Encodable, Sendable {
        var create_request: WatchCreateRequest
    }

    /// The keys `[key, range_end)` from `start_revision` (0: from the next change).
    struct WatchCreateRequest: Encodable, Sendable {
        var key: Data
        var range_end: Data
        var start_revision: Int64Text
    }

    /// One message of a watch: the first has `created: true` and no events; a canceled watch (a compacted start
    /// revision) has `canceled: true` and `compact_revision`.
    struct WatchResponse: Decodable, Sendable {
        var header: Header?
        var created: Bool?
        var canceled: Bool?
        var compact_revision: Int64Text?
        var cancel_reason: String?
        var events: [Event]?
    }

    /// `{"type": "DELETE", "kv": {...}}`; `type` is left out for a put.
    struct Event: Decodable, Sendable {
        var type: String?
        var kv: KeyValue?

        var watchEvent: EtcdWatchEvent {
            let keyValue = kv?.keyValue
            return EtcdWatchEvent(
                type: type == "DELETE" ? .delete : .put,
                key: keyValue?.key ?? "",
                value: keyValue?.value ?? [],
                createRevision: keyValue?.createRevision ?? 0,
                modRevision: keyValue?.modRevision ?? 0,
                lease: keyValue?.lease ?? 0
            )
        }
    }

    /// `GET /health`: `{"health": "true"}` (`"false"`, with status 503, when the member has no leader).
    struct HealthResponse: Decodable, Sendable {
        var health: String?
    }

    // MARK: - Coding

    /// `value` as JSON.
    static func encode(_ value: some Encodable) throws -> [UInt8] {
        Array(try JSONEncoder().encode(value))
    }

    /// `bytes` as a `Value`, or ``EtcdError/Reason/malformedResponse(_:)``.
    static func decode<Value: Decodable>(
        _ type: Value.Type,
        _ bytes: [UInt8],
        operation: String,
        endpoint: String
    ) throws -> Value {
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw EtcdError(
                operation: operation,
                endpoint: endpoint,
                reason: .malformedResponse("\(error) in \(excerpt(bytes))")
            )
        }
    }

    /// Throws etcd's error when `status` is not 2xx: from its JSON (``ErrorBody``, or a stream's ``StreamError``),
    /// or the body's text.
    static func check(status: UInt, _ bytes: [UInt8], operation: String, endpoint: String) throws {
        guard !(200..<300).contains(status) else { return }
        let data = Data(bytes)
        var code: Int?
        var message = excerpt(bytes)
        if let body = try? JSONDecoder().decode(ErrorBody.self, from: data) {
            (code, message) = (body.code, body.message ?? body.error ?? message)
        } else if let error = (try? JSONDecoder().decode(StreamMessage<HeaderResponse>.self, from: data))?.error {
            (code, message) = (error.grpc_code, error.message ?? message)
        }
        throw EtcdError(
            operation: operation,
            endpoint: endpoint,
            reason: .server(code: code, message: message, httpStatus: Int(status))
        )
    }

    /// The header's revision, which every answer but health's has.
    static func revision(_ header: Header?, operation: String, endpoint: String) throws -> Int64 {
        guard let revision = header?.revision?.value else {
            throw EtcdError(operation: operation, endpoint: endpoint, reason: .malformedResponse("no header revision"))
        }
        return revision
    }

    /// The range of keys starting with `prefix`: `prefix` itself, and `prefix` with its last byte below 0xff
    /// incremented (the 0xff bytes after it dropped); `[0]` as the end (every key from `prefix` on) for an all-0xff
    /// prefix, and `[0], [0]` (every key) for an empty one.
    static func prefixRange(_ prefix: [UInt8]) -> (key: [UInt8], end: [UInt8]) {
        var end = prefix
        while let last = end.last {
            if last < 0xff {
                end[end.count - 1] = last + 1
                return (prefix, end)
            }
            end.removeLast()
        }
        return (prefix.isEmpty ? [0] : prefix, [0])
    }

    /// The start of a body, as text, for errors.
    static func excerpt(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes.prefix(300), as: UTF8.self)
        return bytes.count > 300 ? text + "…" : text
    }
}
