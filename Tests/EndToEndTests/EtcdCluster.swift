// A real etcd cluster for the tests of cluster mode: N `etcd` members on 127.0.0.1, on ports the kernel chose, each
// with its data folder and its log under a folder the test owns, killed (and waited for) by `shutdown()` whatever the
// test does.
//
// etcd must be installed (Debian's etcd-server; CI installs it): without it, starting a cluster fails with a message
// that says so, and the test fails. It never skips.

import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// N etcd members on 127.0.0.1, started together as a new cluster (`--initial-cluster-state new`, a token of their
/// own) and healthy (every member answers `GET /health` with `{"health":"true"}`) when ``start(members:in:heartbeat:
/// electionTimeout:timeout:)`` returns.
///
/// Members are numbered from 0 in ``members`` and ``clientEndpoints``. A member can be killed (SIGKILL), stopped and
/// resumed (SIGSTOP, SIGCONT) and started again on its data. ``shutdown()`` kills every member and waits for them;
/// `deinit` calls it too, but a test calls it itself (in a `defer`) so that no member outlives it. The folder given
/// to `start` is the caller's to remove.
///
/// The lease TTL etcd grants is at least 1.5 election timeouts, rounded up to whole seconds: 2 s with the default
/// election timeout (1 s), 1 s with 500 ms.
///
/// - Important: Thread-safe.
// @unchecked: `processes` and `isShutDown` are read and written under `lock` only; everything else is immutable.
final class EtcdCluster: @unchecked Sendable {
    /// One member's name, ports and files.
    struct Member: Sendable {
        /// `m0`, `m1`, ...
        let name: String
        let clientPort: Int
        let peerPort: Int
        let dataDirectory: String
        /// Its standard output and error (etcd logs to standard error).
        let logPath: String

        /// `http://127.0.0.1:PORT`, for clients.
        var clientEndpoint: String { "http://127.0.0.1:\(clientPort)" }
        /// `http://127.0.0.1:PORT`, for the other members.
        var peerURL: String { "http://127.0.0.1:\(peerPort)" }
    }

    /// The folder of the members' data and logs.
    let directory: String
    /// The members, by number.
    let members: [Member]
    /// The members' client URLs (`http://127.0.0.1:PORT`), by member number.
    var clientEndpoints: [String] { members.map(\.clientEndpoint) }
    /// The cluster's `--initial-cluster-token`, unique to it.
    let token: String

    private let executable: URL
    private let arguments: [[String]]
    private let lock = NSLock()
    /// The members' processes, by number; a member started again replaces its entry.
    private var processes: [Process] = []
    private var isShutDown = false

    /// Starts `count` members with their data and logs under `directory` (created if needed) and waits until every
    /// one is healthy. Ports the kernel found free are taken again if another process takes one first ("address
    /// already in use": the whole cluster is started again, a few times at most).
    static func start(
        members count: Int = 3,
        in directory: String,
        heartbeat: Duration = .milliseconds(100),
        electionTimeout: Duration = .seconds(1),
        timeout: Duration = defaultTimeout
    ) async throws -> EtcdCluster {
        let executable = try locateEtcd()
        var collisions: [String] = []
        for attempt in 1...5 {
            let cluster = try EtcdCluster(
                executable: executable,
                count: count,
                directory: "\(directory)/etcd-\(attempt)",
                heartbeat: heartbeat,
                electionTimeout: electionTimeout
            )
            do {
                try cluster.launchAll()
                try await cluster.waitUntilHealthy(timeout: timeout)
                return cluster
            } catch let error as PortTaken {
                cluster.shutdown()
                collisions.append(error.description)
            } catch {
                cluster.shutdown()
                throw error
            }
        }
        throw HarnessError(description: "etcd: ports kept being taken: \(collisions.joined(separator: "; "))")
    }

    private init(
        executable: URL,
        count: Int,
        directory: String,
        heartbeat: Duration,
        electionTimeout: Duration
    ) throws {
        self.executable = executable
        self.directory = directory
        let token = "fc-e2e-\(getpid())-\(UUID().uuidString)"
        self.token = token
        let ports = try Self.freePorts(2 * count)
        let members = (0..<count).map { index in
            Member(
                name: "m\(index)",
                clientPort: ports[2 * index],
                peerPort: ports[2 * index + 1],
                dataDirectory: "\(directory)/m\(index).etcd",
                logPath: "\(directory)/m\(index).log"
            )
        }
        self.members = members
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let initialCluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
        arguments = members.map { member in
            [
                "--name", member.name, "--data-dir", member.dataDirectory,
                "--listen-client-urls", member.clientEndpoint, "--advertise-client-urls", member.clientEndpoint,
                "--listen-peer-urls", member.peerURL, "--initial-advertise-peer-urls", member.peerURL,
                "--initial-cluster", initialCluster, "--initial-cluster-token", token,
                "--initial-cluster-state", "new",
                "--heartbeat-interval", "\(Self.milliseconds(heartbeat))",
                "--election-timeout", "\(Self.milliseconds(electionTimeout))",
                "--logger", "zap", "--log-outputs", "stderr",
            ]
        }
    }

    deinit { shutdown() }

    // MARK: - Faults

    /// The pid of member `index` (its latest process).
    func pid(of index: Int) -> pid_t { lock.withLock { processes[index].processIdentifier } }

    /// Kills member `index` (SIGKILL) and waits until it has exited.
    func kill(member index: Int, timeout: Duration = defaultTimeout) async throws {
        let process = lock.withLock { processes[index] }
        if process.stillRuns { sendSignal(process.processIdentifier, SIGKILL) }
        try await eventually(timeout: timeout, "etcd member \(index) to exit") { !process.stillRuns }
    }

    /// Kills every member and waits for them (the folder stays: a member can be started again).
    func killAll(timeout: Duration = defaultTimeout) async throws {
        for index in members.indices { try await kill(member: index, timeout: timeout) }
    }

    /// Stops member `index` (SIGSTOP) and returns once every thread of it is stopped: it holds its connections and
    /// answers nothing, as a hung or partitioned member.
    func stop(member index: Int) async throws {
        try await stopProcess(pid(of: index))
    }

    /// Stops every member (``stop(member:)``): the cluster holds every connection and answers nothing.
    func stopAll() async throws {
        for index in members.indices { try await stop(member: index) }
    }

    /// Resumes member `index` after ``stop(member:)`` (SIGCONT).
    func resume(member index: Int) {
        sendSignal(pid(of: index), SIGCONT)
    }

    /// Resumes every member.
    func resumeAll() {
        for index in members.indices { resume(member: index) }
    }

    /// Starts member `index` again, after ``kill(member:timeout:)``, on its data (it rejoins the cluster), and
    /// waits until it is healthy.
    func restart(member index: Int, timeout: Duration = defaultTimeout) async throws {
        let (running, shutDown) = lock.withLock { (processes[index].stillRuns, isShutDown) }
        guard !running, !shutDown else {
            throw HarnessError(description: "etcd member \(index) is still running, or the cluster was shut down")
        }
        let process = try launch(index)
        lock.withLock { processes[index] = process }
        try await waitUntilHealthy([index], timeout: timeout)
    }

    /// Kills every member and waits until each has exited (bounded). Idempotent; also called by `deinit`.
    func shutdown() {
        let processes = lock.withLock {
            isShutDown = true
            return self.processes
        }
        for process in processes where process.stillRuns { sendSignal(process.processIdentifier, SIGKILL) }
        for process in processes { process.waitForEnd() }  // SIGKILL, even of a stopped member: it exits.
    }

    // MARK: - Health

    /// The session of the health probes: a second for each (on Linux, the request's own `timeoutInterval` is not
    /// enough: the configuration's 60 s applies), no cache, no cookies.
    private static let healthSession: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 1
        configuration.timeoutIntervalForResource = 2
        return URLSession(configuration: configuration)
    }()

    /// Whether member `index` answers `GET /health` with `{"health":"true"}` within a second.
    func isHealthy(member index: Int) async -> Bool {
        guard let url = URL(string: members[index].clientEndpoint + "/health") else { return false }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 1)
        request.httpMethod = "GET"
        guard let (data, response) = try? await Self.healthSession.data(for: request),
            (response as? HTTPURLResponse)?.statusCode == 200,
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return false }
        return object["health"] as? String == "true"
    }

    /// A member that is not the cluster's leader, as the members' `maintenance/status` says (the JSON gateway):
    /// killing the leader makes the members elect another, which may take longer than a short session time to live
    /// (the tests' 2 s): a host then rightly fences itself. `nil` when no member tells.
    func follower() async -> Int? {
        for index in members.indices {
            guard let url = URL(string: members[index].clientEndpoint + "/v3/maintenance/status") else { continue }
            var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 1)
            request.httpMethod = "POST"
            request.httpBody = Data("{}".utf8)
            guard let (data, _) = try? await Self.healthSession.data(for: request),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let header = object["header"] as? [String: Any],
                let member = header["member_id"] as? String, let leader = object["leader"] as? String
            else { continue }
            if member != leader { return index }
        }
        return nil
    }

    /// Waits until each of `indices` (every member by default) is healthy; fails with the members' logs when one
    /// exits first or `timeout` passes.
    func waitUntilHealthy(_ indices: [Int]? = nil, timeout: Duration = defaultTimeout) async throws {
        let waiting = indices ?? Array(members.indices)
        let deadline = ContinuousClock.now + timeout
        var healthy = Set<Int>()
        while true {
            for index in waiting where !healthy.contains(index) {
                if await isHealthy(member: index) {
                    healthy.insert(index)
                } else if !lock.withLock({ processes[index].stillRuns }) {
                    let log = Self.tail(members[index].logPath)
                    if log.contains("address already in use") {
                        throw PortTaken(description: "\(members[index].name): \(log.suffix(300))")
                    }
                    throw HarnessError(description: "etcd member \(index) exited while starting\n\(logs())")
                }
            }
            if healthy.count == waiting.count { return }
            if ContinuousClock.now >= deadline {
                let sick = waiting.filter { !healthy.contains($0) }
                throw HarnessError(
                    description: "timed out after \(timeout) waiting for etcd members \(sick) to be healthy\n\(logs())"
                )
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The end of every member's log, for failure messages.
    func logs() -> String {
        members.map { "--- etcd \($0.name) (\($0.clientEndpoint)) ---\n\(Self.tail($0.logPath))" }
            .joined(separator: "\n")
    }

    // MARK: - Processes

    private func launchAll() throws {
        for index in members.indices {
            let process = try launch(index)
            let shutDown = lock.withLock {
                processes.append(process)
                return isShutDown
            }
            if shutDown { sendSignal(process.processIdentifier, SIGKILL) }
        }
    }

    /// Starts member `index`, its standard output and error appended to its log, its environment without `ETCD_*`
    /// variables (etcd reads them as flags).
    private func launch(_ index: Int) throws -> Process {
        let logPath = members[index].logPath
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        guard let log = FileHandle(forWritingAtPath: logPath) else {
            throw HarnessError(description: "cannot open \(logPath)")
        }
        defer { try? log.close() }
        _ = try? log.seekToEnd()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ETCD") }
        #if arch(arm64)
        environment["ETCD_UNSUPPORTED_ARCH"] = "arm64"  // etcd 3.4 calls arm64 experimental and refuses it otherwise.
        #endif
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments[index]
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = log
        process.standardError = log
        try process.run()
        return process
    }

    /// `etcd` in one of `directories` (`PATH`'s, then `/usr/bin` and `/usr/local/bin`); a clear failure when
    /// there is none.
    static func locateEtcd(
        in directories: [String] = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .map(String.init) + ["/usr/bin", "/usr/local/bin"]
    ) throws -> URL {
        for directory in directories {
            let candidate = "\(directory)/etcd"
            if FileManager.default.isExecutableFile(atPath: candidate) { return URL(fileURLWithPath: candidate) }
        }
        throw HarnessError(
            description: "etcd is not installed (no executable `etcd` in \(directories.joined(separator: ":"))): "
                + "the cluster tests need a real etcd 3.4 server; install it with `apt-get install etcd-server`"
        )
    }

    /// `count` distinct ports the kernel found free on 127.0.0.1 (each bound to port 0, all held until the last is
    /// chosen, then released for etcd).
    /// One port of 127.0.0.1 the kernel found free (and that nothing listens on once this returns).
    static func freePort() throws -> Int { try freePorts(1)[0] }

    private static func freePorts(_ count: Int) throws -> [Int] {
        var descriptors: [Int32] = []
        defer { for descriptor in descriptors { close(descriptor) } }
        var ports: [Int] = []
        for _ in 0..<count {
            #if canImport(Glibc)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
            #endif
            guard descriptor >= 0 else {
                throw HarnessError(description: "socket: \(String(cString: strerror(errno)))")
            }
            descriptors.append(descriptor)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
                }
            }
            guard bound else {
                throw HarnessError(description: "bind 127.0.0.1:0: \(String(cString: strerror(errno)))")
            }
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
        }
        return ports
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The last 8 kB of the file at `path`.
    private static func tail(_ path: String) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { return "(no log at \(path))" }
        return String(decoding: data.suffix(8192), as: UTF8.self)
    }

    /// A member that could not listen on its port: another process took it after the kernel offered it.
    private struct PortTaken: Error, CustomStringConvertible {
        var description: String
    }
}

/// `kill(2)`, under another name: inside ``EtcdCluster``, `kill` is its method.
private func sendSignal(_ pid: pid_t, _ signal: Int32) {
    if pid > 0 { kill(pid, signal) }
}
