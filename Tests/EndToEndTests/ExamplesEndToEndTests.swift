// The examples as real processes (issue 27): `mirror` syncing two folders while fc-testhost processes write, move
// and delete and present the mirrored files; `notes` in a tmux pane, driven with send-keys and read with
// capture-pane, while other processes change its file.

import FCSystem
import Foundation
import Testing

/// A private tmux server (its own socket in the test's folder) running one program in a detached session.
///
/// - Important: Thread-safe (every call runs a tmux command).
final class TmuxSession: Sendable {
    let socket: String
    let session = "notes"

    /// Starts `command` in a 100 × 20 session with `environment` added.
    init(socket: String) {
        self.socket = socket
    }

    /// Starts `command` in a 100 × 20 session with `environment` added, and waits until the session exists.
    ///
    /// The client that starts the server is started detached (FCSystem's `DetachedProcess`), not with Foundation's
    /// `Process`: the tmux server it forks would inherit the descriptor through which `Process` learns that its
    /// child exited, and the start would never be seen to end.
    func start(environment: [String: String], command: [String]) async throws {
        var arguments = ["tmux", "-S", socket, "new-session", "-d", "-s", session, "-x", "100", "-y", "20"]
        for (key, value) in environment.sorted(by: { $0.key < $1.key }) { arguments += ["-e", "\(key)=\(value)"] }
        let inherited = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        _ = try DetachedProcess.spawn(
            executable: "/usr/bin/tmux",
            arguments: arguments + command,
            environment: inherited,
            logPath: socket + ".log"
        )
        let deadline = ContinuousClock.now + defaultTimeout
        while await !isRunning() {
            guard ContinuousClock.now < deadline else {
                let log = (try? String(contentsOfFile: socket + ".log", encoding: .utf8)) ?? ""
                throw HarnessError(description: "the tmux session did not start: \(log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Runs one tmux command and returns what it printed. The output goes through a file, not a pipe: the tmux
    /// server that `new-session` starts keeps the descriptors it inherited, so a pipe would never reach its end.
    ///
    /// The client is FCSystem's `ChildProcess`, reaped with `waitpid`, not Foundation's `Process`. In the CI run of
    /// stop 34, under the full suite's load, no `has-session` succeeded for 18 s after `notes` had connected to the
    /// daemon; Foundation's report of a child's exit, late under load (also seen in `DetachedDaemonTests`), is the
    /// likely cause, and `waitpid` leaves it out.
    @discardableResult
    func run(_ arguments: [String]) async throws -> String {
        let outputPath = socket + ".out-\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: outputPath, contents: nil) else {
            throw HarnessError(description: "cannot create \(outputPath)")
        }
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let client = try ChildProcess.start(["/usr/bin/tmux", "-S", socket] + arguments, outputPath: outputPath)
        var termination: ChildProcess.Termination?
        do {
            try await eventually("tmux \(arguments.first ?? "") to exit") {
                termination = try client.ended()
                return termination != nil
            }
        } catch {
            client.send(SIGKILL)
            _ = try? client.wait()
            throw error
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard termination == .exited(0) else {
            throw HarnessError(description: "tmux \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }

    /// Keys as tmux names them (`C-s`, `Enter`, `End`).
    func keys(_ names: String...) async throws { try await run(["send-keys", "-t", session] + names) }
    /// Text typed literally.
    func type(_ text: String) async throws { try await run(["send-keys", "-t", session, "-l", text]) }
    /// The screen as text.
    func screen() async throws -> String { try await run(["capture-pane", "-p", "-t", session]) }
    func isRunning() async -> Bool { (try? await run(["has-session", "-t", session])) != nil }
    func kill() async { _ = try? await run(["kill-server"]) }

    /// Waits until the screen contains `text`.
    func waitForScreen(_ text: String, timeout: Duration = defaultTimeout) async throws {
        let deadline = ContinuousClock.now + timeout
        var last = ""
        while ContinuousClock.now < deadline {
            last = (try? await screen()) ?? ""
            if last.contains(text) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw HarnessError(description: "timed out waiting for \"\(text)\" on the notes screen:\n\(last)")
    }
}

@Suite struct ExamplesEndToEndTests {
    private func contents(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? "<missing>"
    }

    @Test("mirror copies, moves, deletes and records a conflict as a conflict version, with coordinated calls")
    func mirrorSyncsTwoFolders() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon(arguments: ["--versions-directory", env.path("versions")])
            let versions: [String: String?] = ["FILECOORD_VERSIONS_DIR": env.path("versions")]
            let this = env.path("this")
            let other = env.path("other")
            try FileManager.default.createDirectory(atPath: this, withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: false)
            try env.file("this/a.txt", "one")
            let mirror = try await env.host(
                "mirror",
                arguments: ["--verbose", this, other],
                environment: versions,
                executable: "mirror",
                readyLine: "mirror: watching"
            )
            #expect(contents(other + "/a.txt") == "one")
            let tool = try await env.host("tool", environment: versions)
            try await tool.present("P", "\(other)/a.txt")

            // A coordinated write on this side reaches the presenter on the other side as a coordinated write.
            try tool.send("write \(this)/a.txt two")
            try await mirror.waitFor("mirror: copied a.txt from this to other", count: 2)
            #expect(contents(other + "/a.txt") == "two")
            try await tool.waitFor("presenter P relinquishToWriter")
            try await tool.waitFor("presenter P didChange")

            // A coordinated move: the same move on the other side, reported with item(at:didMoveTo:).
            try tool.send("move \(this)/a.txt \(this)/b.txt")
            try await mirror.waitFor("mirror: moved a.txt to b.txt on other")
            try await tool.waitFor("presenter P didMove \(other)/b.txt")
            #expect(contents(other + "/b.txt") == "two")
            #expect(!FileManager.default.fileExists(atPath: other + "/a.txt"))

            // A move the mirror hears of only after it was made (paused: its reports wait, as on a loaded machine).
            // The destination's deletion is announced before the move, and the mirror found the new name a new
            // file: it copied it and deleted the old name, and the presenter on the other side heard no move.
            try mirror.send("pause")
            try await mirror.waitFor("mirror: paused")
            try tool.send("move \(this)/b.txt \(this)/d.txt")
            try await tool.waitFor("done move \(this)/b.txt")
            try mirror.send("resume")
            try await mirror.waitFor("mirror: moved b.txt to d.txt on other")
            try await tool.waitFor("presenter P didMove \(other)/d.txt")
            #expect(contents(other + "/d.txt") == "two")
            #expect(!FileManager.default.fileExists(atPath: other + "/b.txt"))

            // A coordinated delete: deleted on the other side with .forDeleting.
            try tool.send("write \(this)/d.txt deleting")
            try await mirror.waitFor("mirror: deleted d.txt on other")
            try await tool.waitFor("presenter P accommodateDeletion")
            #expect(!FileManager.default.fileExists(atPath: other + "/d.txt"))

            // Both sides change while the devices are offline: a conflict version, no conflicted copy.
            try env.file("this/c.txt", "base")
            try await mirror.waitFor("mirror: copied c.txt from this to other")
            try mirror.send("pause")
            try await mirror.waitFor("mirror: paused", count: 2)
            try tool.send("write \(this)/c.txt mine")
            try await tool.waitFor("done write \(this)/c.txt")
            try tool.send("write \(other)/c.txt theirs")
            try await tool.waitFor("done write \(other)/c.txt")
            try mirror.send("resume")
            try await mirror.waitFor("mirror: conflict on c.txt")
            #expect(contents(this + "/c.txt") == "mine")
            #expect(contents(other + "/c.txt") == "mine")
            try tool.send("versions \(this)/c.txt")
            let conflicts = try await tool.waitFor("conflicts \(this)/c.txt ")
            #expect(!conflicts.text.hasSuffix(" "))
            let names =
                try FileManager.default.contentsOfDirectory(atPath: this)
                + FileManager.default
                .contentsOfDirectory(atPath: other)
            #expect(names.filter { !$0.hasPrefix(".") }.sorted() == ["c.txt", "c.txt"])
        }
    }

    @Test("notes in tmux: typing autosaves, other programs' writes, holds, conflicts, moves and deletes show")
    func notesInTmux() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon(arguments: ["--versions-directory", env.path("versions")])
            let versions: [String: String?] = ["FILECOORD_VERSIONS_DIR": env.path("versions")]
            let path = try env.file("notes.txt", "hello")
            let theirs = try env.file("theirs.txt", "their text")
            var environment = try childEnvironment(socket: env.socket)
            environment["FILECOORD_VERSIONS_DIR"] = env.path("versions")
            let tmux = TmuxSession(socket: env.path("tmux.sock"))
            try await tmux.start(
                environment: environment.filter {
                    ["FILECOORDD_SOCKET", "FILECOORDD_PATH", "FILECOORD_VERSIONS_DIR"].contains($0.key)
                },
                command: [try Products.executable("notes").path, "--autosave", "0.2", path]
            )
            // The tmux server outlives the test's processes: killed here, also when the test fails.
            do {
                try await tmux.waitForScreen("opened notes.txt")
                try await tmux.waitForScreen("hello")

                try await tmux.keys("End")
                try await tmux.type(" world")
                try await eventually("the autosave of the typed text") { contents(path) == "hello world" }
                try await tmux.waitForScreen("| saved")

                let tool = try await env.host("tool", environment: versions)
                try tool.send("write \(path) changed-elsewhere hold")
                try await tool.waitFor("holding write \(path)")
                try await tmux.waitForScreen("another program is writing")
                try tool.send("release")
                try await tmux.waitForScreen("reloaded: the file changed on disk")
                try await tmux.waitForScreen("changed-elsewhere")

                try tool.send("add-version \(path) \(theirs) conflict laptop")
                try await tmux.waitForScreen("conflicts: 1")
                try await tmux.keys("C-k")
                try await tmux.waitForScreen("1) from laptop: their text")
                try await tmux.keys("1")
                try await eventually("the conflict version kept") { contents(path) == "their text" }
                try await tmux.waitForScreen("their text")
                try tool.send("versions \(path)")
                try await tool.waitFor("conflicts \(path) ")
                #expect(tool.lines.contains { $0.text == "conflicts \(path) " })

                let renamed = env.path("renamed.txt")
                try tool.send("move \(path) \(renamed)")
                try await tmux.waitForScreen("notes  \(renamed)")
                try tool.send("write \(renamed) deleting")
                try await tmux.waitForScreen("the file was deleted")
                try await tmux.keys("C-q")
                for _ in 0..<500 where await tmux.isRunning() { try await Task.sleep(for: .milliseconds(20)) }
                #expect(await !tmux.isRunning())
            } catch {
                await tmux.kill()
                throw error
            }
            await tmux.kill()
        }
    }

    @Test("notes shows the mirror's copies into its file, which the mirror publishes as file progress (issue 44)")
    func notesShowsTheMirrorsCopies() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon(arguments: ["--versions-directory", env.path("versions")])
            let versions: [String: String?] = ["FILECOORD_VERSIONS_DIR": env.path("versions")]
            let this = env.path("this")
            let other = env.path("other")
            try FileManager.default.createDirectory(atPath: this, withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: false)
            let path = try env.file("this/notes.txt", "hello")
            let mirror = try await env.host(
                "mirror",
                arguments: [this, other],
                environment: versions,
                executable: "mirror",
                readyLine: "mirror: watching"
            )
            let environment = try childEnvironment(socket: env.socket)
            let tmux = TmuxSession(socket: env.path("tmux.sock"))
            try await tmux.start(
                environment: environment.filter { ["FILECOORDD_SOCKET", "FILECOORDD_PATH"].contains($0.key) },
                command: [try Products.executable("notes").path, "--autosave", "0.2", path]
            )
            do {
                try await tmux.waitForScreen("opened notes.txt")
                // The editor subscribes to its folder's file progress after it opened the file: once the daemon has
                // the subscription, a copy cannot come before it.
                let progress = try await env.progressListing { $0.contains("subscribed by notes") }
                #expect(progress.contains("\(this)\n    subscribed by notes"), "\(progress)")
                // The laptop's copy changes; the mirror copies it into the editor's file under a published progress.
                let tool = try await env.host("tool", environment: versions)
                try tool.send("write \(other)/notes.txt from-the-laptop")
                try await mirror.waitFor("mirror: copied notes.txt from other to this")
                try await tmux.waitForScreen("from-the-laptop")
                try await tmux.waitForScreen("copies in: 1")
                try tool.send("write \(other)/notes.txt second")
                try await tmux.waitForScreen("copies in: 2")
                #expect(!(try await tmux.screen()).contains("copies in: 3"))
            } catch {
                await tmux.kill()
                throw error
            }
            await tmux.kill()
        }
    }

    @Test("notes --browse lists a folder live (NSMetadataQuery) and shows a copy's file progress (issue 44)")
    func notesBrowsesAFolder() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let folder = env.path("docs")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            try writeText("one", toFile: folder + "/a.txt")
            let environment = try childEnvironment(socket: env.socket)
            let tmux = TmuxSession(socket: env.path("tmux.sock"))
            try await tmux.start(
                environment: environment.filter { ["FILECOORDD_SOCKET", "FILECOORDD_PATH"].contains($0.key) },
                command: [try Products.executable("notes").path, "--browse", folder]
            )
            do {
                try await tmux.waitForScreen("> a.txt  3 bytes")
                try await tmux.waitForScreen("1 documents | 1 documents")
                try runToCompletion("/bin/sh", ["-c", "cd '\(folder)' && echo hello > b.txt && echo more >> a.txt"])
                try await tmux.waitForScreen("  b.txt  6 bytes")
                try await tmux.waitForScreen("> a.txt  8 bytes")
                try await tmux.waitForScreen("2 documents | updated: ")
                // A copy in progress, published by another process, shows beside its file.
                let copier = try await env.host("copier")
                try copier.send("publish C \(folder)/b.txt 100 copying")
                try await tmux.waitForScreen("b.txt  6 bytes  copying 0%")
                // The proxy changes without a notification: the browser redraws while copies run.
                try copier.send("progress-set C 40")
                try await tmux.waitForScreen("b.txt  6 bytes  copying 40%")
                try copier.send("unpublish C")
                try await tmux.waitForScreen("copied b.txt")
                try runToCompletion("/bin/rm", [folder + "/a.txt"])
                try await tmux.waitForScreen("> b.txt  6 bytes")
                try await tmux.waitForScreen("1 documents | updated: 0 added, 0 changed, 1 removed")
                try await tmux.keys("C-q")
                for _ in 0..<500 where await tmux.isRunning() { try await Task.sleep(for: .milliseconds(20)) }
                #expect(await !tmux.isRunning())
            } catch {
                await tmux.kill()
                throw error
            }
            await tmux.kill()
        }
    }
}
