// NSFileVersion and `.forUploading` across real processes (issue 15): presenters in another process told of each
// version change, a sync tool's conflict resolved by an editor in another process, the store surviving `kill -9`
// in the middle of an add, a version following its item through a move, and an upload that does not hold writers.

import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

@Suite struct VersionEndToEndTests {
    /// The test's daemon, serving the test's own version store.
    @discardableResult
    private func daemon(_ env: TestEnvironment) async throws -> DaemonProcess {
        try await env.startDaemon(arguments: ["--versions-directory", env.path("versions")])
    }

    /// Every host of a test names the test's own version store (for a daemon it starts, and in process).
    private func host(_ env: TestEnvironment, _ name: String, fault: String? = nil) async throws -> HostProcess {
        try await env.host(
            name,
            environment: [
                "FILECOORD_VERSIONS_DIR": env.path("versions"),
                "FILECOORD_VERSION_STORE_FAULT": fault,
            ]
        )
    }

    /// The identifiers `versions PATH` prints for the other versions and the unresolved conflicts.
    private func versions(_ host: HostProcess, _ path: String, round: Int) async throws -> ([String], [String]) {
        try host.send("versions \(path)")
        let others = try await host.waitFor("versions \(path) ", count: round).text
        let conflicts = try await host.waitFor("conflicts \(path) ", count: round).text
        func ids(_ line: String) -> [String] {
            (line.split(separator: " ", omittingEmptySubsequences: false).last ?? "").split(separator: ",").map(
                String.init
            )
        }
        return (ids(others), ids(conflicts))
    }

    @Test("A sync tool in B adds a conflict; an editor in C resolves it; presenters in A hear every change")
    func presentersInAnotherProcessHearEachVersionChange() async throws {
        try await TestEnvironment.run { env in
            try await daemon(env)
            let folder = env.path("docs")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            let doc = try env.file("docs/notes.txt", "mine")
            let theirs = try env.file("theirs.txt", "theirs")
            let a = try await host(env, "A")
            let syncTool = try await host(env, "B")
            let editor = try await host(env, "C")
            try await a.present("A", doc)
            try await a.present("D", folder)

            try syncTool.send("add-version \(doc) \(theirs) conflict laptop")
            let added = try await syncTool.waitFor("done add-version \(doc) ")
            let id = String(added.text.split(separator: " ").last ?? "")
            try await a.waitFor("presenter A didGainVersion")
            try await a.waitFor("presenter D subitemDidGainVersion \(doc)")
            #expect(try await versions(editor, doc, round: 1) == ([id], [id]))

            try editor.send("resolve \(doc)")
            try await editor.waitFor("done resolve \(doc)")
            try await a.waitFor("presenter A didResolveConflictVersion")
            try await a.waitFor("presenter A didLoseVersion")
            try await a.waitFor("presenter D subitemDidResolveConflictVersion \(doc)")
            try await a.waitFor("presenter D subitemDidLoseVersion \(doc)")
            #expect(try String(contentsOfFile: doc, encoding: .utf8) == "theirs")
            #expect(try await versions(editor, doc, round: 2) == ([], []))
        }
    }

    @Test("kill -9 of the daemon in the middle of adding a version, and a restart: no torn version, none lost")
    func theStoreSurvivesKillNineInTheMiddleOfAnAdd() async throws {
        try await TestEnvironment.run { env in
            let doc = try env.file("doc.txt", "kept")
            var running: DaemonProcess? = try await daemon(env)
            let first = try await host(env, "B")
            try first.send("add-version \(doc)")
            let kept = String(try await first.waitFor("done add-version \(doc) ").text.split(separator: " ").last ?? "")
            for point in ["staged", "renamed"] {
                if let running {
                    running.signal(SIGKILL)
                    _ = try await running.waitForExit()
                }
                running = nil
                // The adder starts a daemon that inherits the fault: it stops at `point` (contents flushed in
                // staging; contents in place, row not committed) and is killed there.
                let adder = try await host(env, "adder-\(point)", fault: point)
                try writeText("torn \(point)", toFile: doc)
                try adder.send("add-version \(doc)")
                try await eventually(timeout: .seconds(30), "the daemon's add to stop at \(point)") {
                    FileManager.default.fileExists(atPath: env.path("versions/fault-\(point)"))
                }
                // The adder goes first, so that no reconnect of its own starts another daemon with the fault.
                let paused = try #require(env.lockedDaemonPID())
                try await adder.kill9()
                kill(paused, SIGKILL)
                try await eventually("the paused daemon to let go of its lock") {
                    let lock = open(env.socket + ".lock", O_RDWR)
                    defer { close(lock) }
                    return lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0
                }
                try FileManager.default.removeItem(atPath: env.path("versions/fault-\(point)"))
                running = try await daemon(env)
                // The restarted daemon repairs the store at its first request: exactly the version added before.
                let reader = try await host(env, "reader-\(point)")
                #expect(try await versions(reader, doc, round: 1) == ([kept], []))
                let contents = try FileManager.default.contentsOfDirectory(atPath: env.path("versions/contents"))
                #expect(contents == [kept], "no torn contents left")
                let staging = try FileManager.default.contentsOfDirectory(atPath: env.path("versions/staging"))
                #expect(staging.isEmpty, "no staging left by the killed daemon")
            }
            let folder = env.path("versions/contents/" + kept)
            let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first)
            #expect(try String(contentsOfFile: folder + "/" + name, encoding: .utf8) == "kept")
        }
    }

    @Test("A version follows its item through a coordinated move in another process")
    func aVersionFollowsItsItemThroughAMove() async throws {
        try await TestEnvironment.run { env in
            try await daemon(env)
            let doc = try env.file("draft.txt", "v1")
            let moved = env.path("final.txt")
            let b = try await host(env, "B")
            let c = try await host(env, "C")
            try b.send("add-version \(doc)")
            let id = String(try await b.waitFor("done add-version \(doc) ").text.split(separator: " ").last ?? "")
            try c.send("move \(doc) \(moved)")
            try await c.waitFor("done move \(doc)")
            #expect(try await versions(b, moved, round: 1) == ([id], []))
        }
    }

    @Test(".forUploading in A: a snapshot; a writer in B proceeds while A uploads; the snapshot goes afterwards")
    func uploadingDoesNotHoldWriters() async throws {
        try await TestEnvironment.run { env in
            try await daemon(env)
            let doc = try env.file("report.txt", "as uploaded")
            let a = try await host(env, "A")
            let b = try await host(env, "B")
            try a.send("upload \(doc) hold")
            let granted = try await a.waitFor("granted upload \(doc) ")
            let snapshot = String(granted.text.split(separator: " ").last ?? "")
            #expect(snapshot != doc)
            try await a.waitFor("holding upload \(doc)")
            try b.send("write \(doc) changed")
            try await b.waitFor("done write \(doc)")
            #expect(try String(contentsOfFile: snapshot, encoding: .utf8) == "as uploaded")
            try a.send("release")
            let done = try await a.waitFor("done upload \(doc)")
            #expect(done.text == "done upload \(doc) as uploaded")
            try await eventually("the snapshot to be removed") { !FileManager.default.fileExists(atPath: snapshot) }
            #expect(try String(contentsOfFile: doc, encoding: .utf8) == "changed")
        }
    }
}
