// fccoord (issue 24) against a private filecoordd, with Swift clients (fc-testhost) on the other side: claims held
// while the command runs, presenters answering first, move and delete, the JSON presenter with its hooks, every
// documented exit status, and flock(1)'s options (issue 43: -n, -E, -w, --fd).

import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

@Suite(.timeLimit(.minutes(1)))
struct FccoordTests {
    /// A shell command writing `text` to the first path fccoord hands it.
    private func writeCommand(_ text: String) -> [String] {
        ["--", "/bin/sh", "-c", "printf '\(text)' > \"$FCCOORD_PATH_1\""]
    }

    @Test func writeRunsTheCommandAfterASwiftPresenterRelinquishedAndSaved() async throws {
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("document.txt", "draft")
            let host = try await environment.host("app")
            try await host.present("P", item)

            let result = try await environment.runTool(
                "fccoord",
                ["write", "--merging", item] + writeCommand("from fccoord")
            )
            #expect(result.status == 0, "\(result.error)")
            #expect(try String(contentsOfFile: item, encoding: .utf8) == "from fccoord")
            let events = try await host.settledPresenterEvents("P", count: 3)
            // The presenter relinquished and saved before the command ran, and reacquired after it.
            #expect(Array(events.prefix(2)).sorted() == ["relinquishToWriter", "save"], "\(events)")
            #expect(events.contains("reacquire"), "\(events)")
        }
    }

    @Test func aCommandUnderThePreloadLibraryWritesInsideFccoordsClaim() async throws {
        // Issue 42: under a session-wide preload, the README's own example waited out the preload's timeout behind its
        // parent's claim (the shell's open asked for a write the claim it runs inside held), then wrote uncoordinated.
        // fccoord passes its claim's purpose to the command (FILECOORD_PURPOSE), and the library takes it.
        let library = try PreloadLibrary.path()
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("notes.txt", "first\n")
            let result = try await environment.runTool(
                "fccoord",
                ["write", item, "--", "/bin/sh", "-c", "echo second >> \"$FCCOORD_PATH_1\""],
                environment: ["LD_PRELOAD": library, "FILECOORD_PRELOAD_TIMEOUT_MS": "600000"]
            )
            #expect(result.status == 0, "\(result.error)")
            #expect(try String(contentsOfFile: item, encoding: .utf8) == "first\nsecond\n")
        }
    }

    @Test func aNestedFccoordRunsInsideItsParentsClaim() async throws {
        // The inner fccoord takes the outer one's purpose from its environment: before, it waited for the claim it
        // runs inside until its --timeout (status 124).
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("notes.txt", "text")
            let fccoord = try Products.executable("fccoord").path
            let result = try await environment.runTool(
                "fccoord",
                ["write", item, "--", fccoord, "read", "--timeout", "20", item, "--", "/bin/cat", item]
            )
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output == "text")
            // A purpose given explicitly is the one passed on.
            let explicit = try await environment.runTool(
                "fccoord",
                ["write", "--purpose", "backup", item, "--", "/bin/sh", "-c", "echo $FILECOORD_PURPOSE"]
            )
            #expect(explicit.output == "backup\n")
        }
    }

    @Test func theCommandWaitsForASwiftWriterAndItsStatusIsFccoordsStatus() async throws {
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("held.txt", "x")
            let host = try await environment.host("writer")
            try host.send("write \(item) swift hold")
            _ = try await host.waitFor("granted write \(item)")

            let marker = environment.path("ran")
            let tool = try environment.startTool(
                "fccoord",
                ["read", item, "--", "/bin/sh", "-c", "touch '\(marker)'; exit 7"]
            )
            try await Task.sleep(for: quietTime)
            #expect(!FileManager.default.fileExists(atPath: marker), "the command ran while a Swift writer held")
            try host.send("release")
            try await eventually("fccoord to exit") { !tool.process.stillRuns }
            tool.process.waitForEnd()
            #expect(tool.process.endStatus == 7, "\(tool.error)")
            #expect(FileManager.default.fileExists(atPath: marker))
        }
    }

    @Test func exitStatusesTellTimeoutRefusalBadPathAndMissingCommands() async throws {
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("item.txt", "x")
            let refusing = try environment.file("refusing.txt", "y")
            let host = try await environment.host("app")
            try await host.present("R", refusing, "refuse-save")
            try host.send("write \(item) swift hold")
            _ = try await host.waitFor("granted write \(item)")

            let timedOut = try await environment.runTool("fccoord", ["read", "--timeout", "0.3", item, "--", "true"])
            #expect(timedOut.status == 124, "\(timedOut.error)")
            #expect(timedOut.error.contains("fccoord: "))

            let refused = try await environment.runTool("fccoord", ["write", "--merging", refusing, "--", "true"])
            #expect(refused.status == 120, "\(refused.error)")
            #expect(refused.error.contains("could not be saved"), "\(refused.error)")

            let missing = environment.path("missing.txt")
            let badMove = try await environment.runTool("fccoord", ["move", missing, environment.path("to.txt")])
            #expect(badMove.status == 122, "\(badMove.error)")
            let badDelete = try await environment.runTool("fccoord", ["delete", missing])
            #expect(badDelete.status == 122, "\(badDelete.error)")

            let free = try environment.file("free.txt", "z")
            let notFound = try await environment.runTool("fccoord", ["read", free, "--", "/nonexistent/command"])
            #expect(notFound.status == 127, "\(notFound.error)")
            let usage = try await environment.runTool("fccoord", ["read", free])
            #expect(usage.status == 64, "\(usage.error)")
            try host.send("release")
        }
    }

    @Test func anUnansweringDaemonIsStatus121() async throws {
        try await TestEnvironment.run { environment in
            try FileManager.default.createDirectory(
                atPath: environment.path("run"),
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
            let listener = try SilentListener(path: environment.socket)
            let item = try environment.file("item.txt", "x")
            let result = try await environment.runTool(
                "fccoord",
                ["read", item, "--", "true"],
                environment: ["FILECOORD_CONNECT_TIMEOUT": "1", "FILECOORDD_PATH": "/nonexistent/filecoordd"]
            )
            #expect(result.status == 121, "\(result.error)")
            _ = listener
        }
    }

    @Test func moveAndDeleteTellSwiftPresenters() async throws {
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("a.txt", "a")
            let destination = environment.path("b.txt")
            let host = try await environment.host("app")
            try await host.present("P", item)

            let moved = try await environment.runTool("fccoord", ["move", item, destination])
            #expect(moved.status == 0, "\(moved.error)")
            _ = try await host.waitFor("presenter P didMove \(destination)")
            #expect(FileManager.default.fileExists(atPath: destination))

            let deleted = try await environment.runTool("fccoord", ["delete", destination])
            #expect(deleted.status == 0, "\(deleted.error)")
            _ = try await host.waitFor("presenter P accommodateDeletion")
            #expect(!FileManager.default.fileExists(atPath: destination))
        }
    }

    @Test func presentPrintsJSONLinesAndItsSaveHookAnswersBeforeTheSwiftWriter() async throws {
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("shared.txt", "v1")
            let saved = environment.path("saved-by-hook")
            let presenter = try environment.startTool(
                "fccoord",
                ["present", item, "--on-save", "printf hook > '\(saved)'; echo not-json"]
            )
            try await presenter.waitForOutput("\"event\":\"ready\"")

            let host = try await environment.host("writer")
            try host.send("write \(item) v2 merging")
            _ = try await host.waitFor("granted write \(item)")
            // The hook ran before the presenter answered, so before the write was granted.
            #expect(FileManager.default.fileExists(atPath: saved))
            _ = try await host.waitFor("done write \(item)")
            try await presenter.waitForOutput("\"event\":\"presentedItemDidChange\"")
            let lines = presenter.output.split(separator: "\n")
            for line in lines {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["event"] is String, "not a JSON event line: \(line)")
            }
            let events = lines.compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["event"] as? String
            }
            #expect(events.contains("relinquishPresentedItemToWriter"), "\(events)")
            #expect(events.contains("savePresentedItemChanges"), "\(events)")
            #expect(presenter.error.contains("not-json"), "the hook's output goes to standard error")

            kill(presenter.process.processIdentifier, SIGTERM)
            try await eventually("fccoord present to exit") { !presenter.process.stillRuns }
            presenter.process.waitForEnd()
            #expect(presenter.process.endStatus == 0)
        }
    }

    @Test func aFailingSaveHookRefusesTheSwiftWrite() async throws {
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("shared.txt", "v1")
            let presenter = try environment.startTool("fccoord", ["present", item, "--on-save", "exit 3"])
            try await presenter.waitForOutput("\"event\":\"ready\"")
            let host = try await environment.host("writer")
            try host.send("write \(item) v2 merging")
            let failed = try await host.waitFor("failed write \(item)")
            #expect(failed.text.contains("FileCoordinationBridgePresenter 3"), "\(failed.text)")
            #expect(try String(contentsOfFile: item, encoding: .utf8) == "v1")
        }
    }

    // MARK: flock(1)'s options (issue 43)

    /// Waits until the daemon has a claim waiting (fcdump's listing): the claim was queued.
    private func waitUntilAClaimWaits(_ environment: TestEnvironment) async throws {
        let deadline = ContinuousClock.now + defaultTimeout
        while true {
            let listing = try await environment.runTool("fcdump", []).output
            if listing.contains("waiting claim#") { return }
            if ContinuousClock.now >= deadline {
                throw HarnessError(description: "no claim waited; fcdump listed:\n\(listing)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Writes a line into the FIFO at `path` (opening it waits for its reader, the script), off the test's threads.
    private func release(_ path: String) async throws {
        try await Task.detached {
            guard let handle = FileHandle(forWritingAtPath: path) else {
                throw HarnessError(description: "cannot open the FIFO \(path)")
            }
            handle.write(Data("go\n".utf8))
            try handle.close()
        }.value
    }

    @Test func nonblockFailsAtOnceWhileASwiftHostHoldsAndSucceedsWhenNothingConflicts() async throws {
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("held.txt", "x")
            let free = try environment.file("free.txt", "y")
            let host = try await environment.host("writer")
            try host.send("write \(item) swift hold")
            _ = try await host.waitFor("holding write \(item)")

            // Without -n, the claim would wait the 30 s of -w and end with 124.
            let started = ContinuousClock.now
            let refused = try await environment.runTool("fccoord", ["write", "-n", "-w", "30", item, "--", "true"])
            #expect(refused.status == 119, "\(refused.error)")
            #expect(refused.error.contains("would wait for"), "\(refused.error)")
            #expect(ContinuousClock.now - started < .seconds(20))
            let reading = try await environment.runTool("fccoord", ["read", "--nonblock", item, "--", "true"])
            #expect(reading.status == 119, "\(reading.error)")
            // -E sets the status.
            let custom = try await environment.runTool("fccoord", ["write", "-n", "-E", "3", item, "--", "true"])
            #expect(custom.status == 3, "\(custom.error)")
            // Nothing conflicts: the command runs.
            let fine = try await environment.runTool("fccoord", ["write", "-n", free, "--", "/bin/sh", "-c", "exit 6"])
            #expect(fine.status == 6, "\(fine.error)")

            try host.send("release")
            _ = try await host.waitFor("done write \(item)")
            // Its end may leave the host a lease on the folder: recalled, and waited for (no claim runs in it).
            let after = try await environment.runTool("fccoord", ["write", "-n", item, "--", "true"])
            #expect(after.status == 0, "\(after.error)")
        }
    }

    @Test func wIsTheTimeoutAndEChangesItsStatus() async throws {
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("held.txt", "x")
            let host = try await environment.host("writer")
            try host.send("write \(item) swift hold")
            _ = try await host.waitFor("holding write \(item)")

            let timedOut = try await environment.runTool("fccoord", ["read", "-w", "0.3", item, "--", "true"])
            #expect(timedOut.status == 124, "\(timedOut.error)")
            #expect(timedOut.error.contains("within its timeout of 0.300 s"), "\(timedOut.error)")
            let custom = try await environment.runTool("fccoord", ["read", "-w", "0.3", "-E", "5", item, "--", "true"])
            #expect(custom.status == 5, "\(custom.error)")
            let bad = try await environment.runTool("fccoord", ["read", "-E", "256", item, "--", "true"])
            #expect(bad.status == 64, "\(bad.error)")
            try host.send("release")
        }
    }

    @Test func fdHoldsTheClaimUntilTheSubshellExits() async throws {
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("doc.txt", "v1")
            let fifo = environment.path("release")
            #expect(mkfifo(fifo, 0o600) == 0)
            let fccoord = try Products.executable("fccoord").path
            let script = #"( "$0" write -n --fd 9 "$1" || exit 1; echo held; read line < "$2" ) 9>"$1"; echo out"#
            let shell = try environment.startProgram(["/bin/sh", "-c", script, fccoord, item, fifo], preloaded: false)
            // A failed check leaves the shell waiting on its FIFO: it goes (and its holder with it).
            defer { if shell.process.stillRuns { kill(shell.process.processIdentifier, SIGKILL) } }
            try await eventually("the subshell to hold the claim: \(shell.error)") { shell.output.contains("held") }

            // Another writer would wait: -n is refused, and a Swift writer is queued.
            let refused = try await environment.runTool("fccoord", ["write", "-n", item, "--", "true"])
            #expect(refused.status == 119, "\(refused.error)")
            let host = try await environment.host("writer")
            try host.send("write \(item) swift")
            try await waitUntilAClaimWaits(environment)
            #expect(shell.process.stillRuns)
            // The subshell exits: the claim ends, and the writer is granted (well before the holder's 30 s recheck:
            // the exit is what ended it).
            try await release(fifo)
            _ = try await host.waitFor("granted write \(item)", timeout: .seconds(15))
            #expect(try await shell.waitForExit() == 0)
            #expect(shell.output == "held\nout\n", "the holder writes nothing to the script's output")
        }
    }

    @Test func fdHoldsTheClaimUntilTheShellClosesTheDescriptor() async throws {
        try await TestEnvironment.run { environment in
            _ = try await environment.startDaemon()
            let item = try environment.file("doc.txt", "v1")
            let closeIt = environment.path("close")
            let end = environment.path("end")
            #expect(mkfifo(closeIt, 0o600) == 0 && mkfifo(end, 0o600) == 0)
            let fccoord = try Products.executable("fccoord").path
            let script = #"""
                exec 9>"$1"; "$0" write --fd 9 "$1" || exit 1; echo held
                read line < "$2"; exec 9>&-; echo closed; read line < "$3"
                """#
            let shell = try environment.startProgram(
                ["/bin/sh", "-c", script, fccoord, item, closeIt, end],
                preloaded: false
            )
            defer { if shell.process.stillRuns { kill(shell.process.processIdentifier, SIGKILL) } }
            try await eventually("the shell to hold the claim: \(shell.error)") { shell.output.contains("held") }
            let host = try await environment.host("writer")
            try host.send("write \(item) swift")
            try await waitUntilAClaimWaits(environment)
            // exec 9>&-: the claim ends while the shell still runs (it waits on the second FIFO).
            try await release(closeIt)
            _ = try await host.waitFor("granted write \(item)", timeout: .seconds(15))
            #expect(shell.process.stillRuns)
            try await release(end)
            #expect(try await shell.waitForExit() == 0)
        }
    }
}
