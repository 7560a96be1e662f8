import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

// Issue 42: a preloaded program alone in a folder gets a lease on it and decides its claims there in its own process
// (docs/PROTOCOL.md section 10.1): it has no thread to answer a recall, so it counts the claims it runs in each lease in
// a word the daemon shares, and the daemon answers the recall from it. What must hold: another process's claim waits
// for what runs in the lease and no longer; a lease with nothing running is taken back at once; one still in use past
// the program's timeout is taken back then; a daemon that crashed leaves nothing decided in process.

@Suite struct PreloadLeaseTests {
    /// A Python program under the preload: writes `argv[1]` (through the daemon; the folder is then lent to it), then
    /// opens `argv[2]` for writing and keeps it open (in the lease) until the file `argv[3]` exists, printing `held`
    /// and `closed`, then stays alive. `argv[2]` empty: writes `argv[1]` again (in the lease, which it reads then),
    /// (and `argv[5]`, in another folder, when given), prints `idle`, and once `argv[3]` exists writes `argv[4]` and
    /// prints `wrote`.
    static let holder = """
        import os, sys, time
        open(sys.argv[1], 'w').write('1')
        if sys.argv[2]:
            f = open(sys.argv[2], 'w')
            f.write('2'); f.flush()
            g = open(sys.argv[1], 'w'); g.write('3'); g.close()
            print('held', flush=True)
            while not os.path.exists(sys.argv[3]): time.sleep(0.01)
            f.close()
            print('closed', flush=True)
        else:
            open(sys.argv[1], 'w').write('3')
            if len(sys.argv) > 5: open(sys.argv[5], 'w').write('5')  # another folder: its grant waits unread
            print('idle', flush=True)
            while not os.path.exists(sys.argv[3]): time.sleep(0.01)
            h = open(sys.argv[4], 'w'); h.write('4'); h.close()
            print('wrote', flush=True)
        while True: time.sleep(1)
        """

    /// The folder of a test, with its files.
    static func folder(_ env: TestEnvironment) throws -> (first: String, held: String, other: String, release: String) {
        let folder = env.path("work")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let first = try env.file("work/first.txt", "")
        let held = try env.file("work/held.txt", "")
        let other = try env.file("work/other.txt", "old\n")
        return (first, held, other, env.path("release"))
    }

    /// `fcdump leases` until it lists a lease on `folder` in `state` (`held`, `recalled`); the test's program is the
    /// only process that could hold one there.
    static func waitForLease(
        _ env: TestEnvironment,
        of program: Program,
        on folder: String,
        _ state: String
    ) async throws -> String {
        var listing = ""
        let deadline = ContinuousClock.now + defaultTimeout
        while ContinuousClock.now < deadline {
            listing = try await env.runTool("fcdump", ["leases"]).output
            let found = listing.split(separator: "\n").contains {
                $0.contains("lease#") && $0.contains(folder) && $0.contains(state)
            }
            if found { return listing }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("no lease on \(folder) \(state) while \(program.process.processIdentifier) ran: \(listing)")
        return listing
    }

    /// Starts ``holder`` with `arguments` (under the preload, with `environment`), and waits until it printed `marker`
    /// and a lease on each of `folders` is held.
    static func startHolder(
        _ env: TestEnvironment,
        _ arguments: [String],
        until marker: String,
        leasesOn folders: [String],
        environment: [String: String] = [:]
    ) async throws -> Program {
        let program = try env.startProgram(["python3", "-c", holder] + arguments, environment: environment)
        try await eventually("the program to print \(marker)") { program.output.contains(marker) }
        for folder in folders { _ = try await waitForLease(env, of: program, on: folder, "held") }
        return program
    }

    /// Another process's coordinated write of `new` to `file` (`fccoord`), which must go through.
    static func writeThroughFccoord(_ env: TestEnvironment, _ file: String) async throws {
        let written = try await env.runTool("fccoord", ["write", file, "--", "sh", "-c", "echo new > \(file)"])
        #expect(written.status == 0, "\(written.error)")
        #expect(env.contents(file) == "new\n")
    }

    /// A reader in another process (fc-testhost) of `path` waits while `program` holds its file open, and goes in
    /// once the file `release` exists and the program printed `closed`.
    static func expectReaderHeldBack(
        _ env: TestEnvironment,
        reading path: String,
        until release: String,
        closes program: Program
    ) async throws {
        let reader = try await env.host("R")
        try reader.send("read \(path) hold")
        var listing = ""
        let deadline = ContinuousClock.now + defaultTimeout
        while ContinuousClock.now < deadline, !reader.lines.contains(where: { $0.text.hasPrefix("holding read") }) {
            listing = try await env.runTool("fcdump", ["clients"]).output
            if listing.contains("(1 not granted)") { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(listing.contains("(1 not granted)"), "\(listing)")
        #expect(!reader.lines.contains(where: { $0.text.hasPrefix("holding read") }), "the reader went in")
        try writeText("", toFile: release)
        _ = try await reader.waitFor("holding read \(path)")
        #expect(program.output.contains("closed"))
        try reader.send("release")
        _ = try await reader.waitFor("done read \(path)")
    }

    /// The folder that holds `path`.
    static func parent(of path: String) -> String { (path as NSString).deletingLastPathComponent }

    @Test(
        "A preloaded program alone in a folder decides its claims there in process; another's write waits for its open file, and goes on when it closes"
    )
    func anotherWriteWaitsForWhatRunsInTheLease() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (first, held, other, release) = try Self.folder(env)
            let folder = Self.parent(of: held)
            let program = try await Self.startHolder(env, [first, held, release], until: "held", leasesOn: [folder])
            // Its open file is a claim of its own process: the daemon holds none for it.
            let clients = try await env.runTool("fcdump", ["clients"]).output
            #expect(
                clients.contains("preload:python3 pid \(program.process.processIdentifier): 0 presenters, 0 claims"),
                "\(clients)"
            )

            // Another process writes another file of the folder: it waits for the lease, recalled, while the file is
            // open; it records what the program had printed when it ran.
            let seen = env.path("seen.txt")
            let writer = try env.startTool(
                "fccoord",
                ["write", other, "--", "sh", "-c", "cat \(program.outputPath) > \(seen); echo new > \(other)"]
            )
            let listing = try await Self.waitForLease(env, of: program, on: folder, "recalled")
            #expect(writer.process.stillRuns, "\(listing)")
            #expect(env.contents(other) == "old\n")

            try writeText("", toFile: release)
            try await eventually("the write to run after the close") { !writer.process.stillRuns }
            writer.process.waitForEnd()
            #expect(writer.process.endStatus == 0, "\(writer.error)")
            #expect(
                env.contents(seen)?.contains("closed") == true,
                "the write ran before the close: \(env.contents(seen) ?? "")"
            )
            #expect(env.contents(other) == "new\n")
            kill(program.process.processIdentifier, SIGKILL)
        }
    }

    @Test(
        "A lease in which nothing runs is taken back at once: the other write does not wait out the program's timeout"
    )
    func anIdleLeaseIsTakenBackAtOnce() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (first, _, other, release) = try Self.folder(env)
            // Its longest hold is ten minutes: a recall that waited for it would outlast the test's bound.
            let program = try await Self.startHolder(
                env,
                [first, "", release, first],
                until: "idle",
                leasesOn: [Self.parent(of: first)],
                environment: ["FILECOORD_PRELOAD_TIMEOUT_MS": "600000"]
            )
            let start = ContinuousClock.now
            try await Self.writeThroughFccoord(env, other)
            #expect(ContinuousClock.now - start < .seconds(20))
            let leases = try await env.runTool("fcdump", ["leases"]).output
            #expect(!leases.contains("lease#"), "\(leases)")
            kill(program.process.processIdentifier, SIGKILL)
        }
    }

    @Test("A lease still in use past the program's timeout is taken back then; the program's file stays open")
    func aLeaseInUseIsTakenBackAfterTheLongestHold() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            let (first, held, other, release) = try Self.folder(env)
            let program = try await Self.startHolder(
                env,
                [first, held, release],
                until: "held",
                leasesOn: [Self.parent(of: held)],
                environment: ["FILECOORD_PRELOAD_TIMEOUT_MS": "1500"]
            )
            try await Self.writeThroughFccoord(env, other)
            #expect(!program.output.contains("closed"), "the program closed its file: \(program.output)")
            try await daemon.waitForLog("still in use past its longest hold")
            kill(program.process.processIdentifier, SIGKILL)
        }
    }

    @Test(
        "After the daemon is killed, a lease of the old one decides nothing: the program's next write waits for a reader of the new daemon"
    )
    func aCrashedDaemonsLeaseDecidesNothing() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (first, _, other, release) = try Self.folder(env)
            // Its last write, in a second folder, leaves that folder's LeaseGranted unread in its socket, in front of
            // the end of the connection: the end must be seen behind it.
            try FileManager.default.createDirectory(atPath: env.path("second"), withIntermediateDirectories: false)
            let elsewhere = try env.file("second/else.txt", "")
            let program = try await Self.startHolder(
                env,
                [first, "", release, other, elsewhere],
                until: "idle",
                leasesOn: [env.path("second"), Self.parent(of: first)]
            )

            let killed = try #require(env.lockedDaemonPID(), "a daemon serves the program")
            kill(killed, SIGKILL)
            _ = try await env.startDaemon()
            let reader = try await env.host("R")
            try reader.send("read \(other) hold")
            _ = try await reader.waitFor("holding read \(other)")

            // The program writes `other` in the folder it was lent: the old daemon's word says nothing of the crash,
            // but its connection's end does, so the write asks the new daemon and waits for the reader.
            try writeText("", toFile: release)
            let listing = try await env.clientsListing(
                until: {
                    $0.contains("preload:python3 pid \(program.process.processIdentifier): 0 presenters, 1 claims")
                },
                while: program
            )
            #expect(
                listing.contains("preload:python3 pid \(program.process.processIdentifier): 0 presenters, 1 claims"),
                "\(listing)"
            )
            #expect(!program.output.contains("wrote"))
            #expect(env.contents(other) == "old\n")
            try reader.send("release")
            _ = try await reader.waitFor("done read \(other)")
            try await eventually("the write after the read") { program.output.contains("wrote") }
            kill(program.process.processIdentifier, SIGKILL)
        }
    }

    @Test(
        "A program lent more folders than it keeps gives the rest back: a file it opens in the last one holds a reader back"
    )
    func leasesBeyondTheTableAreGivenBack() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            // 130 folders, each written twice (the second write in the lease): the library keeps 128 leases. Then it
            // opens a file of the last folder for writing and keeps it open.
            var folders: [String] = []
            for index in 0..<130 {
                let folder = env.path("f\(index)")
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
                _ = try env.file("f\(index)/a.txt", "")
                folders.append(folder)
            }
            let last = try env.file("f129/b.txt", "old\n")
            let release = env.path("release")
            let script = """
                import os, sys, time
                for folder in sys.argv[1:131]:
                    open(folder + '/a.txt', 'w').write('1')
                    open(folder + '/a.txt', 'w').write('2')
                f = open(sys.argv[132], 'w'); f.write('new\\n'); f.flush()
                print('opened', flush=True)
                while not os.path.exists(sys.argv[131]): time.sleep(0.01)
                f.close()
                print('closed', flush=True)
                while True: time.sleep(1)
                """
            let program = try env.startProgram(["python3", "-c", script] + folders + [release, last])
            try await eventually("the program to open the file") { program.output.contains("opened") }
            // A reader of that file must wait for the program's write: had the library dropped the lease it could not
            // keep, the daemon would hand the open's claim back into it, the open would go through uncounted, and the
            // reader's recall would find the lease empty and let the reader in at once.
            try await Self.expectReaderHeldBack(env, reading: last, until: release, closes: program)
            kill(program.process.processIdentifier, SIGKILL)
        }
    }

    @Test(
        "A daemon that stops cleanly while a file is open in a lease: the next one holds the folder no longer than the program's timeout"
    )
    func aStoppedDaemonsLeaseInUseIsHeldForTheTimeoutOnly() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            let (first, held, other, release) = try Self.folder(env)
            let program = try await Self.startHolder(
                env,
                [first, held, release],
                until: "held",
                leasesOn: [Self.parent(of: held)],
                environment: ["FILECOORD_PRELOAD_TIMEOUT_MS": "1500"]
            )
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
            _ = try await env.startDaemon()
            // The next daemon holds what the program held, for the program's longest hold: the write waits that long
            // and goes on while the file is still open (it never declares, so without the bound it waits for its exit).
            let start = ContinuousClock.now
            try await Self.writeThroughFccoord(env, other)
            // About 2 s alone; it took 15.4 s once beside the whole first test phase. Without the bound it waits for
            // the program's exit, which never comes: `runTool` gives up at 30 s.
            #expect(ContinuousClock.now - start < .seconds(25))
            #expect(!program.output.contains("closed"))
            kill(program.process.processIdentifier, SIGKILL)
        }
    }

    @Test(
        "A program that closes the daemon's socket ends the claims of its leases with it: the daemon keeps none of its leases"
    )
    func closingTheSocketEndsTheLeasesClaims() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (first, held, _, release) = try Self.folder(env)
            // Holds `held` open in the lease, then closes every socket it has (the library's connection). Were the
            // claim still counted, the daemon would keep the folder leased to the closed connection for the program's
            // timeout (20 s), holding back the program's own next writes there.
            let script = """
                import os, sys, time
                open(sys.argv[1], 'w').write('1')
                f = open(sys.argv[2], 'w'); f.write('2'); f.flush()
                for name in os.listdir('/proc/self/fd'):
                    try:
                        if os.readlink('/proc/self/fd/' + name).startswith('socket:'): os.close(int(name))
                    except OSError: pass
                print('closed the socket', flush=True)
                while not os.path.exists(sys.argv[3]): time.sleep(0.01)
                """
            let program = try env.startProgram(
                ["python3", "-c", script, first, held, release],
                environment: ["FILECOORD_PRELOAD_TIMEOUT_MS": "20000"]
            )
            try await eventually("the program to close its socket") { program.output.contains("closed the socket") }
            let pid = program.process.processIdentifier
            let listing = try await env.clientsListing(until: { !$0.contains("pid \(pid)") }, while: program)
            #expect(!listing.contains("pid \(pid)"), "\(listing)")
            let leases = try await env.runTool("fcdump", ["leases"]).output
            #expect(!leases.contains("lease#"), "\(leases)")
            try writeText("", toFile: release)
            #expect(try await program.waitForExit() == 0)
        }
    }

    @Test(
        "A file with other names in a lent folder goes to the daemon with its identity: the program's open of it holds back a reader of its other name"
    )
    func aFileWithOtherNamesIsNotHandedBackIntoTheLease() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (first, held, _, release) = try Self.folder(env)
            try FileManager.default.createDirectory(atPath: env.path("elsewhere"), withIntermediateDirectories: false)
            let otherName = env.path("elsewhere/held.txt")
            try FileManager.default.linkItem(atPath: held, toPath: otherName)
            // The open of held.txt comes after the folder was lent. Sent without has_other_names, the daemon handed it
            // back into the lease, which the library refuses for a file with other names: after three tries it went
            // through uncoordinated. Sent without the file's identity, the daemon could not meet the reader of the
            // other name with it: the reader went in at once.
            let program = try await Self.startHolder(env, [first, held, release], until: "held", leasesOn: [])
            try await Self.expectReaderHeldBack(env, reading: otherName, until: release, closes: program)
            kill(program.process.processIdentifier, SIGKILL)
        }
    }

    /// A program that keeps a file open in its leased folder and moves another file out of it: the move reaches
    /// outside the lease, so the daemon recalls it, and the lease stays while the open file counts in it. Until stop
    /// 67 the move waited for that, its own open file, until the program's timeout (found by a read-only review); the
    /// lease now stands with the program's purpose, which its own claims pass (docs/SEMANTICS.md §13).
    @Test("A program moving a file out of its leased folder while it keeps another open there does not wait for itself")
    func aMoveOutOfTheLeaseDoesNotWaitForTheProgramsOwnOpenFile() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            for folder in ["d", "e"] {
                try FileManager.default.createDirectory(atPath: env.path(folder), withIntermediateDirectories: false)
            }
            _ = try env.file("d/a", "a\n")
            _ = try env.file("d/log", "")
            let go = env.path("go")
            let program = try env.startProgram(
                [
                    "python3", "-c",
                    """
                    import os, sys, time
                    d, e, go = sys.argv[1], sys.argv[2], sys.argv[3]
                    open(d + '/a', 'a').close()
                    open(d + '/a', 'a').close()  # in the lease
                    log = open(d + '/log', 'a')  # in the lease, kept open
                    print('idle', flush=True)
                    while not os.path.exists(go): time.sleep(0.01)
                    start = time.monotonic()
                    os.rename(d + '/a', e + '/a')
                    print('moved in %.3f s' % (time.monotonic() - start), flush=True)
                    time.sleep(60)
                    """,
                    env.path("d"), env.path("e"), go,
                ],
                // A move that waited for the program's own file would wait this long, past the test's patience.
                environment: ["FILECOORD_PRELOAD_TIMEOUT_MS": "120000"]
            )
            try await eventually("the program to print idle") { program.output.contains("idle") }
            _ = try await Self.waitForLease(env, of: program, on: env.path("d"), "held")
            let start = ContinuousClock.now
            try writeText("", toFile: go)
            try await eventually("the program to move the file") { program.output.contains("moved") }
            let waited = ContinuousClock.now - start
            // Milliseconds on an idle machine; 11 s was seen while a build ran beside the tests (2 cores).
            #expect(
                waited < .seconds(20),
                "the move waited \(waited) for the program's own open file: \(program.output)"
            )
            #expect(FileManager.default.fileExists(atPath: env.path("e/a")))
            kill(program.process.processIdentifier, SIGKILL)
        }
    }
}
