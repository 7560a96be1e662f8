// Nothing acknowledged is lost (issue 28): versions added at once by several processes, through the daemon and in
// process, and while the daemon is killed with `kill -9`, are all listed afterwards, in every process, and the store
// holds exactly what is listed.

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
        process.waitUntilExit()
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
            #expect(Set(added).subtracting(listing).isEmpty, "every acknowledged version is listed")
            #expect(Set(listing) == (try storedContents(env)), "contents/ holds exactly what is listed")
            #expect(Set(listing) == (try indexedRows(env)), "the index holds exactly what is listed")
            print("acknowledged \(added.count), listed \(listing.count)")
        }
    }

    @Test(
        "A full disk under the version store: a clear error, nothing half added, and the daemon keeps serving",
        .enabled(if: geteuid() == 0, "mounting a small tmpfs needs root (CI runs as root)")
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
}
