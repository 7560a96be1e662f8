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
    /// prints `idle`, and once `argv[3]` exists writes `argv[4]` and prints `wrote`.
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

    @Test(
        "A preloaded program alone in a folder decides its claims there in process; another's write waits for its open file, and goes on when it closes"
    )
    func anotherWriteWaitsForWhatRunsInTheLease() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (first, held, other, release) = try Self.folder(env)
            let program = try env.startProgram(["python3", "-c", Self.holder, first, held, release])
            try await eventually("the program to hold its file") { program.output.contains("held") }
            let folder = (held as NSString).deletingLastPathComponent
            _ = try await Self.waitForLease(env, of: program, on: folder, "held")
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
            let program = try env.startProgram(
                ["python3", "-c", Self.holder, first, "", release, first],
                environment: ["FILECOORD_PRELOAD_TIMEOUT_MS": "600000"]
            )
            try await eventually("the program to be idle") { program.output.contains("idle") }
            _ = try await Self.waitForLease(env, of: program, on: (first as NSString).deletingLastPathComponent, "held")
            let start = ContinuousClock.now
            let written = try await env.runTool("fccoord", ["write", other, "--", "sh", "-c", "echo new > \(other)"])
            #expect(written.status == 0, "\(written.error)")
            #expect(ContinuousClock.now - start < .seconds(20))
            #expect(env.contents(other) == "new\n")
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
            let program = try env.startProgram(
                ["python3", "-c", Self.holder, first, held, release],
                environment: ["FILECOORD_PRELOAD_TIMEOUT_MS": "1500"]
            )
            try await eventually("the program to hold its file") { program.output.contains("held") }
            _ = try await Self.waitForLease(env, of: program, on: (held as NSString).deletingLastPathComponent, "held")
            let written = try await env.runTool("fccoord", ["write", other, "--", "sh", "-c", "echo new > \(other)"])
            #expect(written.status == 0, "\(written.error)")
            #expect(env.contents(other) == "new\n")
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
            let program = try env.startProgram(["python3", "-c", Self.holder, first, "", release, other])
            try await eventually("the program to be idle") { program.output.contains("idle") }
            _ = try await Self.waitForLease(env, of: program, on: (first as NSString).deletingLastPathComponent, "held")

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
}
