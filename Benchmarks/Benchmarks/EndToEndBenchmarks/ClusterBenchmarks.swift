import Benchmark
@_spi(Benchmarks) import FCCluster
import FCCore
import FCDaemon
import FileCoordination
import Foundation
@preconcurrency import Glibc

// Cluster mode (issue 40; docs/ARCHITECTURE.md §15, docs/SEMANTICS.md §14), each against a baseline measured in the
// same run. Every benchmark starts its own three-member etcd cluster on 127.0.0.1 (ports the kernel picks; `etcd`
// must be installed, as for the cluster tests) and two hosts sharing one folder, `share/`: each host is a helper
// process (`clusterHost`, this executable re-run) running FCDaemon with FCCluster's `ClusterHost`, what `filecoordd
// --cluster-endpoints ... --host-name A --shared-folder PATH` runs, each with its own socket folder, host name and
// version store. The daemons run in helpers rather than as `filecoordd` so that the benchmarks set the minimum hold
// time (not a `filecoordd` option) and need no other build, and rather than in the benchmark process so that the
// measured client shares neither its cores' cooperative pool nor its allocation counts with the daemon.
//
//   cluster.localClaim                a coordinated write in a local folder of host A's daemon (the baseline)
//   cluster.hostLeasedClaim           the same write in the shared folder, which host A holds: target <= 1.1x
//                                     localClaim
//   cluster.bareEtcdPutWatch          a put and its event's arrival on a watch, through FCCluster's own etcd client
//                                     (AsyncHTTPClient on the JSON gateway), on a cluster of the same shape with both
//                                     hosts joined (the baseline)
//   cluster.hostLeaseRecall           host B holds the shared folder (its write, untimed); host A's client's write
//                                     there: B is recalled, lets go, A takes the folder. Minimum hold 0 on both
//                                     hosts. Target <= 3x bareEtcdPutWatch
//   cluster.contendedClaimsPerSecond  both hosts' clients write in one subtree of the shared folder for 1 s each
//                                     sample (the default minimum hold, 100 ms): claims per second of the two, as the
//                                     custom metric `claimsPerSecond`
//
// Wall clock is reported, never gated, and no malloc threshold is kept: the daemons and etcd run beside the
// measured client. The ratios are printed by whichever of these runs last (`ClusterResults`); run them with
// `--filter 'EndToEnd.cluster.*'`.

/// The names whose results the cluster ratios need, and the ratios.
enum ClusterResults {
    static let names = [
        "EndToEnd.cluster.localClaim", "EndToEnd.cluster.hostLeasedClaim", "EndToEnd.cluster.bareEtcdPutWatch",
        "EndToEnd.cluster.hostLeaseRecall", "EndToEnd.cluster.contendedClaimsPerSecond",
        "EndToEnd.cluster.writeWithLocalPresenter", "EndToEnd.cluster.writeWithRemotePresenter",
    ]

    /// This run's cluster results: a file of their own beside ``RunResults/path`` (which is removed once the other
    /// ratios are printed).
    static var path: String { RunResults.path + ".cluster" }

    /// Records `name`'s median (nanoseconds per operation), and prints the ratios once every name is known.
    static func record(_ name: String, _ record: WallClockRecord) {
        guard let median = record.median else { return }
        let line = "\(name) \(median)\n"
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        if fd >= 0 {
            _ = line.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
        RunResults.report("\(name): p50 \(RunResults.format(median)) per operation over \(record.samples) samples")
        printIfComplete()
    }

    static func printIfComplete() {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var results: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { results[String(parts[0])] = value }
        }
        guard names.allSatisfy({ results[$0] != nil }) else { return }
        unlink(path)
        func value(_ name: String) -> Double { results["EndToEnd.cluster." + name]! }
        func verdict(_ met: Bool) -> String { met ? "met" : "MISSED" }
        let local = value("localClaim")
        let leased = value("hostLeasedClaim")
        let bare = value("bareEtcdPutWatch")
        let recall = value("hostLeaseRecall")
        let rate = 1e9 / value("contendedClaimsPerSecond")
        let localPresenter = value("writeWithLocalPresenter")
        let remotePresenter = value("writeWithRemotePresenter")
        let presenterRatio = remotePresenter / localPresenter
        let leasedRatio = leased / local
        let recallRatio = recall / bare
        RunResults.report(
            """

            ==== EndToEnd cluster ratios (this run; p50 wall clock per operation; reported, never gated) ====
            cluster.localClaim               \(RunResults.format(local))
            cluster.hostLeasedClaim          \(RunResults.format(leased))
            cluster.bareEtcdPutWatch         \(RunResults.format(bare))
            cluster.hostLeaseRecall          \(RunResults.format(recall))
            hostLeasedClaim / localClaim = \(RunResults.ratio(leasedRatio))  (target <= 1.1: \
            \(verdict(leasedRatio <= 1.1)))
            hostLeaseRecall / bareEtcdPutWatch = \(RunResults.ratio(recallRatio))  (target <= 3: \
            \(verdict(recallRatio <= 3)))
            contendedClaimsPerSecond         \(Int(rate)) claims/s (two hosts, one subtree; \
            \(RunResults.ratio(rate / (1e9 / leased)))x one host's sequential hostLeasedClaim rate)
            writeWithRemotePresenter / writeWithLocalPresenter = \(RunResults.ratio(presenterRatio))  \
            (target <= 3x + one bareEtcdPutWatch: \(verdict(remotePresenter <= 3 * localPresenter + bare)); \
            \(RunResults.format(remotePresenter)) against \(RunResults.format(localPresenter)))
            =================================================================================================

            """
        )
    }
}

// MARK: - The fixture

/// Three etcd members on 127.0.0.1, on ports the kernel picked, with their data and logs under a folder of the
/// benchmark's; killed by ``stop()``. Started anew (a few times at most) when a member exits while starting: another
/// process took one of its ports first.
final class EtcdMembers: @unchecked Sendable {
    let endpoints: [String]
    private let processes: [Process]
    private let logs: [String]

    static func start(in directory: String) throws -> EtcdMembers {
        let executable = ["/usr/bin/etcd", "/usr/local/bin/etcd"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let executable else {
            throw BenchmarkFailure(
                "etcd is not installed (apt-get install etcd-server): the cluster benchmarks need it"
            )
        }
        var failure = ""
        for attempt in 1...3 {
            let members = try EtcdMembers(executable: executable, directory: "\(directory)/etcd\(attempt)")
            if let problem = members.waitUntilHealthy(timeout: 30) {
                members.stop()
                failure = problem
                continue
            }
            return members
        }
        throw BenchmarkFailure("the etcd cluster did not start: \(failure)")
    }

    private init(executable: String, directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let ports = try Self.freePorts(6)
        let peers = (0..<3).map { "m\($0)=http://127.0.0.1:\(ports[3 + $0])" }.joined(separator: ",")
        let token = "fc-bench-\(getpid())-\(directory.hashValue)"
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ETCD") }
        #if arch(arm64)
        environment["ETCD_UNSUPPORTED_ARCH"] = "arm64"
        #endif
        // Nothing of this process but the log reaches etcd (not the pipes to the benchmark tool).
        HelperProcess.markAllCloseOnExec()
        var processes: [Process] = []
        var logs: [String] = []
        for member in 0..<3 {
            let client = "http://127.0.0.1:\(ports[member])"
            let peer = "http://127.0.0.1:\(ports[3 + member])"
            let log = "\(directory)/m\(member).log"
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            guard let handle = FileHandle(forWritingAtPath: log) else { throw BenchmarkFailure("cannot open \(log)") }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [
                "--name", "m\(member)", "--data-dir", "\(directory)/m\(member).etcd",
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", peers, "--initial-cluster-token", token, "--initial-cluster-state", "new",
            ]
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = handle
            process.standardError = handle
            do {
                try process.run()
            } catch {
                for started in processes { started.terminate() }
                throw BenchmarkFailure("cannot start etcd: \(error)")
            }
            try? handle.close()
            processes.append(process)
            logs.append(log)
        }
        self.processes = processes
        self.logs = logs
        endpoints = (0..<3).map { "http://127.0.0.1:\(ports[$0])" }
    }

    /// `nil` once every member answers `GET /health` with `"health":"true"`; what went wrong otherwise.
    private func waitUntilHealthy(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        var healthy = Set<Int>()
        while healthy.count < processes.count {
            for member in processes.indices where !healthy.contains(member) {
                if Self.isHealthy(endpoints[member]) {
                    healthy.insert(member)
                } else if !processes[member].isRunning {
                    return "member m\(member) exited: \(Self.tail(logs[member]))"
                }
            }
            if Date() >= deadline { return "not healthy within \(timeout) s: \(logs.map(Self.tail))" }
            usleep(20_000)
        }
        return nil
    }

    /// Kills every member and waits for them.
    func stop() {
        for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for process in processes { process.waitUntilExit() }
    }

    /// `GET /health` over a plain TCP connection (HTTP/1.0: the answer ends with the connection), a second at most.
    private static func isHealthy(_ endpoint: String) -> Bool {
        guard let port = UInt16(endpoint.split(separator: ":").last ?? "") else { return false }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var limit = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { return false }
        let request = Array("GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ BareSocket.writeAll(fd, $0.baseAddress!, $0.count) }) else { return false }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            answer += buffer[0..<count]
        }
        return String(decoding: answer, as: UTF8.self).contains("\"health\":\"true\"")
    }

    /// `count` ports of 127.0.0.1 the kernel found free (all bound at once, then released for etcd).
    private static func freePorts(_ count: Int) throws -> [Int] {
        var descriptors: [Int32] = []
        defer { for descriptor in descriptors { close(descriptor) } }
        var ports: [Int] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw BenchmarkFailure("socket: \(errnoText())") }
            descriptors.append(fd)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
                }
            }
            guard bound else { throw BenchmarkFailure("bind 127.0.0.1:0: \(errnoText())") }
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
        }
        return ports
    }

    private static func tail(_ path: String) -> String {
        let data = FileManager.default.contents(atPath: path) ?? Data()
        return String(decoding: data.suffix(1500), as: UTF8.self)
    }
}

/// An etcd cluster and two hosts, A and B, sharing `share/` (each a `clusterHost` helper); this process is a client
/// of host A. `local/` is a folder of host A's that is not shared.
final class ClusterFixture: @unchecked Sendable {
    let directory: ScratchDirectory
    let etcd: EtcdMembers
    let hostA: HelperProcess
    let hostB: HelperProcess
    /// The shared folder (canonical) and a folder only host A knows.
    let share: String
    let local: String

    /// Starts everything and waits until both hosts have their sessions open; `minimumHold` is both hosts'.
    init(minimumHold: Duration) throws {
        let directory = try ScratchDirectory()
        self.directory = directory
        let root = URL(fileURLWithPath: directory.path).resolvingSymlinksInPath().path
        share = root + "/share"
        local = root + "/local"
        for folder in [share, share + "/subtree", local] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        let etcd: EtcdMembers
        do {
            etcd = try EtcdMembers.start(in: root + "/etcd")
        } catch {
            directory.remove()
            throw error
        }
        self.etcd = etcd
        let share = self.share
        let (seconds, attoseconds) = minimumHold.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        func host(_ name: String) throws -> HelperProcess {
            let helper = try HelperProcess(
                role: "clusterHost",
                environment: [
                    "FC_E2E_SOCKET": "\(root)/host\(name)/socket", "FC_E2E_PATH": share, "FC_E2E_HOST": name,
                    "FC_E2E_ETCD": etcd.endpoints.joined(separator: ","), "FC_E2E_HOLD_MS": "\(milliseconds)",
                    "FC_E2E_VERSIONS": "\(root)/host\(name)/versions",
                ]
            )
            guard try helper.receiveLine(timeout: 40) == "ready" else {
                throw BenchmarkFailure("host \(name) did not join the cluster")
            }
            return helper
        }
        var started: [HelperProcess] = []
        do {
            for name in ["A", "B"] { started.append(try host(name)) }
        } catch {
            for helper in started { helper.finish() }
            etcd.stop()
            directory.remove()
            throw error
        }
        hostA = started[0]
        hostB = started[1]
        // This process is a client of host A, and of it only (no daemon started on demand, no lease).
        setenv("FILECOORDD_SOCKET", "\(root)/hostA/socket", 1)
        setenv("FILECOORDD_PATH", "/nonexistent/filecoordd", 1)
        unsetenv("FILECOORD_LEASES")
        unsetenv("FILECOORD_ARBITER")
    }

    /// A file in the shared or the local folder, created.
    func file(_ name: String) throws -> URL {
        let path = name.hasPrefix("local/") ? local + name.dropFirst("local".count) : share + "/" + name
        guard FileManager.default.createFile(atPath: path, contents: Data("contents\n".utf8)) else {
            throw BenchmarkFailure("cannot create \(path)")
        }
        return URL(fileURLWithPath: path)
    }

    /// Has host B's client make a coordinated write of `url`, and waits until it has.
    func writeOnHostB(_ url: URL) throws {
        guard hostB.send(line: "write " + url.path) else { throw BenchmarkFailure("host B went away") }
        let answer = try hostB.receiveLine(timeout: 30)
        guard answer == "done" else { throw BenchmarkFailure("host B's write: \(answer)") }
    }

    /// Fails unless host A's daemon has accepted a client (this process did not coordinate alone).
    func checkClientOfHostA() throws {
        guard hostA.send(line: "clients"), let count = Int(try hostA.receiveLine()), count >= 1 else {
            throw BenchmarkFailure("this process's claims did not reach host A's daemon")
        }
    }

    func finish() {
        hostB.finish()
        hostA.finish()
        etcd.stop()
        directory.remove()
    }
}

// MARK: - The benchmarks

/// A coordinated write of a file in a local folder of host A (`shared` false) or in the shared folder, which host A
/// holds (its first write there took the folder, before the measurement).
func clusterClaim(shared: Bool) {
    let name = shared ? "EndToEnd.cluster.hostLeasedClaim" : "EndToEnd.cluster.localClaim"
    let record = WallClockRecord()
    let fixture = Slot<(cluster: ClusterFixture, url: URL)>()
    Benchmark(
        name,
        configuration: .init(scalingFactor: .kilo, maxDuration: .seconds(2)),
        closure: { benchmark in
            let url = fixture.value!.url
            record.start()
            for _ in benchmark.scaledIterations {
                if let error = coordinatedCall(url, writing: true) {
                    return benchmark.error("\(name) failed: \(error)")
                }
            }
            record.stop(operations: benchmark.scaledIterations.count)
        },
        setup: {
            let cluster = try ClusterFixture(minimumHold: .milliseconds(100))
            // Both benchmarks in the same state: host A holds the shared folder, both items were claimed once.
            let sharedURL = try cluster.file("subtree/a.txt")
            let localURL = try cluster.file("local/a.txt")
            fixture.value = (cluster, shared ? sharedURL : localURL)
            for url in [sharedURL, localURL] {
                if let error = coordinatedCall(url, writing: true) { throw BenchmarkFailure("first claim: \(error)") }
            }
            try cluster.checkClientOfHostA()
            for _ in 0..<100 { _ = coordinatedCall(fixture.value!.url, writing: true) }
        },
        teardown: {
            fixture.value?.cluster.finish()
            ClusterResults.record(name, record)
        }
    )
}

/// A put and its event's arrival on a watch of its prefix, through FCCluster's etcd client, on the cluster of the
/// other benchmarks with both hosts joined (their keep-alives and watches running, their watches not woken: the key
/// is outside their prefix).
func bareEtcdPutWatch() {
    let name = "EndToEnd.cluster.bareEtcdPutWatch"
    let record = WallClockRecord()
    let fixture = Slot<(cluster: ClusterFixture, etcd: EtcdRoundTrip)>()
    Benchmark(
        name,
        configuration: .init(scalingFactor: .one, maxDuration: .seconds(3), maxIterations: 200),
        closure: { benchmark in
            let etcd = fixture.value!.etcd
            for _ in benchmark.scaledIterations {
                record.start()
                do {
                    try await etcd.roundTrip()
                } catch {
                    return benchmark.error("\(name) failed: \(error)")
                }
                record.stop(operations: 1)
            }
        },
        setup: {
            let cluster = try ClusterFixture(minimumHold: .zero)
            let etcd: EtcdRoundTrip
            do {
                etcd = try await EtcdRoundTrip(endpoints: cluster.etcd.endpoints, prefix: "/fc-bench/round-trip/")
            } catch {
                cluster.finish()
                throw error
            }
            fixture.value = (cluster, etcd)
            for _ in 0..<10 { try await etcd.roundTrip() }
        },
        teardown: {
            if let value = fixture.value {
                try? await value.etcd.shutdown()
                value.cluster.finish()
            }
            ClusterResults.record(name, record)
        }
    )
}

/// Host A's first write in the shared folder after host B took it (B's write, untimed, just before): A asks etcd,
/// B is recalled and lets go, A takes the folder and grants. Both hosts' minimum hold is 0, so that B lets go at once.
func hostLeaseRecall() {
    let name = "EndToEnd.cluster.hostLeaseRecall"
    let record = WallClockRecord()
    let fixture = Slot<(cluster: ClusterFixture, a: URL, b: URL)>()
    Benchmark(
        name,
        configuration: .init(scalingFactor: .one, maxDuration: .seconds(3), maxIterations: 100),
        closure: { benchmark in
            let (cluster, a, b) = fixture.value!
            for _ in benchmark.scaledIterations {
                do {
                    try cluster.writeOnHostB(b)
                } catch {
                    return benchmark.error("\(error)")
                }
                record.start()
                if let error = coordinatedCall(a, writing: true) {
                    return benchmark.error("\(name) failed: \(error)")
                }
                record.stop(operations: 1)
            }
        },
        setup: {
            let cluster = try ClusterFixture(minimumHold: .zero)
            let a = try cluster.file("subtree/a.txt")
            let b = try cluster.file("subtree/b.txt")
            fixture.value = (cluster, a, b)
            // Each host takes the folder a few times before the measurement.
            for _ in 0..<3 {
                try cluster.writeOnHostB(b)
                if let error = coordinatedCall(a, writing: true) { throw BenchmarkFailure("first claim: \(error)") }
            }
            try cluster.checkClientOfHostA()
        },
        teardown: {
            fixture.value?.cluster.finish()
            ClusterResults.record(name, record)
        }
    )
}

/// Both hosts' clients write in `share/subtree/` for a second each sample (host B's loop is started first, through
/// its pipe): the claims of the two per second, as the custom metric `claimsPerSecond`; the wall clock per claim
/// goes to the ratios. The default minimum hold (100 ms, `filecoordd`'s): the hosts take turns.
func contendedClaimsPerSecond() {
    let name = "EndToEnd.cluster.contendedClaimsPerSecond"
    let metric = BenchmarkMetric.custom("claimsPerSecond", polarity: .prefersLarger, useScalingFactor: false)
    let record = WallClockRecord()
    let fixture = Slot<(cluster: ClusterFixture, a: URL, b: URL)>()
    Benchmark(
        name,
        configuration: .init(
            metrics: [.wallClock, metric],
            scalingFactor: .one,
            maxDuration: .seconds(4),
            maxIterations: 3
        ),
        closure: { benchmark in
            let (cluster, a, b) = fixture.value!
            for _ in benchmark.scaledIterations {
                guard cluster.hostB.send(line: "run \(b.path) 1000") else { return benchmark.error("host B went away") }
                let start = DispatchTime.now().uptimeNanoseconds
                let end = start + 1_000_000_000
                var claims = 0
                while DispatchTime.now().uptimeNanoseconds < end {
                    if let error = coordinatedCall(a, writing: true) {
                        return benchmark.error("\(name) failed: \(error)")
                    }
                    claims += 1
                }
                let elapsed = DispatchTime.now().uptimeNanoseconds - start
                guard let line = try? cluster.hostB.receiveLine(timeout: 30), let other = Int(line) else {
                    return benchmark.error("host B's claims failed")
                }
                let total = claims + other
                guard total > 0 else { return benchmark.error("no claim was granted in a second") }
                benchmark.measurement(metric, Int(Double(total) * 1e9 / Double(elapsed)))
                RunResults.report("\(name): host A \(claims), host B \(other) claims in \(elapsed / 1_000_000) ms")
                record.add(perOperation: Double(elapsed) / Double(total))
            }
        },
        setup: {
            let cluster = try ClusterFixture(minimumHold: .milliseconds(100))
            let a = try cluster.file("subtree/a.txt")
            let b = try cluster.file("subtree/b.txt")
            fixture.value = (cluster, a, b)
            try cluster.writeOnHostB(b)
            if let error = coordinatedCall(a, writing: true) { throw BenchmarkFailure("first claim: \(error)") }
            try cluster.checkClientOfHostA()
        },
        teardown: {
            fixture.value?.cluster.finish()
            ClusterResults.record(name, record)
        }
    )
}

// MARK: - The hosts

extension HelperRole {
    /// `clusterHost`: FCDaemon on FC_E2E_SOCKET with FCCluster's adapter, as host FC_E2E_HOST sharing FC_E2E_PATH
    /// through the etcd members FC_E2E_ETCD (minimum hold FC_E2E_HOLD_MS, version store FC_E2E_VERSIONS), and a
    /// client of it. Prints `ready` once its session is open; then, per line: `write PATH` makes one coordinated
    /// write and prints `done`; `run PATH MS` writes PATH for MS milliseconds and prints how many writes it made;
    /// `clients` prints how many clients the daemon accepted; `present PATH` adds a presenter that relinquishes to
    /// writers and prints `ready`; `count` prints how many times its presenters relinquished.
    static func serveClusterHost() {
        let environment = ProcessInfo.processInfo.environment
        let daemon = Slot<InProcessDaemon>()
        let failure = Slot<String>()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                let share = environment["FC_E2E_PATH"] ?? ""
                let hold = Int64(environment["FC_E2E_HOLD_MS"] ?? "") ?? 100
                let cluster = ClusterConfiguration(
                    endpoints: (environment["FC_E2E_ETCD"] ?? "").split(separator: ",").map(String.init),
                    hostName: environment["FC_E2E_HOST"] ?? "",
                    policy: HostLeasePolicy(sessionTTL: .seconds(10), minimumHold: .milliseconds(hold)),
                    sharedFolders: [.init(path: try ItemPath(absolute: share), name: "share")]
                )
                let running = try await InProcessDaemon.start(socketPath: environment["FC_E2E_SOCKET"] ?? "") {
                    $0.versionStoreDirectory = environment["FC_E2E_VERSIONS"] ?? ""
                    $0.clusterAdapter = { gates, logger in
                        ClusterHost(configuration: cluster, gates: gates, logger: logger)
                    }
                }
                daemon.value = running
                try await running.waitForLog("cluster: session open")
            } catch {
                failure.value = "\(error)"
            }
            done.signal()
        }
        done.wait()
        guard let running = daemon.value, failure.value == nil else {
            fail("the cluster host did not start: \(failure.value ?? "?")")
        }
        say("ready")
        var presenters: [RelinquishingPresenter] = []
        while let line = readLine() {
            let words = line.split(separator: " ", maxSplits: 2).map(String.init)
            switch words.first {
            case "write" where words.count == 2:
                let error = coordinatedCall(URL(fileURLWithPath: words[1]), writing: true)
                say(error.map { "failed: \($0)" } ?? "done")
            case "run" where words.count == 3:
                let url = URL(fileURLWithPath: words[1])
                let end = DispatchTime.now().uptimeNanoseconds + (UInt64(words[2]) ?? 0) * 1_000_000
                var claims = 0
                while DispatchTime.now().uptimeNanoseconds < end {
                    if coordinatedCall(url, writing: true) != nil { break }
                    claims += 1
                }
                say("\(claims)")
            case "clients":
                say("\(running.clients)")
            case "present" where words.count == 2:
                // A presenter of this host that relinquishes to writers (ClusterPresenterBenchmarks.swift).
                let presenter = RelinquishingPresenter(url: URL(fileURLWithPath: words[1]))
                NSFileCoordinator.addFilePresenter(presenter)
                presenters.append(presenter)
                say("ready")
            case "count":
                say("\(presenters.reduce(0) { $0 + $1.relinquished })")
            default:
                fail("unknown command \(line)")
            }
        }
        Task.detached {
            await running.stop()
            done.signal()
        }
        done.wait()
    }
}
