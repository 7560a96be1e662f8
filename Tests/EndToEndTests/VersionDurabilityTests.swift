// Nothing acknowledged is lost (issue 28): versions added at once by several processes, through the daemon and in
// process, and while the daemon is killed with `kill -9`, are all listed afterwards, in every process, and the store
// holds exactly what is listed.

import FCSystem
import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

@Suite struct VersionDurabilityTests {
    /// A host naming the test's own version store (for a daemon it starts, and in process).
    private func host(
        _ env: TestEnvironment,
        _ name: String,
        extra: [String: String?] = [:]
    ) async throws
        -> HostProcess
    {
        var environment: [String: String?] = ["FILECOORD_VERSIONS_DIR": env.path("versions")]
        for (key, value) in extra { environment[key] = value }
        return try await env.host(name, environment: environment)
    }

    /// The identifiers `versions PATH` prints for the other versions.
    private func listed(_ host: HostProcess, _ path: String, round: Int) async throws -> [String] {
        try host.send("versions \(path)")
        let line = try await host.waitFor("versions \(path) ", count: round).text
        return (line.split(separator: " ", omittingEmptySubsequences: false).last ?? "").split(separator: ",").map(
            String.init
        )
    }

    /// The versions `host` was told were added to `path`.
    private func acknowledged(_ host: HostProcess, _ path: String) -> [String] {
        let prefix = "done add-version \(path) "
        return host.lines.filter { $0.text.hasPrefix(prefix) }.map { String($0.text.dropFirst(prefix.count)) }
    }

    /// The folders of `contents/` in the test's store.
    private func storedContents(_ env: TestEnvironment) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: env.path("versions/contents")))
    }

    /// The rows of the store's index (the `sqlite3` shell reads it as another process would).
    private func indexedRows(_ env: TestEnvironment) throws -> Set<String> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sqlite3", env.path("versions/index.sqlite"), "SELECT id FROM version"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitForEnd()
        return Set(String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init))
    }

    @Test(
        "Three processes add six versions each at once: every acknowledged version is listed, in every process",
        arguments: ["daemon", "in-process", "started-by-clients", "mixed"],
        ["", "parallel", "coordinated parallel"]
    )
    func concurrentAddsAreAllListed(arbiter: String, mode: String) async throws {
        try await TestEnvironment.run { env in
            var extra: [String: String?] = [:]
            if arbiter == "daemon" {
                _ = try await env.startDaemon(arguments: ["--versions-directory", env.path("versions")])
            } else if arbiter == "in-process" {
                extra["FILECOORD_ARBITER"] = "in-process"
            } else if arbiter == "mixed" {
                _ = try await env.startDaemon(arguments: ["--versions-directory", env.path("versions")])
            }
            let doc = try env.file("doc.txt", "the document")
            var hosts: [HostProcess] = []
            for name in ["A", "B", "C"] {
                if arbiter == "mixed" && name != "A" { extra["FILECOORD_ARBITER"] = "in-process" }
                hosts.append(try await host(env, name, extra: extra))
            }
            for host in hosts { try host.send("add-versions \(doc) 6 4096 \(mode)") }
            var added: [String] = []
            for host in hosts {
                try await host.waitFor("done add-versions \(doc)", timeout: .seconds(60))
                let failures = host.lines.filter { $0.text.hasPrefix("failed ") }.map(\.text)
                #expect(failures.isEmpty, "[\(host.name)] an add failed: \(failures)")
                added += acknowledged(host, doc)
            }
            #expect(added.count == 18)
            for host in hosts {
                let listing = try await listed(host, doc, round: 1)
                #expect(Set(listing) == Set(added), "[\(host.name)] lists what was acknowledged")
                #expect(listing.count == added.count)
            }
            #expect(try storedContents(env) == Set(added), "contents/ holds exactly the acknowledged versions")
            #expect(try indexedRows(env) == Set(added), "the index holds exactly the acknowledged versions")
        }
    }

    @Test("kill -9 of the daemon while three processes add 4 MiB versions: every acknowledged version survives")
    func acknowledgedVersionsSurviveKillNine() async throws {
        try await TestEnvironment.run { env in
            let doc = try env.file("doc.txt", "the document")
            var hosts: [HostProcess] = []
            for name in ["A", "B", "C"] { hosts.append(try await host(env, name)) }
            for host in hosts { try host.send("add-versions \(doc) 6 4194304") }
            // Killed twice, each time once a few more versions were acknowledged; a client starts the next daemon.
            for round in 1...2 {
                try await eventually(timeout: .seconds(60), "versions to be added") {
                    hosts.map { acknowledged($0, doc).count }.reduce(0, +) >= round * 5
                }
                let pid = try #require(env.lockedDaemonPID())
                kill(pid, SIGKILL)
            }
            var added: [String] = []
            for host in hosts {
                try await host.waitFor("done add-versions \(doc)", timeout: .seconds(120))
                added += acknowledged(host, doc)
            }
            let listing = try await listed(hosts[0], doc, round: 1)
            #expect(listing != ["(nil)"], "the versions are listed; the host said: \(hosts[0].standardError())")
            #expect(Set(added).subtracting(listing).isEmpty, "every acknowledged version is listed")
            #expect(Set(listing) == (try storedContents(env)), "contents/ holds exactly what is listed")
            #expect(Set(listing) == (try indexedRows(env)), "the index holds exactly what is listed")
            print("acknowledged \(added.count), listed \(listing.count)")
        }
    }

    @Test(
        "A full disk under the version store: a clear error, nothing half added, and the daemon keeps serving",
        .enabled(if: ProcessIdentity.effectiveUserID == 0, "mounting a small tmpfs needs root (CI runs as root)")
    )
    func aFullDiskGivesAClearErrorAndTheDaemonServes() async throws {
        try await TestEnvironment.run { env in
            let store = env.path("versions")
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
            try runToCompletion("/bin/mount", ["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", store])
            defer { try? runToCompletion("/bin/umount", ["-l", store]) }
            _ = try await env.startDaemon(arguments: ["--versions-directory", store])
            let doc = try env.file("doc.txt", "the document")
            let a = try await host(env, "A")
            try a.send("add-versions \(doc) 1 1024")
            try await a.waitFor("done add-versions \(doc)", count: 1, timeout: .seconds(30))
            let kept = acknowledged(a, doc)
            #expect(kept.count == 1)
            // 4 MiB into a 1 MiB store: refused with the reason, and nothing of it left behind.
            try a.send("add-versions \(doc) 1 4194304")
            let failed = try await a.waitFor("failed add-version \(doc) ", timeout: .seconds(30))
            #expect(failed.text.contains("No version was added"), "the error says nothing was added")
            #expect(failed.text.contains("space") || failed.text.contains("full"), "the error names a full disk")
            try await a.waitFor("done add-versions \(doc)", count: 2, timeout: .seconds(30))
            // The daemon still coordinates and still serves the store.
            try a.send("read \(doc)")
            try await a.waitFor("done read \(doc) the document")
            #expect(try await listed(a, doc, round: 1) == kept)
            #expect(try storedContents(env) == Set(kept), "no torn contents left")
            let staging = try FileManager.default.contentsOfDirectory(atPath: store + "/staging")
            #expect(staging.isEmpty, "no staging left by the failed add")
            try a.send("add-versions \(doc) 1 1024")
            try await a.waitFor("done add-versions \(doc)", count: 3, timeout: .seconds(30))
            #expect(acknowledged(a, doc).count == 2, "a version that fits is added afterwards")
        }
    }

    /// The scenario of issue 36, as a careful user tried it: the store on a small tmpfs filled, grown, three processes
    /// adding at once, then adding while the daemon is killed. Every acknowledged version is listed by a fresh process
    /// after each step. Three rounds, each on a fresh store (the losses showed in every round before the fix).
    @Test(
        "Issue 36's scenario: a full store grown again, concurrent adds, a daemon killed: nothing acknowledged lost",
        .enabled(if: ProcessIdentity.effectiveUserID == 0, "mounting a small tmpfs needs root (CI runs as root)"),
        arguments: 1...3
    )
    func fullStoreThenConcurrentAddsThenKillLoseNothing(round: Int) async throws {
        try await TestEnvironment.run { env in
            let store = env.path("versions")
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
            try runToCompletion("/bin/mount", ["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", store])
            defer { try? runToCompletion("/bin/umount", ["-l", store]) }
            let doc = try env.file("doc.txt", String(repeating: "x", count: 1024))
            var acknowledgedSoFar: Set<String> = []
            /// A fresh process lists every version acknowledged so far, and the store holds nothing else.
            func expectAllListed(_ step: String) async throws {
                let fresh = try await host(env, "fresh-\(step)")
                let listing = try await listed(fresh, doc, round: 1)
                let missing = acknowledgedSoFar.subtracting(listing)
                #expect(
                    missing.isEmpty,
                    "round \(round), \(step): \(missing.count) acknowledged versions are not listed"
                )
                #expect(
                    Set(listing) == (try storedContents(env)),
                    "round \(round), \(step): contents/ is what is listed"
                )
            }

            // 1. Adds until the store is full: a clear error, and what was acknowledged is listed.
            let filler = try await host(env, "filler")
            try filler.send("add-versions \(doc) 24 262144")
            try await filler.waitFor("done add-versions \(doc)", timeout: .seconds(120))
            let fillerAdds = acknowledged(filler, doc)
            let failures = filler.lines.filter { $0.text.hasPrefix("failed add-version") }.map(\.text)
            #expect(!fillerAdds.isEmpty && !failures.isEmpty, "the store filled up: \(fillerAdds.count) added")
            #expect(failures.allSatisfy { $0.contains("No version was added") }, "clear errors: \(failures)")
            acknowledgedSoFar.formUnion(fillerAdds)
            try await expectAllListed("full")

            // 2. The store grows again; one more add succeeds.
            try runToCompletion("/bin/mount", ["-o", "remount,size=128m", store])
            try filler.send("add-versions \(doc) 1 262144")
            try await filler.waitFor("done add-versions \(doc)", count: 2, timeout: .seconds(60))
            acknowledgedSoFar.formUnion(acknowledged(filler, doc))
            #expect(acknowledgedSoFar.count == fillerAdds.count + 1)
            try await expectAllListed("grown")

            // 3. Three processes add six versions each, at once.
            var adders: [HostProcess] = []
            for name in ["A", "B", "C"] { adders.append(try await host(env, name)) }
            for adder in adders { try adder.send("add-versions \(doc) 6 1024 parallel") }
            for adder in adders {
                try await adder.waitFor("done add-versions \(doc)", timeout: .seconds(120))
                #expect(acknowledged(adder, doc).count == 6, "[\(adder.name)] every add succeeded")
                acknowledgedSoFar.formUnion(acknowledged(adder, doc))
            }
            try await expectAllListed("concurrent")

            // 4. Three processes add six 4 MiB versions each (one after another in each); the daemon is killed once the
            // first of them is acknowledged, with the other seventeen sent or under way.
            let before = adders.map { acknowledged($0, doc).count }.reduce(0, +)
            for adder in adders { try adder.send("add-versions \(doc) 6 4194304") }
            try await eventually(timeout: .seconds(60), "the first add of this step to be acknowledged") {
                adders.map { acknowledged($0, doc).count }.reduce(0, +) > before
            }
            let killed = try #require(env.lockedDaemonPID(), "a daemon serves the clients")
            kill(killed, SIGKILL)
            var failed = 0
            for adder in adders {
                try await adder.waitFor("done add-versions \(doc)", count: 2, timeout: .seconds(180))
                acknowledgedSoFar.formUnion(acknowledged(adder, doc))
                failed += adder.lines.filter { $0.text.hasPrefix("failed add-version") }.count
            }
            try await expectAllListed("killed")
            print("round \(round): \(acknowledgedSoFar.count) acknowledged, \(failed) adds failed with the daemon")
        }
    }

    /// A process whose add is paused at `point` by the store's test fault: the daemon (`daemon`) or an in-process
    /// host (`in-process`). Returns the adding host and the pid of the paused process, once it is paused.
    private func pausedAdd(
        _ env: TestEnvironment,
        at point: String,
        in arbiter: String,
        of doc: String
    ) async throws -> (adder: HostProcess, paused: pid_t) {
        let adder: HostProcess
        if arbiter == "daemon" {
            _ = try await env.startDaemon(
                arguments: ["--versions-directory", env.path("versions")],
                environment: ["FILECOORD_VERSION_STORE_FAULT": point]
            )
            adder = try await host(env, "adder")
        } else {
            adder = try await host(
                env,
                "adder",
                extra: ["FILECOORD_ARBITER": "in-process", "FILECOORD_VERSION_STORE_FAULT": point]
            )
        }
        try adder.send("add-versions \(doc) 1 1024")
        try await eventually(timeout: .seconds(30), "the add to stop at \(point)") {
            FileManager.default.fileExists(atPath: env.path("versions/fault-\(point)"))
        }
        let paused = try #require(arbiter == "daemon" ? env.lockedDaemonPID() : adder.pid)
        return (adder, paused)
    }

    @Test(
        "An add paused between its rename and its commit while another process opens the store: the repair waits, the add is kept",
        arguments: ["daemon", "in-process"]
    )
    func repairWaitsForAnAddBetweenRenameAndCommit(arbiter: String) async throws {
        try await TestEnvironment.run { env in
            let doc = try env.file("doc.txt", "the document")
            let (adder, _) = try await pausedAdd(env, at: "renamed", in: arbiter, of: doc)
            #expect(try storedContents(env).count == 1, "the paused add's contents are in place")
            // Another process opens the store (its repair runs first) while the add is paused.
            let other = try await host(env, "other", extra: ["FILECOORD_ARBITER": "in-process"])
            try other.send("versions \(doc)")
            #expect(try await other.staysWithout("versions \(doc)"), "the repair waits for the add's transaction")
            #expect(try storedContents(env).count == 1, "the repair did not remove contents an add may still commit")
            try FileManager.default.removeItem(atPath: env.path("versions/fault-renamed"))
            try await adder.waitFor("done add-versions \(doc)", timeout: .seconds(30))
            let added = acknowledged(adder, doc)
            #expect(added.count == 1, "the add succeeded: \(adder.lines.map(\.text))")
            let listing = try await other.waitFor("versions \(doc) ", timeout: .seconds(60)).text
            #expect(added.allSatisfy { listing.hasSuffix($0) }, "the other process lists the add: \(listing)")
            #expect(try storedContents(env) == Set(added), "the contents of the acknowledged add are kept")
            let fresh = try await host(env, "fresh", extra: ["FILECOORD_ARBITER": "in-process"])
            #expect(Set(try await listed(fresh, doc, round: 1)) == Set(added))
            #expect(try storedContents(env) == Set(added), "a later repair keeps them too")
        }
    }

    @Test(
        "An add stopped at a crash point while another live process adds and lists; then killed: only it is absent",
        arguments: ["staged", "renamed"],
        ["daemon", "in-process"]
    )
    func aCrashPointAgainstALiveProcess(point: String, arbiter: String) async throws {
        try await TestEnvironment.run { env in
            let doc = try env.file("doc.txt", "the document")
            let (_, paused) = try await pausedAdd(env, at: point, in: arbiter, of: doc)
            let live = try await host(env, "live", extra: ["FILECOORD_ARBITER": "in-process"])
            try live.send("add-versions \(doc) 1 1024")
            if point == "staged" {
                // No lock is held while contents are staged: the live process adds at once and keeps the staging.
                try await live.waitFor("done add-versions \(doc)", timeout: .seconds(30))
                let staging = try FileManager.default.contentsOfDirectory(atPath: env.path("versions/staging"))
                #expect(staging.count == 1, "the live process's repair kept the paused add's staging")
            } else {
                // The paused add holds the index's write lock: the live process waits for it.
                #expect(try await live.staysWithout("done add-versions \(doc)"))
            }
            kill(paused, SIGKILL)
            try await live.waitFor("done add-versions \(doc)", timeout: .seconds(60))
            let kept = acknowledged(live, doc)
            #expect(kept.count == 1, "the live process's add succeeded: \(live.lines.map(\.text))")
            // A fresh process repairs what the killed one left: exactly the live process's version remains.
            let fresh = try await host(env, "fresh", extra: ["FILECOORD_ARBITER": "in-process"])
            #expect(Set(try await listed(fresh, doc, round: 1)) == Set(kept))
            #expect(try storedContents(env) == Set(kept), "the killed add left no contents")
            #expect(try indexedRows(env) == Set(kept), "and no row")
            let staging = try FileManager.default.contentsOfDirectory(atPath: env.path("versions/staging"))
            #expect(staging.isEmpty, "and no staging")
        }
    }

    @Test("A directory the daemon made for a client's version is kept across a daemon restart while the client lives")
    func aClientsTemporaryDirectoryOutlivesADaemonRestart() async throws {
        try await TestEnvironment.run { env in
            let doc = try env.file("doc.txt", "the document")
            let client = try await host(env, "client")
            try client.send("version-temp \(doc)")
            let line = try await client.waitFor("version-temp \(doc) ").text
            let folder = String(line.dropFirst("version-temp \(doc) ".count))
            #expect(folder.hasPrefix(env.path("versions/tmp/")), "the store's own folder: \(folder)")
            let contents = folder + "/prepared.txt"
            try writeText("prepared", toFile: contents)
            // The daemon that made it dies; the next one, started by another client, repairs the store.
            let killed = try #require(env.lockedDaemonPID())
            kill(killed, SIGKILL)
            try await eventually("the killed daemon to let go of its lock") {
                let lock = open(env.socket + ".lock", O_RDWR)
                defer { close(lock) }
                return lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0
            }
            let other = try await host(env, "other")
            _ = try await listed(other, doc, round: 1)
            #expect(FileManager.default.fileExists(atPath: contents), "the live client's directory was kept")
            try client.send("add-version \(doc) \(contents) moving")
            let added = try await client.waitFor("done add-version \(doc) ", timeout: .seconds(60)).text
            let id = String(added.split(separator: " ").last ?? "")
            #expect(try await listed(other, doc, round: 2) == [id])
        }
    }
}
