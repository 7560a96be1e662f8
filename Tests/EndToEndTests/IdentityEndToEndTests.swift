// Issue 14 across processes: two processes that spell one item differently (a symbolic link and its target; two
// cases of a name on a case-insensitive file system) meet in the daemon, and each hears the item as it spelled it.
// The case tests use an exFAT volume (ExFATVolume, FCTestSupport: root, /dev/fuse, a loop device, exfatprogs and
// exfat-fuse); where it cannot be mounted they are reported as skipped, with the reason printed.

import FCSystem
import FCTestSupport
import Foundation
import Testing

@Suite("Canonical identity across processes (issue 14)")
struct IdentityEndToEndTests {
    @Test(
        "On an empty exFAT root, a writer creating New.txt holds off another process's writer of NEW.txt",
        .enabled(if: ExFATVolume.shouldRun, "DID NOT RUN: needs an exFAT image mounted through FUSE")
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

    @Test("A presenter on a symbolic link's spelling and one on the target's, in two processes, hear a third's writes")
    func presentersOnALinkAndOnItsTargetHearWritesSpelledAsTheirProcessSpelledThem() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            try FileManager.default.createDirectory(atPath: env.path("real"), withIntermediateDirectories: false)
            try FileManager.default.createSymbolicLink(atPath: env.path("link"), withDestinationPath: "real")
            try env.file("real/doc.txt", "v1")
            let a = try await env.host("A")
            let b = try await env.host("B")
            let writer = try await env.host("W")
            try await a.present("File", env.path("link/doc.txt"))
            try await a.present("Folder", env.path("link"))
            try await b.present("File", env.path("real/doc.txt"))
            try await b.present("Folder", env.path("real"))

            // A writer on the target's spelling, then one on the link's: each presenter is asked, hears the change,
            // and hears the subitem as its own process spelled its folder.
            for (round, path) in [env.path("real/doc.txt"), env.path("link/doc.txt")].enumerated() {
                try writer.send("write \(path) v\(round + 2)")
                try await writer.waitFor("done write \(path)")
                let once = ["relinquishToWriter", "didChange", "reacquire"]
                let expected = Array([[String]](repeating: once, count: round + 1).joined())
                #expect(try await a.settledPresenterEvents("File", count: expected.count) == expected)
                #expect(try await b.settledPresenterEvents("File", count: expected.count) == expected)
                #expect(
                    try await a.settledPresenterEvents("Folder", count: round + 1)
                        == Array(repeating: "subitemDidChange \(env.path("link/doc.txt"))", count: round + 1)
                )
                #expect(
                    try await b.settledPresenterEvents("Folder", count: round + 1)
                        == Array(repeating: "subitemDidChange \(env.path("real/doc.txt"))", count: round + 1)
                )
            }
        }
    }

    @Test(
        "On exFAT, presenters spelling a file in one case hear another process's writer spelling it in another",
        .enabled(if: ExFATVolume.shouldRun, "DID NOT RUN: needs an exFAT image mounted through FUSE")
    )
    func presentersAndAWriterSpellingTheFileInDifferentCasesMeetAcrossProcesses() async throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        let root = volume.root.path
        try FileManager.default.createDirectory(atPath: root + "/Docs", withIntermediateDirectories: false)
        try FileSystemCalls.writeFile(root + "/Docs/Note.txt", Array("v1".utf8))
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let a = try await env.host("A")
            let b = try await env.host("B")
            let writer = try await env.host("W")
            try await a.present("File", root + "/Docs/Note.txt")
            try await a.present("Folder", root + "/Docs")
            try await b.present("File", root + "/DOCS/NOTE.TXT")
            try await b.present("Folder", root + "/docs")

            try writer.send("write \(root)/docs/note.TXT v2")
            try await writer.waitFor("done write \(root)/docs/note.TXT")
            let once = ["relinquishToWriter", "didChange", "reacquire"]
            #expect(try await a.settledPresenterEvents("File", count: 3) == once)
            #expect(try await b.settledPresenterEvents("File", count: 3) == once)
            // Each folder as its presenter spells it; the name as the directory lists it (docs/ARCHITECTURE.md §5,
            // decision 14), never the writer's `note.TXT`.
            let aFolder = try await a.settledPresenterEvents("Folder", count: 1)
            let bFolder = try await b.settledPresenterEvents("Folder", count: 1)
            #expect(aFolder.contains("subitemDidChange \(root)/Docs/Note.txt"), "\(aFolder)")
            #expect(bFolder.contains("subitemDidChange \(root)/docs/Note.txt"), "\(bFolder)")
            // Exactly once: the daemon's watcher folds the names it sees in a case-insensitive directory (inotify
            // reports `note.TXT`, as the writer opened it), so the write's echo is recognised as such.
            #expect(aFolder == ["subitemDidChange \(root)/Docs/Note.txt"])
            #expect(bFolder == ["subitemDidChange \(root)/docs/Note.txt"])
            #expect(try String(contentsOfFile: root + "/Docs/Note.txt", encoding: .utf8) == "v2")

            // A change made without coordination, the name in yet another case: the file's presenters hear it too.
            // (Through the folder spelled as the daemon watches it, `docs`: exfat-fuse gives each spelling of a
            // directory an inode of its own, and inotify reports only what goes through the watched one.)
            try FileSystemCalls.writeFile(root + "/docs/NOTE.TXT", Array("v3".utf8))
            #expect(try await a.settledPresenterEvents("File", count: 4) == once + ["didChange"])
            #expect(try await b.settledPresenterEvents("File", count: 4) == once + ["didChange"])
            #expect(
                try await a.settledPresenterEvents("Folder", count: 2)
                    == Array(repeating: "subitemDidChange \(root)/Docs/Note.txt", count: 2)
            )
        }
    }

    @Test(
        "A case-only rename in another process reaches presenters that never spelled the old name",
        .enabled(if: ExFATVolume.shouldRun, "DID NOT RUN: needs an exFAT image mounted through FUSE")
    )
    func aCaseOnlyRenameReachesPresentersOfAnotherProcess() async throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        let folder = volume.root.path + "/Folder"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        try FileSystemCalls.writeFile(folder + "/mytext", Array("t".utf8))
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let a = try await env.host("A")
            let b = try await env.host("B")
            let mover = try await env.host("M")
            // A spells only the folder; B spells the file in yet another case.
            try await a.present("Folder", folder)
            try await b.present("File", folder + "/MYTEXT")
            try mover.send("rename \(folder)/mytext \(folder)/MyText")
            try await mover.waitFor("done rename \(folder)/mytext")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["MyText"])
            let folderEvents = try await a.settledPresenterEvents("Folder", count: 1)
            let file = try await b.settledPresenterEvents("File", count: 1)
            // The file's presenter hears where it is now; the folder's, that its subitem moved.
            #expect(file.contains("didMove \(folder)/MyText"), "\(file)")
            #expect(folderEvents.contains { $0.hasPrefix("subitemDidMove ") }, "\(folderEvents)")
            // A never spelled `mytext`, and the directory lists only `MyText` now: the mover's spelling of the old name
            // comes with the move (ItemMoved.from_name, PresenterMessage.moved_from_name).
            #expect(folderEvents.contains("subitemDidMove \(folder)/mytext \(folder)/MyText"), "\(folderEvents)")
        }
    }
}
