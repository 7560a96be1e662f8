import AsyncHTTPClient

/// A bare etcd round trip through cluster mode's own client (``EtcdClient``: AsyncHTTPClient on etcd's JSON gateway,
/// made as ``ClusterHost`` makes it): a put, and its event's arrival on a watch of the same keys. The baseline of
/// the cluster benchmarks (Benchmarks/, `EndToEnd.cluster.bareEtcdPutWatch`), against which a recall across hosts is
/// compared; the daemon does not use it. SPI, not API: `@_spi(Benchmarks) import FCCluster`.
///
/// - Important: One caller at a time (the benchmark's own loop): ``roundTrip()`` reads the watch's events in order.
// @unchecked: `events` and `puts` are used by one caller at a time, as said above; the rest is immutable.
@_spi(Benchmarks)
public final class EtcdRoundTrip: @unchecked Sendable {
    private let httpClient: HTTPClient
    private let client: EtcdClient
    private let key: String
    private var events: AsyncThrowingStream<EtcdWatchEvent, any Error>.AsyncIterator
    private var puts = 0

    /// A client of the members at `endpoints` watching the keys under `prefix` from the store's revision now on, so
    /// that no put after this returns is missed. ``shutdown()`` ends it.
    public init(endpoints: [String], prefix: String) async throws {
        let httpClient = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: EtcdClient.httpClientConfiguration
        )
        let client = EtcdClient(httpClient: httpClient, endpoints: endpoints)
        do {
            let now = try await client.range(prefix: prefix).revision
            self.events = client.watch(prefix: prefix, fromRevision: now + 1).makeAsyncIterator()
        } catch {
            try? await httpClient.shutdown()
            throw error
        }
        self.httpClient = httpClient
        self.client = client
        self.key = prefix + "round-trip"
        // The watch is opened by its stream's task: one round trip waits until it is (its event arrives).
        try await roundTrip()
    }

    /// Puts a new value at the key and returns once the watch has delivered that put's event.
    public func roundTrip() async throws {
        puts += 1
        let revision = try await client.put(key: key, value: Array("\(puts)".utf8))
        while let event = try await events.next() {
            if event.modRevision >= revision { return }
        }
        throw EtcdError(
            operation: "/v3/watch",
            endpoint: nil,
            reason: .watchEnded("the watch ended before the put's event")
        )
    }

    /// Ends the watch and shuts the HTTP client down.
    public func shutdown() async throws {
        try await httpClient.shutdown()
    }
}
