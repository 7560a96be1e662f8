// Issue 14 across processes: two processes that spell one item differently (a symbolic link and its target; two
// cases of a name on a case-insensitive file system) meet in the daemon, and each hears the item as it spelled it.
// The case tests use an exFAT volume (ExFATVolume, FCTestSupport: root, /dev/fuse, a loop device, exfatprogs and
// exfat-fuse); where it cannot be mounted they are reported as skipped, with the reason printed.

import FCTestSupport
import Foundation
import Testing

@Suite("Canonical identity across processes (issue 14)")
struct IdentityEndToEndTests {
    @Test(
        "On an empty exFAT root, a writer creating New.txt holds off another process's writer of NEW.txt",
        .enabled(if: ExFATVolume.isAvailable, "DID NOT RUN: needs an exFAT image mounted through FUSE")
    )
    func writersOfOneNewFileInTwoCasesExcludeEachOtherAcrossProcesses() async throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let created = volume.root.path + "/New.txt"
            let shouted = volume.root.path + "/NEW.txt"
            let a = try await env.host("A")
            let b = try await env.host("B")
            // A decides the empty root before anything is in it; B decides once A's file exists. They must agree.
            try a.send("write \(created) first hold")
            try await a.waitFor("holding write \(created)")
            try b.send("write \(shouted) second")
            #expect(try await b.staysWithout("granted write"), "B's write was granted while A held New.txt")
            try a.send("release")
            let aDone = try await a.waitFor("done write \(created)")
            let bGranted = try await b.waitFor("granted write \(shouted)")
            #expect(aDone.round <= bGranted.round, "B's write was granted before A's accessor returned")
            try await b.waitFor("done write \(shouted)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: volume.root.path) == ["New.txt"])
            #expect(try String(contentsOfFile: created, encoding: .utf8) == "second")
        }
    }
}
