// The preload library on a case-insensitive file system (docs/SEMANTICS.md §15): it sends names as the program spelled
// them, and the daemon folds them below a mount that is case-insensitive by its type (Hello.daemon_folds_names), so a
// program's claim and a Swift process's meet whichever case each spells. An exFAT volume through FUSE (ExFATVolume,
// FCTestSupport: root, /dev/fuse, a loop device, exfatprogs and exfat-fuse); where it cannot be mounted the test is
// reported as skipped with the reason printed (CI requires it: FC_REQUIRE_EXFAT).

import FCSystem
import FCTestSupport
import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

@Suite("The preload library on a case-insensitive folder")
struct PreloadCaseFoldingTests {
    @Test(
        "A program writing DOCS/A.TXT waits for a Swift writer of Docs, and one writing DOCS/PLAN.TXT for one of Plan.txt",
        .enabled(if: ExFATVolume.shouldRun, "DID NOT RUN: needs an exFAT image mounted through FUSE")
    )
    func aProgramsClaimsMeetASwiftClientsSpelledInAnotherCase() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            // A program under the library connects first, and the volume is mounted after: the daemon reads the
            // mount table again when the kernel says it changed.
            _ = try env.file("before.txt", "old\n")
            #expect(try await env.runProgram(["tee", "before.txt"], input: "new\n").status == 0)
            let volume = try ExFATVolume()
            defer { volume.remove() }
            let root = volume.root.path
            try FileManager.default.createDirectory(atPath: root + "/Docs", withIntermediateDirectories: false)
            // Files that exist: the library claims a write that opens one (a file it creates has nothing to wait for).
            try FileSystemCalls.writeFile(root + "/Docs/a.txt", Array("old\n".utf8))
            try FileSystemCalls.writeFile(root + "/Docs/Plan.txt", Array("old\n".utf8))
            let swift = try await env.host("S")
            // A folder being moved that the program writes into, spelled otherwise (a folder has no identity to meet
            // by: only the folded key; a plain write of a folder blocks nothing inside it, SEMANTICS §2 rule 3); a
            // file in that folder, spelled otherwise.
            let cases = [
                (root + "/Docs", "moving", "DOCS/A.TXT"),
                (root + "/Docs/Plan.txt", "", "DOCS/PLAN.TXT"),
            ]
            for (held, options, written) in cases {
                try swift.send("write \(held) \(options) hold")
                try await swift.waitFor("holding write \(held)")
                let program = try env.startProgram(["tee", written], input: "x\n", in: root)
                let pid = program.process.processIdentifier
                // Its claim waits: fcdump lists it with one claim, while the program runs and its file is not made.
                var listing = ""
                let deadline = ContinuousClock.now + defaultTimeout
                while ContinuousClock.now < deadline, program.process.stillRuns {
                    listing = try await env.runTool("fcdump", ["clients"]).output
                    if listing.contains("preload:tee pid \(pid): 0 presenters, 1 claims") { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(program.process.stillRuns, "tee \(written) ran while \(held) was held for writing")
                #expect(listing.contains("preload:tee pid \(pid): 0 presenters, 1 claims"), "\(listing)")
                #expect(env.contents(root + "/" + written) == "old\n")
                try swift.send("release")
                try await swift.waitFor("done write \(held)")
                #expect(try await program.waitForExit() == 0)
                #expect(env.contents(root + "/" + written) == "x\n")
            }
        }
    }

    @Test(
        "A program's claim spelled otherwise than its lease's folder is counted in the lease: a Swift writer waits for it",
        .enabled(if: ExFATVolume.shouldRun, "DID NOT RUN: needs an exFAT image mounted through FUSE")
    )
    func aClaimSpelledOtherwiseIsCountedInTheLease() async throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        let root = volume.root.path
        try FileManager.default.createDirectory(atPath: root + "/Docs", withIntermediateDirectories: false)
        for name in ["first.txt", "held.txt", "other.txt"] {
            try FileSystemCalls.writeFile(root + "/Docs/" + name, Array("old\n".utf8))
        }
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let release = env.path("release")
            // The program writes Docs/first.txt (the daemon lends it the folder, `docs` as the daemon folds it), then
            // keeps DOCS/held.txt open: a path its lease's folder does not hold by its bytes. The daemon hands that
            // claim back into the lease; until stop 66 the library compared the paths again, found no lease, and let
            // the open through uncounted, so a recall found nothing running and a Swift writer went in beside it.
            let program = try await PreloadLeaseTests.startHolder(
                env,
                [root + "/Docs/first.txt", root + "/DOCS/held.txt", release],
                until: "held",
                leasesOn: [root + "/docs"]
            )
            let writer = try await env.host("W")
            try writer.send("write \(root)/docs/held.txt new")
            let listing = try await PreloadLeaseTests.waitForLease(env, of: program, on: root + "/docs", "recalled")
            #expect(
                try await writer.staysWithout("granted write"),
                "the write went in while the file was open: \(listing)"
            )
            try writeText("", toFile: release)
            _ = try await writer.waitFor("done write \(root)/docs/held.txt")
            #expect(program.output.contains("closed"))
            kill(program.process.processIdentifier, SIGKILL)
        }
    }

    @Test(
        "A FAT volume mounted over a program's leased folder recalls the lease: its claim spelled otherwise waits",
        .enabled(if: ExFATVolume.shouldRun, "DID NOT RUN: needs an exFAT image mounted through FUSE")
    )
    func aVolumeMountedOverALeasedFolderRecallsTheLease() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let folder = env.path("x")
            try FileManager.default.createDirectory(atPath: folder + "/DOCS", withIntermediateDirectories: true)
            let first = try env.file("x/DOCS/first.txt", "old\n")
            let go = env.path("go")
            // The program writes DOCS/first.txt twice (the daemon lends it DOCS, keyed as spelled: not folded yet),
            // then waits; once `go` exists it writes DOCS/late.txt, a claim its lease's folder holds by its bytes.
            let program = try await PreloadLeaseTests.startHolder(
                env,
                [first, "", go, folder + "/DOCS/late.txt"],
                until: "idle",
                leasesOn: [folder + "/DOCS"]
            )
            // A FAT volume comes over the folder: DOCS is now a folder of it, which the daemon keys as `docs`.
            let volume = try ExFATVolume(at: URL(fileURLWithPath: folder))
            defer { volume.remove() }
            try FileManager.default.createDirectory(atPath: folder + "/DOCS", withIntermediateDirectories: false)
            try FileSystemCalls.writeFile(folder + "/DOCS/late.txt", Array("old\n".utf8))
            let writer = try await env.host("W")
            try writer.send("write \(folder)/docs/late.txt hold")
            _ = try await writer.waitFor("holding write \(folder)/docs/late.txt")
            // Until stop 66 the lease stayed, keyed by the old table: the program decided DOCS/late.txt in its own
            // process, and wrote the file the Swift writer held.
            try writeText("", toFile: go)
            var listing = ""
            let deadline = ContinuousClock.now + defaultTimeout
            while ContinuousClock.now < deadline, !program.output.contains("wrote") {
                listing = try await env.runTool("fcdump", ["clients"]).output
                if listing.contains("(1 not granted)") { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(!program.output.contains("wrote"), "the program wrote while the file was held: \(listing)")
            #expect(listing.contains("(1 not granted)"), "\(listing)")
            try writer.send("release")
            _ = try await writer.waitFor("done write \(folder)/docs/late.txt")
            try await eventually("the program to write once the writer is done") { program.output.contains("wrote") }
            kill(program.process.processIdentifier, SIGKILL)
        }
    }

    /// A Python program under the preload: writes `argv[1]` twice (the second time in the lease the daemon lends it on
    /// its folder), prints `idle`; once `argv[2]` exists it opens `argv[3]` for writing and keeps it open, printing
    /// `opened`, until `argv[4]` exists; then closes it, prints `closed`, and stays alive.
    static let lateOpener = """
        import os, sys, time
        open(sys.argv[1], 'w').write('1')
        open(sys.argv[1], 'w').write('2')
        print('idle', flush=True)
        while not os.path.exists(sys.argv[2]): time.sleep(0.01)
        f = open(sys.argv[3], 'w'); f.write('3'); f.flush()
        print('opened', flush=True)
        while not os.path.exists(sys.argv[4]): time.sleep(0.01)
        f.close()
        print('closed', flush=True)
        while True: time.sleep(1)
        """

    @Test(
        "A file a program opens in its lease after a FAT volume is mounted above the lease's folder holds back a Swift writer of it",
        .enabled(if: ExFATVolume.shouldRun, "DID NOT RUN: needs an exFAT image mounted through FUSE")
    )
    func aFileOpenedInALeaseAfterAMountAboveItHoldsBackAWriter() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let folder = env.path("x")
            try FileManager.default.createDirectory(atPath: folder + "/DOCS", withIntermediateDirectories: true)
            let first = try env.file("x/DOCS/first.txt", "old\n")
            let (go, release) = (env.path("go"), env.path("release"))
            let late = folder + "/DOCS/late.txt"
            let program = try env.startProgram(["python3", "-c", Self.lateOpener, first, go, late, release])
            try await eventually("the program to print idle") { program.output.contains("idle") }
            _ = try await PreloadLeaseTests.waitForLease(env, of: program, on: folder + "/DOCS", "held")
            // A FAT volume comes over the folder: DOCS is now a folder of it, which the daemon keys as `docs`.
            let volume = try ExFATVolume(at: URL(fileURLWithPath: folder))
            defer { volume.remove() }
            try FileManager.default.createDirectory(atPath: folder + "/DOCS", withIntermediateDirectories: false)
            try FileSystemCalls.writeFile(late, Array("old\n".utf8))
            // The program opens DOCS/late.txt before the daemon hears of anything: its lease's folder holds the path
            // by its bytes, so it decides the claim in its own process and counts it in the lease.
            try writeText("", toFile: go)
            try await eventually("the program to open its file") { program.output.contains("opened") }
            // The writer's claim makes the daemon look at the mount table: it recalls the lease, whose claim held only
            // `DOCS` as keyed before the mount. Until stop 67 the write of `docs/late.txt` went in beside the open file.
            let writer = try await env.host("W")
            try writer.send("write \(folder)/docs/late.txt hold")
            var listing = ""
            let deadline = ContinuousClock.now + defaultTimeout
            while ContinuousClock.now < deadline, !writer.lines.contains(where: { $0.text.hasPrefix("holding write") })
            {
                listing = try await env.runTool("fcdump", ["clients"]).output
                if listing.contains("(1 not granted)") { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(listing.contains("(1 not granted)"), "\(listing)")
            #expect(
                try await writer.staysWithout("holding write"),
                "the write went in while the program had the file open: \(listing)"
            )
            try writeText("", toFile: release)
            _ = try await writer.waitFor("holding write \(folder)/docs/late.txt")
            #expect(program.output.contains("closed"))
            try writer.send("release")
            _ = try await writer.waitFor("done write \(folder)/docs/late.txt")
            kill(program.process.processIdentifier, SIGKILL)
        }
    }
}
