import AsyncHTTPClient
import FCToolkit
import Foundation
import NIOCore
import NIOHTTP1

/// The few etcd v3 calls cluster mode makes (leases, put, range, delete, watch), over etcd 3.4's JSON gateway
/// (`/v3/...` on each member's client port) through an `HTTPClient` the caller owns and shuts down.
///
/// Each call tries the endpoints in turn, the one that last answered first, until one answers; the call's
/// `timeout` bounds the whole of it, and each endpoint tried gets an equal share of what is left of it, so that a
/// member that hangs (stopped, partitioned) costs only its share, and one that is down fails at once (with an HTTP
/// client made with ``httpClientConfiguration``). An answer of etcd's that is about the request (a lease not found,
/// a bad argument) is thrown as it is, without trying the other members; one that says the member cannot serve (no
/// leader, request timed out: ``EtcdError/isRetriable``) moves on to the next. When no endpoint answered, the
/// ``EtcdError`` names each and what it met.
///
/// A call that timed out may still have been applied (a put, a grant): callers treat their writes as idempotent.
///
/// - Important: Thread-safe: every call may be made from any task, concurrently. The only mutable state is the
///   index of the endpoint that last answered, under a lock.
struct EtcdClient: Sendable {
    /// The bound of a call when the caller gives none.
    static let defaultTimeout: Duration = .seconds(2)
    /// Largest body read from a unary answer.
    static let maximumBodySize = 64 << 20

    /// The HTTP client every request goes through (its owner shuts it down, after the last call).
    let httpClient: HTTPClient
    /// The members' client URLs, `http://HOST:PORT`, without a trailing slash.
    let endpoints: [String]
    /// The index in ``endpoints`` of the one that last answered: tried first.
    private let lastAnswered = Locked(0)

    /// The configuration of the `HTTPClient` to give the client: a member that is down (connection refused) fails
    /// at once instead of being connected to again until the attempt's deadline (AsyncHTTPClient's default), no
    /// read timeout (a watch is quiet while nothing changes), no redirects. Idle connections: at most 8 per member,
    /// for a minute (AsyncHTTPClient's defaults, stated here because fc-load's descriptor check counts on them).
    static var httpClientConfiguration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 8)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout = .init(connect: .seconds(1), read: nil)
        configuration.redirectConfiguration = .disallow
        return configuration
    }

    /// A client of the members at `endpoints` (`"http://127.0.0.1:2379"`), through `httpClient`, best made with
    /// ``httpClientConfiguration``.
    init(httpClient: HTTPClient, endpoints: [String]) {
        self.httpClient = httpClient
        self.endpoints = endpoints.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    // MARK: - Leases

    /// Grants a lease of `ttlSeconds`; returns its id and the TTL etcd gave it, which may be longer than asked
    /// (etcd's minimum is 1.5 election timeouts, rounded up: 2 s with the default 1 s election timeout).
    func grantLease(ttlSeconds: Int64, timeout: Duration = defaultTimeout) async throws -> (id: Int64, ttl: Int64) {
        let path = "/v3/lease/grant"
        let response = try await post(
            path,
            EtcdWire.LeaseGrantRequest(TTL: .init(ttlSeconds)),
            as: EtcdWire.LeaseGrantResponse.self,
            timeout: timeout
        )
        if let error = response.value.error {
            throw EtcdError(
                operation: path,
                endpoint: response.endpoint,
                reason: .server(code: nil, message: error, httpStatus: nil)
            )
        }
        guard let id = response.value.ID?.value, let ttl = response.value.TTL?.value else {
            throw EtcdError(
                operation: path,
                endpoint: response.endpoint,
                reason: .malformedResponse("no ID or TTL in the grant")
            )
        }
        return (id, ttl)
    }

    /// Renews the lease `lease` once; returns the TTL the server reports, 0 when the lease is gone (expired or
    /// revoked: etcd answers without a TTL).
    ///
    /// `keepalive` is a streaming RPC: a POST of one request gets one message (`{"result": {...}}` and a newline,
    /// chunked) and the response ends when the gateway sees the request's end.
    func keepAliveOnce(lease: Int64, timeout: Duration = defaultTimeout) async throws -> Int64 {
        let path = "/v3/lease/keepalive"
        let body = try EtcdWire.encode(EtcdWire.LeaseRequest(ID: .init(lease)))
        return try await withEndpoints(path, timeout: timeout) { endpoint, deadline in
            let (status, bytes) = try await exchange(.POST, endpoint + path, body: body, deadline: deadline)
            try EtcdWire.check(status: status, bytes, operation: path, endpoint: endpoint)
            var splitter = EtcdMessageSplitter()
            guard let line = try splitter.append(ByteBuffer(bytes: bytes)).first ?? splitter.finish() else {
                throw EtcdError(operation: path, endpoint: endpoint, reason: .malformedResponse("an empty stream"))
            }
            let message = try EtcdWire.decode(
                EtcdWire.StreamMessage<EtcdWire.LeaseKeepAliveResponse>.self,
                line,
                operation: path,
                endpoint: endpoint
            )
            if let error = message.error {
                throw EtcdError(
                    operation: path,
                    endpoint: endpoint,
                    reason: .server(code: error.grpc_code, message: error.message ?? "", httpStatus: error.http_code)
                )
            }
            guard let result = message.result else {
                throw EtcdError(operation: path, endpoint: endpoint, reason: .malformedResponse("no result"))
            }
            return result.TTL?.value ?? 0
        }
    }

    /// The time to live left to the lease `id`, in seconds; negative when the lease is gone (expired or revoked: etcd
    /// answers `-1`). 0 is a lease about to expire or be renewed, not yet gone.
    func leaseTimeToLive(_ id: Int64, timeout: Duration = defaultTimeout) async throws -> Int64 {
        let path = "/v3/lease/timetolive"
        let response = try await post(
            path,
            EtcdWire.LeaseRequest(ID: .init(id)),
            as: EtcdWire.LeaseTimeToLiveResponse.self,
            timeout: timeout
        )
        guard let ttl = response.value.TTL?.value else {
            throw EtcdError(operation: path, endpoint: response.endpoint, reason: .malformedResponse("no TTL"))
        }
        return ttl
    }

    /// Revokes the lease `id`, deleting its keys; returns `false` when it was already gone (etcd's `NOT_FOUND`,
    /// also the answer to a revoke retried after one that timed out but was applied).
    @discardableResult
    func revokeLease(_ id: Int64, timeout: Duration = defaultTimeout) async throws -> Bool {
        do {
            _ = try await post(
                "/v3/lease/revoke",
                EtcdWire.LeaseRequest(ID: .init(id)),
                as: EtcdWire.HeaderResponse.self,
                timeout: timeout
            )
            return true
        } catch let error as EtcdError where error.isNotFound {
            return false
        }
    }

    // MARK: - Keys

    /// Puts `value` at `key`, attached to `lease` (0: none); returns the revision of the put, which is the key's
    /// create revision when the key is new. Throws with ``EtcdError/isNotFound`` when the lease is gone.
    @discardableResult
    func put(key: [UInt8], value: [UInt8], lease: Int64 = 0, timeout: Duration = defaultTimeout) async throws -> Int64 {
        let path = "/v3/kv/put"
        let request = EtcdWire.PutRequest(key: Data(key), value: Data(value), lease: lease == 0 ? nil : .init(lease))
        let response = try await post(path, request, as: EtcdWire.HeaderResponse.self, timeout: timeout)
        return try EtcdWire.revision(response.value.header, operation: path, endpoint: response.endpoint)
    }

    /// ``put(key:value:lease:timeout:)`` of a key given as UTF-8 text.
    @discardableResult
    func put(key: String, value: [UInt8], lease: Int64 = 0, timeout: Duration = defaultTimeout) async throws -> Int64 {
        try await put(key: Array(key.utf8), value: value, lease: lease, timeout: timeout)
    }

    /// Every key that starts with `prefix` (all keys for an empty one), the oldest (lowest create revision) first,
    /// and the store's revision they were read at (a watch from `revision + 1` misses nothing after them).
    func range(
        prefix: [UInt8],
        timeout: Duration = defaultTimeout
    ) async throws -> (revision: Int64, kvs: [EtcdKeyValue]) {
        let path = "/v3/kv/range"
        let (key, end) = EtcdWire.prefixRange(prefix)
        let request = EtcdWire.RangeRequest(key: Data(key), range_end: Data(end))
        let response = try await post(path, request, as: EtcdWire.RangeResponse.self, timeout: timeout)
        let revision = try EtcdWire.revision(response.value.header, operation: path, endpoint: response.endpoint)
        // Sorted by etcd already; sorted again so that the order does not rest on the server alone.
        let kvs = (response.value.kvs ?? []).map(\.keyValue).sorted { $0.createRevision < $1.createRevision }
        return (revision, kvs)
    }

    /// ``range(prefix:timeout:)`` of a prefix given as UTF-8 text.
    func range(
        prefix: String,
        timeout: Duration = defaultTimeout
    ) async throws -> (revision: Int64, kvs: [EtcdKeyValue]) {
        try await range(prefix: Array(prefix.utf8), timeout: timeout)
    }

    /// Deletes `key` (nothing when it does not exist); returns the store's revision after it.
    @discardableResult
    func delete(key: [UInt8], timeout: Duration = defaultTimeout) async throws -> Int64 {
        let path = "/v3/kv/deleterange"
        let response = try await post(
            path,
            EtcdWire.DeleteRequest(key: Data(key)),
            as: EtcdWire.HeaderResponse.self,
            timeout: timeout
        )
        return try EtcdWire.revision(response.value.header, operation: path, endpoint: response.endpoint)
    }

    /// ``delete(key:timeout:)`` of a key given as UTF-8 text.
    @discardableResult
    func delete(key: String, timeout: Duration = defaultTimeout) async throws -> Int64 {
        try await delete(key: Array(key.utf8), timeout: timeout)
    }

    /// Deletes every key in `[from, to)`; returns the store's revision after it.
    @discardableResult
    func delete(from: String, to end: String, timeout: Duration = defaultTimeout) async throws -> Int64 {
        let path = "/v3/kv/deleterange"
        let response = try await post(
            path,
            EtcdWire.DeleteRequest(key: Data(from.utf8), range_end: Data(end.utf8)),
            as: EtcdWire.HeaderResponse.self,
            timeout: timeout
        )
        return try EtcdWire.revision(response.value.header, operation: path, endpoint: response.endpoint)
    }

    /// Deletes every key that starts with `prefix` (not empty); returns the store's revision after it.
    @discardableResult
    func delete(prefix: String, timeout: Duration = defaultTimeout) async throws -> Int64 {
        precondition(!prefix.isEmpty, "a delete of every key")
        let path = "/v3/kv/deleterange"
        let (key, end) = EtcdWire.prefixRange(Array(prefix.utf8))
        let response = try await post(
            path,
            EtcdWire.DeleteRequest(key: Data(key), range_end: Data(end)),
            as: EtcdWire.HeaderResponse.self,
            timeout: timeout
        )
        return try EtcdWire.revision(response.value.header, operation: path, endpoint: response.endpoint)
    }

    // MARK: - Health

    /// Whether the member at `endpoint` (one of ``endpoints`` or any other) is healthy: `GET /health` answers
    /// `{"health":"true"}`. `false` when it answers otherwise (`"false"` while it has no leader); throws when it
    /// does not answer within `timeout`.
    func health(of endpoint: String, timeout: Duration = defaultTimeout) async throws -> Bool {
        let path = "/health"
        do {
            let deadline = ContinuousClock.now + timeout
            let (_, bytes) = try await Self.within(deadline) {
                try await exchange(.GET, endpoint + path, body: nil, deadline: deadline)
            }
            let answer = try? JSONDecoder().decode(EtcdWire.HealthResponse.self, from: Data(bytes))
            return answer?.health == "true"
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw EtcdError(
                operation: path,
                endpoint: nil,
                reason: .unavailable([.init(endpoint: endpoint, failure: Self.describe(error))]),
                timeout: timeout
            )
        }
    }

    // MARK: - Requests

    /// POSTs `request` as JSON to `path` on the endpoints in turn and decodes the first usable answer.
    func post<Request: Encodable & Sendable, Response: Decodable & Sendable>(
        _ path: String,
        _ request: Request,
        as type: Response.Type,
        timeout: Duration
    ) async throws -> (value: Response, endpoint: String) {
        let body = try EtcdWire.encode(request)
        return try await withEndpoints(path, timeout: timeout) { endpoint, deadline in
            let (status, bytes) = try await exchange(.POST, endpoint + path, body: body, deadline: deadline)
            try EtcdWire.check(status: status, bytes, operation: path, endpoint: endpoint)
            return (try EtcdWire.decode(type, bytes, operation: path, endpoint: endpoint), endpoint)
        }
    }

    /// Runs `attempt` against each endpoint in turn (the last that answered first), each bounded by its share of
    /// what is left of `timeout`, until one succeeds or throws an error that another member would repeat.
    func withEndpoints<Value: Sendable>(
        _ operation: String,
        timeout: Duration,
        _ attempt: @escaping @Sendable (_ endpoint: String, _ deadline: ContinuousClock.Instant) async throws -> Value
    ) async throws -> Value {
        let deadline = ContinuousClock.now + timeout
        let first = lastAnswered.withLock { $0 }
        var failures: [EtcdError.Attempt] = []
        for offset in endpoints.indices {
            let index = (first + offset) % endpoints.count
            let endpoint = endpoints[index]
            let left = deadline - .now
            guard left > .zero else {
                failures.append(.init(endpoint: endpoint, failure: "not tried: no time left"))
                continue
            }
            do {
                let end = ContinuousClock.now + left / (endpoints.count - offset)
                let result = try await Self.within(end) { try await attempt(endpoint, end) }
                lastAnswered.withLock { $0 = index }
                return result
            } catch let error as EtcdError where !error.isRetriable {
                lastAnswered.withLock { $0 = index }
                throw error
            } catch {
                if Task.isCancelled { throw CancellationError() }
                failures.append(.init(endpoint: endpoint, failure: Self.describe(error)))
            }
        }
        throw EtcdError(operation: operation, endpoint: nil, reason: .unavailable(failures), timeout: timeout)
    }

    /// One request and its whole answer, its head due by `deadline` (``within(_:_:)`` bounds the rest).
    func exchange(
        _ method: HTTPMethod,
        _ url: String,
        body: [UInt8]?,
        deadline: ContinuousClock.Instant
    ) async throws -> (status: UInt, body: [UInt8]) {
        let request = Self.request(method, url, body: body)
        let response = try await httpClient.execute(request, deadline: Self.nioDeadline(deadline))
        let collected = try await response.body.collect(upTo: Self.maximumBodySize)
        return (response.status.code, Array(collected.readableBytesView))
    }

    /// A request with a JSON body (none for a GET).
    static func request(_ method: HTTPMethod, _ url: String, body: [UInt8]?) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        return request
    }

    /// Runs `operation`, cancelling it at `deadline` (AsyncHTTPClient's own deadline ends with the response's head;
    /// this one also covers its body).
    static func within<Value: Sendable>(
        _ deadline: ContinuousClock.Instant,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let result = first else { throw DeadlinePassed() }
            return result
        }
    }

    /// `deadline` on NIO's clock.
    static func nioDeadline(_ deadline: ContinuousClock.Instant) -> NIODeadline {
        let (seconds, attoseconds) = max(deadline - .now, .zero).components
        return .now() + .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// An attempt that did not finish by its deadline.
    struct DeadlinePassed: Error, CustomStringConvertible, Sendable {
        var description: String { "no answer in time" }
    }

    /// An error as an attempt's failure: etcd's message and code, or the transport's error.
    static func describe(_ error: any Error) -> String {
        if let error = error as? EtcdError, case .server(let code, let message, _) = error.reason {
            return "\(message)\(code.map { " (code \($0))" } ?? "")"
        }
        return String(describing: error)
    }
}
