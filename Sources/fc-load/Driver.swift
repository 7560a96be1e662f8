import FCDumpModel
import FCProtocol
import FCSystem
import FCTestSupport
import Foundation

/// Runs the load: starts the workers, injects the faults, and judges the outcome.
///
/// - Important: Runs on the main thread only.
final class Driver {
    let clients: Int
    let items: Int
    let duration: Double
    let threads: Int
    let killClientsEvery: Double
    let daemonKills: Int
    let stopClients: Bool
    let idleConnections: Int
    let garbageConnections: Int
    let slowConsumer: Bool
    let seed: UInt64
    /// Cluster mode (issue 40): etcd's client URLs. Two hosts (two daemons, each started on demand by its clients
    /// with a settings file of its own) share the items' folder; clients alternate between them, and the daemon kills
    /// alternate too. `nil`: one daemon, as before.
    let clusterEndpoints: String?

    private let folder: URL
    private let socket: String
    /// Each host's socket: ``socket`` first.
    private let sockets: [String]
    private let products: URL
    private var workers: [(process: Process, output: String, errors: String)] = []
    private var nextWorker = 0
    private var random: SplitMix64
    private var events: [String] = []
    private var idle: [UnixSocket] = []

    init(
        clients: Int,
        items: Int,
        duration: Double,
        threads: Int,
        killClientsEvery: Double,
        daemonKills: Int,
        stopClients: Bool,
        idleConnections: Int,
        garbageConnections: Int,
        slowConsumer: Bool,
        seed: UInt64,
        clusterEndpoints: String? = nil
    ) {
        self.clusterEndpoints = clusterEndpoints
        self.clients = clients
        self.items = items
        self.duration = duration
        self.threads = threads
        self.killClientsEvery = killClientsEvery
        self.daemonKills = daemonKills
        self.stopClients = stopClients
        self.idleConnections = idleConnections
        self.garbageConnections = garbageConnections
        self.slowConsumer = slowConsumer
        self.seed = seed
        random = SplitMix64(seed: seed)
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("fc-load-\(ProcessIdentity.processID)")
        folder = base
        socket = base.appendingPathComponent("run/socket").path
        sockets = clusterEndpoints == nil ? [socket] : [socket, base.appendingPathComponent("run-h1/socket").path]
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "fc-load"
        products = URL(fileURLWithPath: executable).deletingLastPathComponent()
    }

    private func say(_ line: String) { print(line) }

    /// Runs the whole load; `true` when it passed.
    func run() -> Bool {
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { cleanUp() }
        for index in 0..<items {
            _ = FileManager.default.createFile(
                atPath: folder.appendingPathComponent("item\(index).txt").path,
                contents: Data("item \(index)".utf8)
            )
        }
        if let clusterEndpoints {
            for host in sockets.indices {
                let settings =
                    "cluster-endpoints = \(clusterEndpoints)\nhost-name = fc-load-h\(host)\ncluster-ttl = 2\n"
                    + "shared-folder = \(folder.resolvingSymlinksInPath().path)\n"
                _ = FileManager.default.createFile(atPath: settingsPath(host), contents: Data(settings.utf8))
            }
            say("fc-load: \(sockets.count) hosts sharing \(folder.path) through etcd at \(clusterEndpoints)")
        }
        say(
            "fc-load: \(clients) clients x \(threads) threads, \(items) items, \(duration) s, seed \(seed); faults: "
                + "kill a client every \(killClientsEvery) s, kill the daemon \(daemonKills) times, "
                + "stop clients: \(stopClients), \(idleConnections) idle and \(garbageConnections) garbage connections"
        )
        let start = Date()
        for _ in 0..<clients { spawnWorker(duration: duration) }

        // The daemon's memory at its start, measured once the clients are connected.
        var daemonPID = waitForDaemon()
        Thread.sleep(forTimeInterval: 1)
        var baseline = memory(of: daemonPID)
        openIdleAndGarbage()

        let kills = (0..<daemonKills).map { Double($0 + 1) * duration * 0.7 / Double(daemonKills + 1) }
        var nextDaemonKill = 0
        var nextClientKill = killClientsEvery
        var nextStop = 3.0
        while true {
            let elapsed = Date().timeIntervalSince(start)
            if elapsed >= duration { break }
            if nextDaemonKill < kills.count, elapsed >= kills[nextDaemonKill] {
                nextDaemonKill += 1
                let host = (nextDaemonKill - 1) % sockets.count
                if let pid = lockedDaemonPID(socket: sockets[host]) {
                    try? Signals.send(SIGKILL, to: pid)
                    events.append(String(format: "%.1f s: kill -9 of host %d's daemon (pid %d)", elapsed, host, pid))
                }
            }
            if killClientsEvery > 0, elapsed >= nextClientKill {
                nextClientKill += killClientsEvery * (0.5 + Double(random.next() % 100) / 100)
                killRandomWorker(remaining: duration - elapsed, elapsed: elapsed)
            }
            if stopClients, elapsed >= nextStop {
                nextStop += 3
                // Not around a daemon kill: a client stopped for the whole recovery grace cannot declare the claims
                // it holds, which is the documented limit of recovery (README), not what this run measures.
                if !kills.contains(where: { $0 - 1.5 < elapsed && elapsed < $0 + 3 }) {
                    stopRandomWorker(elapsed: elapsed)
                }
            }
            // A new daemon after a kill: its memory at start is the baseline.
            if let pid = lockedDaemonPID(), pid != daemonPID, (try? Signals.send(0, to: pid)) != nil {
                daemonPID = pid
                Thread.sleep(forTimeInterval: 0.5)
                baseline = memory(of: pid)
            }
            Thread.sleep(forTimeInterval: 0.05)
        }

        // Every client must finish: a hang fails the run.
        var hung: [Int32] = []
        let deadline = Date(timeIntervalSinceNow: 60)
        for worker in workers {
            while worker.process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if worker.process.isRunning {
                hung.append(worker.process.processIdentifier)
                try? Signals.send(SIGKILL, to: worker.process.processIdentifier)
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        idle = []  // Closes them.
        return judge(elapsed: elapsed, hung: hung, daemonPID: lockedDaemonPID() ?? daemonPID, baseline: baseline)
    }

    // MARK: Workers

    private func spawnWorker(duration: Double) {
        let index = nextWorker
        nextWorker += 1
        let output = folder.appendingPathComponent("worker-\(index).out").path
        let errors = folder.appendingPathComponent("worker-\(index).err").path
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        let process = Process()
        process.executableURL = products.appendingPathComponent("fc-load")
        process.arguments = [
            "--worker", "--folder", folder.path, "--items", "\(items)", "--duration", "\(max(duration, 0.5))",
            "--threads", "\(threads)", "--seed", "\(seed &+ UInt64(index) &* 7919)",
        ]
        var environment = ProcessInfo.processInfo.environment
        let host = index % sockets.count
        environment["FILECOORDD_SOCKET"] = sockets[host]
        if clusterEndpoints != nil { environment["FILECOORDD_CLUSTER_CONFIG"] = settingsPath(host) }
        environment["FILECOORDD_PATH"] = products.appendingPathComponent("filecoordd").path
        environment["FILECOORD_CONNECT_TIMEOUT"] = "30"
        environment["FILECOORD_ARBITER"] = nil
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle(forWritingAtPath: errors)
        do {
            try process.run()
            workers.append((process, output, errors))
        } catch {
            events.append("could not start a client: \(error)")
        }
    }

    private func liveWorkers() -> [Process] { workers.map(\.process).filter(\.isRunning) }

    private func killRandomWorker(remaining: Double, elapsed: Double) {
        let live = liveWorkers()
        guard !live.isEmpty, remaining > 1 else { return }
        let victim = live[Int(random.next() % UInt64(live.count))]
        try? Signals.send(SIGKILL, to: victim.processIdentifier)
        events.append(String(format: "%.1f s: kill -9 of client %d", elapsed, victim.processIdentifier))
        spawnWorker(duration: remaining)
    }

    private func stopRandomWorker(elapsed: Double) {
        let live = liveWorkers()
        guard !live.isEmpty else { return }
        let victim = live[Int(random.next() % UInt64(live.count))].processIdentifier
        try? Signals.send(SIGSTOP, to: victim)
        events.append(String(format: "%.1f s: SIGSTOP of client %d for 1 s", elapsed, victim))
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { try? Signals.send(SIGCONT, to: victim) }
    }

    // MARK: The daemon

    /// Host `host`'s settings file (cluster mode).
    private func settingsPath(_ host: Int) -> String {
        folder.appendingPathComponent("cluster-h\(host).conf").path
    }

    private func lockedDaemonPID(socket: String? = nil) -> Int32? {
        guard let text = try? String(contentsOfFile: (socket ?? self.socket) + ".lock", encoding: .utf8) else {
            return nil
        }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private func waitForDaemon() -> Int32 {
        let deadline = Date(timeIntervalSinceNow: 30)
        while Date() < deadline {
            if let pid = lockedDaemonPID(), (try? Signals.send(0, to: pid)) != nil { return pid }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return 0
    }

    /// The daemon's resident memory in KiB and its open descriptors.
    private func memory(of pid: Int32) -> (rssKiB: Int, descriptors: Int) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let rss =
            status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { $0.split(separator: " ").compactMap { Int($0) }.first } ?? 0
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
        return (rss, fds)
    }

    /// Connections that never say hello, and connections that send garbage: the daemon must shrug both off.
    private func openIdleAndGarbage() {
        for index in 0..<(idleConnections + garbageConnections + (slowConsumer ? 1 : 0)) {
            // Checked as every client checks its daemon (DaemonTrust): fc-load sends nothing to another user's.
            guard let connection = try? DaemonTrust.connect(to: self.socket) else { continue }
            if index < idleConnections {
                idle.append(connection)
            } else if index == idleConnections + garbageConnections {
                // The slow consumer: it says hello and presents every item 100 times over, then never reads. The
                // daemon must disconnect it once its queue passes the bound, and nobody may wait for it.
                var frames: [UInt8] = []
                let encoder = FrameEncoder()
                var hello = Filecoord_V1_Hello()
                hello.protocolVersion = ProtocolVersion.current
                hello.clientName = "fc-load slow consumer"
                frames += (try? encoder.encode(Filecoord_V1_Frame(.hello(hello)))) ?? []
                for presenter in 0..<(items * 100) {
                    var register = Filecoord_V1_RegisterPresenter()
                    register.presenterID = UInt64(presenter + 1)
                    register.path = Data(folder.appendingPathComponent("item\(presenter % items).txt").path.utf8)
                    register.callbacks = 1 << 6  // presentedItemDidChange only: nothing to answer
                    frames += (try? encoder.encode(Filecoord_V1_Frame(.registerPresenter(register)))) ?? []
                }
                try? connection.send(frames)
                idle.append(connection)
                events.append("a slow consumer presents every item 100 times and never reads")
            } else {
                let garbage = (0..<64).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                try? connection.send(garbage)
            }
        }
    }

    // MARK: The outcome

    private func judge(
        elapsed: Double,
        hung: [Int32],
        daemonPID: Int32,
        baseline: (rssKiB: Int, descriptors: Int)
    )
        -> Bool
    {
        var counts: [String: Int] = [:]
        var waits: [Double] = []
        var violations: [String] = []
        var finished = 0
        for worker in workers {
            let text = (try? String(contentsOfFile: worker.output, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.hasPrefix("result ") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.dropFirst(7).utf8)),
                    let result = object as? [String: Any]
                else { continue }
                finished += 1
                for (key, value) in result["counts"] as? [String: Int] ?? [:] { counts[key, default: 0] += value }
                waits += result["waits"] as? [Double] ?? []
                violations += result["violations"] as? [String] ?? []
            }
            let errors = (try? String(contentsOfFile: worker.errors, encoding: .utf8)) ?? ""
            violations += errors.split(separator: "\n").filter { $0.hasPrefix("VIOLATION") }.map(String.init)
        }
        violations = Array(Set(violations)).sorted()
        waits.sort()
        func percentile(_ p: Double) -> String {
            guard !waits.isEmpty else { return "-" }
            let index = min(waits.count - 1, Int((Double(waits.count) * p).rounded(.down)))
            return String(format: "%.2f ms", waits[index] * 1000)
        }
        let granted = ["read", "write", "move", "delete"].reduce(0) { $0 + counts[$1, default: 0] }
        let end = memory(of: daemonPID)
        let dump = finalDump()

        say("")
        for event in events { say("  \(event)") }
        say(
            String(
                format: "operations granted: %d in %.1f s (%.0f/s) by %d clients that finished",
                granted,
                elapsed,
                Double(granted) / max(elapsed, 0.001),
                finished
            )
        )
        say("wait p50 \(percentile(0.5)), p99 \(percentile(0.99)), p999 \(percentile(0.999))")
        for (key, value) in counts.sorted(by: { $0.key < $1.key }) { say("  \(key): \(value)") }
        if let dump {
            say(
                "daemon: deadlocks broken \(dump.statistics.deadlocksBroken), presenter timeouts "
                    + "\(dump.statistics.presenterTimeouts), claims requested \(dump.statistics.claimsRequested)"
            )
            if let leasing = dump.leasing {
                say(
                    "daemon leases: granted \(leasing.granted), recalls \(leasing.recalls), recalls not answered in "
                        + "time \(leasing.recallTimeouts)"
                )
            }
        }
        say(
            "daemon pid \(daemonPID): RSS \(baseline.rssKiB) KiB at start, \(end.rssKiB) KiB at the end; descriptors "
                + "\(baseline.descriptors) at start, \(end.descriptors) at the end"
        )

        var failures: [String] = []
        if !violations.isEmpty { failures.append("\(violations.count) exclusion violations: \(violations.prefix(5))") }
        if !hung.isEmpty { failures.append("clients that did not finish: \(hung)") }
        if granted == 0 { failures.append("nothing was granted") }
        if let dump {
            if !dump.claims.isEmpty { failures.append("\(dump.claims.count) claims left in the daemon") }
            if !dump.presenters.isEmpty { failures.append("\(dump.presenters.count) presenters left in the daemon") }
        } else {
            failures.append("no dump from the daemon at the end")
        }
        for (host, other) in sockets.enumerated().dropFirst() {
            if let dump = finalDump(socket: other) {
                if !dump.claims.isEmpty { failures.append("\(dump.claims.count) claims left in host \(host)'s daemon") }
                if !dump.presenters.isEmpty {
                    failures.append("\(dump.presenters.count) presenters left in host \(host)'s daemon")
                }
            } else {
                failures.append("no dump from host \(host)'s daemon at the end")
            }
        }
        if clusterEndpoints != nil, let cluster = dump?.cluster {
            say(
                "cluster: host \(cluster.host) \(cluster.session); \(cluster.folders.map { "\($0.path): \($0.state)" })"
            )
        }
        // Memory back within 20% of the daemon's start (8 MiB of allocator slack allowed).
        if end.rssKiB > max(baseline.rssKiB * 12 / 10, baseline.rssKiB + 8 * 1024) {
            failures.append("daemon RSS grew from \(baseline.rssKiB) KiB to \(end.rssKiB) KiB")
        }
        // Across hosts the daemon also keeps connections to etcd's members: AsyncHTTPClient's pool keeps up to its
        // soft limit of idle HTTP/1.1 connections per member (8, FCCluster's EtcdClient.httpClientConfiguration) for a
        // minute after a burst, and the watches hold theirs; bounded, and not a leak, so the check allows it.
        let members = clusterEndpoints.map { $0.split(separator: ",").count } ?? 0
        let allowed = 4 + 8 * members
        if end.descriptors > baseline.descriptors + allowed {
            failures.append(
                "daemon descriptors grew from \(baseline.descriptors) to \(end.descriptors) (\(allowed) allowed)"
            )
        }
        for failure in failures { say("FAILED: \(failure)") }
        say(failures.isEmpty ? "fc-load: passed" : "fc-load: failed (seed \(seed))")
        return failures.isEmpty
    }

    /// The daemon's state once every client is gone, as `fcdump --json` reports it.
    private func finalDump(socket: String? = nil) -> DaemonDump? {
        // Connections close asynchronously: give the daemon a moment to see the last ones go.
        for _ in 0..<40 {
            if let dump = dumpOnce(socket: socket), dump.claims.isEmpty, dump.presenters.isEmpty { return dump }
            Thread.sleep(forTimeInterval: 0.25)
        }
        return dumpOnce(socket: socket)
    }

    private func dumpOnce(socket: String? = nil) -> DaemonDump? {
        let process = Process()
        process.executableURL = products.appendingPathComponent("fcdump")
        process.arguments = ["--json", "--socket", socket ?? self.socket]
        let output = folder.appendingPathComponent("dump.json").path
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        guard process.terminationStatus == 0, let data = FileManager.default.contents(atPath: output) else {
            return nil
        }
        return try? JSONDecoder().decode(DaemonDump.self, from: data)
    }

    private func cleanUp() {
        for worker in workers where worker.process.isRunning {
            try? Signals.send(SIGKILL, to: worker.process.processIdentifier)
        }
        for socket in sockets {
            if let pid = lockedDaemonPID(socket: socket) { try? Signals.send(SIGTERM, to: pid) }
        }
        try? FileManager.default.removeItem(at: folder)
    }
}
