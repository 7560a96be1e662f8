// Cluster mode (issue 40) with real processes on one machine: a three-member etcd cluster on 127.0.0.1 ports started
// by the test (EtcdCluster.swift), two `filecoordd` daemons as two hosts (each its own socket folder and host name)
// sharing one folder, `fc-testhost` and `fccoord` as their clients. Each test fails without the rule it names.

import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// Two hosts sharing `share/` through one etcd cluster.
struct ClusterHosts {
    let etcd: EtcdCluster
    let share: String
    let socketA: String
    let socketB: String
    let a: DaemonProcess
    let b: DaemonProcess
    /// The session's time to live the daemons ask for (etcd grants at least 2 s with its default election timeout).
    static let ttl = 2

    /// Starts the etcd cluster and both daemons, each joined and with its session open.
    ///
    /// `watching`: whether the daemons watch presented items with inotify. Off for the presenter tests: the two
    /// "hosts" here share one kernel, so each would see the other's writes as its own uncoordinated changes, where
    /// hosts that share a network file system do not (its changes reach inotify only on the host that made them).
    /// `hostB`: more options for host B's daemon.
    static func start(
        in environment: TestEnvironment,
        watching: Bool = true,
        hostB: [String] = []
    ) async throws -> ClusterHosts {
        let etcd = try await EtcdCluster.start(in: environment.path("etcd"))
        let share = environment.path("share")
        try FileManager.default.createDirectory(atPath: share, withIntermediateDirectories: true)
        let socketA = environment.path("hostA/socket")
        let socketB = environment.path("hostB/socket")
        func daemon(_ name: String, _ socket: String, _ more: [String] = []) async throws -> DaemonProcess {
            let daemon = try await environment.startDaemon(
                presenterTimeout: "5",
                arguments: [
                    "--cluster-endpoints", etcd.clientEndpoints.joined(separator: ","), "--host-name", name,
                    "--cluster-ttl", "\(ttl)", "--shared-folder", share,
                ] + (watching ? [] : ["--no-watching"]) + more,
                socket: socket
            )
            try await daemon.waitForLog("cluster: session open")
            return daemon
        }
        let a = try await daemon("hostA", socketA)
        let b = try await daemon("hostB", socketB, hostB)
        return ClusterHosts(etcd: etcd, share: share, socketA: socketA, socketB: socketB, a: a, b: b)
    }

    /// The environment of a client of one host: its socket, and no daemon started on demand (one started without
    /// the cluster's options would not share the folder).
    static func client(of socket: String) -> [String: String?] {
        ["FILECOORDD_SOCKET": socket, "FILECOORDD_PATH": "/nonexistent/filecoordd"]
    }

    /// The keys of a host in etcd now, read with Debian's `etcdctl` (a client the daemons do not share code with).
    func keys(of host: String) throws -> [String] {
        try etcdctl(["get", "--prefix", "/filecoord/v1/", "--keys-only"]).split(separator: "\n").map(String.init)
            .filter { $0.contains("/\(Self.hex(host))/") }
    }

    /// What Debian's `etcdctl` prints for `arguments`, run against this cluster.
    func etcdctl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/etcdctl")
        process.arguments = ["--endpoints", etcd.clientEndpoints.joined(separator: ",")] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["ETCDCTL_API"] = "3"
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitForEnd()
        return String(decoding: data, as: UTF8.self)
    }

    /// Runs `body` in a test environment with two hosts (``start(in:watching:hostB:)``), and stops the etcd cluster
    /// whatever it does; a failure carries etcd's logs.
    static func run(
        watching: Bool = true,
        hostB: [String] = [],
        _ body: (TestEnvironment, ClusterHosts) async throws -> Void
    ) async throws {
        try await TestEnvironment.run { environment in
            let hosts = try await ClusterHosts.start(in: environment, watching: watching, hostB: hostB)
            defer { hosts.etcd.shutdown() }
            do {
                try await body(environment, hosts)
            } catch {
                throw HarnessError(description: "\(error)\n--- etcd ---\n\(hosts.etcd.logs())")
            }
        }
    }

    /// A host's name as its keys spell it (hexadecimal UTF-8).
    static func hex(_ host: String) -> String {
        host.utf8.map { String(format: "%02x", $0) }.joined()
    }
}

@Suite(.serialized, .timeLimit(.minutes(3)))
struct ClusterEndToEndTests {
    private func withHosts(_ body: (TestEnvironment, ClusterHosts) async throws -> Void) async throws {
        try await ClusterHosts.run(body)
    }

    /// An `fc-testhost` client of the host at `socket` holding a coordinated write of `item` (until `release`).
    private func holdWrite(
        of item: String,
        on socket: String,
        in environment: TestEnvironment
    ) async throws
        -> HostProcess
    {
        let writer = try await environment.host(
            "writer",
            mayStartDaemon: false,
            environment: ClusterHosts.client(of: socket)
        )
        try writer.send("write \(item) v2 hold")
        _ = try await writer.waitFor("holding write \(item)")
        return writer
    }

    @Test func aHeldWriteOnOneHostHoldsBackAReadOnTheOtherUntilReleased() async throws {
        try await withHosts { environment, hosts in
            let item = try environment.file("share/doc.txt", "v1")
            let writer = try await holdWrite(of: item, on: hosts.socketA, in: environment)

            let marker = environment.path("read-ran")
            let reader = try environment.startTool(
                "fccoord",
                ["read", item, "--", "/bin/sh", "-c", "cat \"$FCCOORD_PATH_1\" > '\(marker)'"],
                environment: ClusterHosts.client(of: hosts.socketB)
            )
            // Host B asks etcd for the folder, host A is recalled and drains: the read waits for the write.
            try await hosts.a.waitForLog("cluster: another host asks for the shared folder")
            try await Task.sleep(for: quietTime)
            #expect(!FileManager.default.fileExists(atPath: marker), "host B read while host A held a write")
            try writer.send("release")
            try await eventually("the read on host B") { !reader.process.stillRuns }
            reader.process.waitForEnd()
            #expect(reader.process.endStatus == 0, "\(reader.error)")
            #expect(try String(contentsOfFile: marker, encoding: .utf8) == "v2", "the read saw the write's result")
            // A local item on host A is never held back by the cluster.
            let local = try environment.file("local.txt", "l")
            let result = try await environment.runTool(
                "fccoord",
                ["read", local, "--", "/bin/true"],
                environment: ClusterHosts.client(of: hosts.socketA)
            )
            #expect(result.status == 0, "\(result.error)")
        }
    }

    @Test func aKilledHolderIsWaitedOutUntilItsSessionExpiresAndNotBefore() async throws {
        try await withHosts { environment, hosts in
            let item = try environment.file("share/doc.txt", "v1")
            _ = try await holdWrite(of: item, on: hosts.socketA, in: environment)
            #expect(try !hosts.keys(of: "hostA").isEmpty, "host A holds the folder through a key in etcd")

            hosts.a.signal(SIGKILL)
            _ = try await hosts.a.waitForExit()
            // The read on host B runs only once host A's session expired in etcd: its key is gone by then.
            let seen = environment.path("keys-at-grant")
            let keysCommand =
                "ETCDCTL_API=3 /usr/bin/etcdctl --endpoints \(hosts.etcd.clientEndpoints.joined(separator: ",")) "
                + "get --prefix /filecoord/v1/ --keys-only > '\(seen)'"
            let reader = try environment.startTool(
                "fccoord",
                ["read", item, "--", "/bin/sh", "-c", keysCommand],
                environment: ClusterHosts.client(of: hosts.socketB)
            )
            try await eventually("the read on host B") { !reader.process.stillRuns }
            reader.process.waitForEnd()
            #expect(reader.process.endStatus == 0, "\(reader.error)")
            let keys = try String(contentsOfFile: seen, encoding: .utf8)
            #expect(
                !keys.contains("/\(ClusterHosts.hex("hostA"))/"),
                "host B was granted while host A's key was still in etcd: \(keys)"
            )
            #expect(keys.contains("/\(ClusterHosts.hex("hostB"))/"), "\(keys)")
        }
    }

    @Test func aDaemonStoppedPastItsTimeToLiveFailsItsClaimsAndTheOtherHostGoesOn() async throws {
        try await withHosts { environment, hosts in
            let item = try environment.file("share/doc.txt", "v1")
            let writer = try await holdWrite(of: item, on: hosts.socketA, in: environment)

            // Host A's daemon freezes; host B's read proceeds once A's session has expired.
            try await stopProcess(hosts.a.pid)
            let stoppedAt = ContinuousClock.now
            let result = try await environment.runTool(
                "fccoord",
                ["read", item, "--", "/bin/true"],
                environment: ClusterHosts.client(of: hosts.socketB)
            )
            #expect(result.status == 0, "\(result.error)")
            #expect(try hosts.keys(of: "hostA").isEmpty)
            // A claim sent to the frozen daemon, on an item nobody holds, is judged when it wakes: past its fence it
            // fails with the cause (were the fence not checked first, the still open gate would grant it).
            let other = try environment.file("share/other.txt", "o")
            try writer.send("read \(other)")
            // Past its fence for sure: the fence comes at most a time to live after the stop (it counts from the last
            // renewal A sent, before the stop). B's read may end sooner than that: etcd expires A's session a time to
            // live after A's last renewal, which can be up to a third of it before the stop.
            try await Task.sleep(until: stoppedAt + .seconds(ClusterHosts.ttl) + quietTime, clock: .continuous)
            hosts.a.signal(SIGCONT)
            let failed = try await writer.waitFor("failed read \(other)")
            #expect(failed.text.contains("FileCoordinationErrorDomain 12"), "\(failed)")
            #expect(failed.text.contains("cluster unreachable"), "\(failed)")
            // The write it had granted is reported lost, and logged with its process.
            try await hosts.a.waitForLog("no longer exclusive across hosts")
            try writer.send("release")
        }
    }

    /// An operator deletes every folder key at once (`etcdctl del --prefix`): one revision, whose deletions etcd
    /// reports in one watch message, host A's key first. Until stop 67 host B took only the first (its copy ignored a
    /// change of the revision it had reached), was told holder and granted its read beside host A's write, and
    /// never fenced for its own key. Now it takes the message whole: its own key gone, it fences, and the read fails.
    @Test func keysDeletedTogetherFenceTheHostWhoseKeyWentWithoutGrantingFirst() async throws {
        try await withHosts { environment, hosts in
            let item = try environment.file("share/doc.txt", "v1")
            let writer = try await holdWrite(of: item, on: hosts.socketA, in: environment)
            let marker = environment.path("read-ran")
            let reader = try environment.startTool(
                "fccoord",
                ["read", item, "--", "/bin/sh", "-c", "touch '\(marker)'"],
                environment: ClusterHosts.client(of: hosts.socketB)
            )
            try await hosts.a.waitForLog("cluster: another host asks for the shared folder")
            #expect(try !hosts.keys(of: "hostB").isEmpty, "host B waits behind a key of its own")
            let deleted = try hosts.etcdctl(["del", "--prefix", "/filecoord/v1/folders/"])
            #expect(deleted.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "\(deleted)")
            try await eventually("the read on host B to end") { !reader.process.stillRuns }
            reader.process.waitForEnd()
            #expect(!FileManager.default.fileExists(atPath: marker), "host B read while host A held a write")
            #expect(reader.process.endStatus != 0)
            #expect(reader.error.contains("cluster unreachable"), "\(reader.error)")
            // Host A's key went too: it reports its write lost.
            try await hosts.a.waitForLog("no longer exclusive across hosts")
            try writer.send("release")
        }
    }

    @Test func aDaemonAClientStartsJoinsTheClusterFromTheSettingsFile() async throws {
        try await withHosts { environment, hosts in
            let item = try environment.file("share/doc.txt", "v1")
            let settings = try environment.file(
                "cluster.conf",
                "# What every filecoordd of this user reads at start, however it is started.\n"
                    + "cluster-endpoints = \(hosts.etcd.clientEndpoints.joined(separator: ","))\n"
                    + "host-name = hostC\ncluster-ttl = \(ClusterHosts.ttl)\nshared-folder = \(hosts.share)\n"
            )
            // fccoord finds no daemon on the test's own socket and starts one, as an app would after a crash.
            let result = try await environment.runTool(
                "fccoord",
                ["write", item, "--", "/bin/true"],
                environment: ["FILECOORDD_CLUSTER_CONFIG": settings]
            )
            #expect(result.status == 0, "\(result.error)")
            // It took the folder through the cluster, under its own name: it did not decide the claim alone.
            #expect(try !hosts.keys(of: "hostC").isEmpty, "the daemon started on demand did not join the cluster")
        }
    }

    @Test func etcdUnreachableAtStartTheDaemonServesLocalFoldersAndSaysWhy() async throws {
        try await TestEnvironment.run { environment in
            // A port nothing listens on: the kernel gave it and took it back.
            let closed = try EtcdCluster.freePort()
            let share = environment.path("share")
            try FileManager.default.createDirectory(atPath: share, withIntermediateDirectories: true)
            let daemon = try await environment.startDaemon(
                arguments: [
                    "--cluster-endpoints", "http://127.0.0.1:\(closed)", "--host-name", "lonely", "--cluster-ttl",
                    "\(ClusterHosts.ttl)", "--shared-folder", share,
                ]
            )
            try await daemon.waitForLog("cannot open a cluster session")
            let item = try environment.file("share/doc.txt", "v1")
            let shared = try await environment.runTool("fccoord", ["read", item, "--", "/bin/true"])
            #expect(shared.status != 0)
            #expect(shared.error.contains("cluster"), "\(shared.error)")
            let local = try environment.file("local.txt", "l")
            let untouched = try await environment.runTool("fccoord", ["write", local, "--", "/bin/true"])
            #expect(untouched.status == 0, "\(untouched.error)")
            let dump = try await environment.runTool("fcdump", ["cluster"])
            #expect(dump.output.contains("unavailable"), "\(dump.output)")
            #expect(dump.output.contains("127.0.0.1:\(closed)"), "\(dump.output)")
        }
    }

    @Test func oneMemberLostCoordinationGoesOnAllLostSharedClaimsFailLocalOnesDoNot() async throws {
        try await withHosts { environment, hosts in
            let item = try environment.file("share/doc.txt", "v1")
            // A follower: the leader's loss needs an election, which under load can outlast the tests' 2 s time to
            // live, and a host that cannot renew within it fences itself (as it must; a real cluster's 10 s covers an
            // election). Seen once in about 14 runs while member 0, killed here before, was the leader.
            let follower = try #require(await hosts.etcd.follower(), "no etcd member said who leads")
            try await hosts.etcd.kill(member: follower)
            // With two members of three the cluster has its quorum: a hand-over between the hosts still works.
            let writer = try await holdWrite(of: item, on: hosts.socketA, in: environment)
            let reader = try environment.startTool(
                "fccoord",
                ["read", item, "--", "/bin/true"],
                environment: ClusterHosts.client(of: hosts.socketB)
            )
            try await hosts.a.waitForLog("cluster: another host asks for the shared folder")
            try writer.send("release")
            try await eventually("the read on host B") { !reader.process.stillRuns }
            reader.process.waitForEnd()
            #expect(reader.process.endStatus == 0, "\(reader.error)")

            // Every member gone: host B's session cannot be renewed; past its fence shared claims fail clearly.
            try await hosts.etcd.killAll()
            try await hosts.b.waitForLog("cluster unreachable")
            let shared = try await environment.runTool(
                "fccoord",
                ["read", item, "--", "/bin/true"],
                environment: ClusterHosts.client(of: hosts.socketB)
            )
            #expect(shared.status != 0)
            #expect(shared.error.contains("cluster unreachable"), "\(shared.error)")
            let local = try environment.file("local.txt", "l")
            let untouched = try await environment.runTool(
                "fccoord",
                ["write", local, "--", "/bin/true"],
                environment: ClusterHosts.client(of: hosts.socketB)
            )
            #expect(untouched.status == 0, "\(untouched.error)")
        }
    }
}
