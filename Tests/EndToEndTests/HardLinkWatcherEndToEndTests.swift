// Issue 26 and the watcher (issue 13) across processes: a presenter of a folder hears a write made through a hard
// link to one of its files from another folder, coordinated or not, once, as its own file; a link made into the
// folder later is watched from then on; a link removed, or the folder no longer presented, lets the file's watch go.

import Foundation
import Testing

extension TestEnvironment {
    /// Waits until `fcdump watcher`'s first line satisfies `condition` (the watcher works on its own thread).
    fileprivate func waitForWatcherLine(_ what: String, _ condition: (String) -> Bool) async throws {
        let deadline = ContinuousClock.now + defaultTimeout
        var last = ""
        while true {
            last = (try? await watcherDump())?.split(separator: "\n").first.map(String.init) ?? ""
            if condition(last) { return }
            guard ContinuousClock.now < deadline else {
                throw HarnessError(description: "timed out after \(defaultTimeout) waiting for \(what); last: \(last)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits until the watcher uses `total` watches, `linked` of them on files with other names (a presenter of a
    /// folder needs two directories watched: the folder and its parent).
    fileprivate func waitForWatchCounts(total: Int, linked: Int) async throws {
        try await waitForWatcherLine("\(total) watches, \(linked) on linked files") { line in
            line.contains(": \(total) watches in use")
                && (linked == 0
                    ? !line.contains("on files with other names")
                    : line.contains("(\(linked) on files with other names)"))
        }
    }
}

@Suite(
    "A folder's presenter hears writes through hard links made elsewhere (issues 26 and 13)",
    .timeLimit(.minutes(1))
)
struct HardLinkWatcherEndToEndTests {
    @Test("A coordinated write through a link in another folder: the folder's presenter hears its own file once")
    func coordinatedWriteThroughALinkElsewhere() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (a, b) = try HardLinkEndToEndTests.makeLinkedPair(env)
            let app = try await env.host("P")
            let writer = try await env.host("Q")
            try await app.present("Folder", env.path("d"))
            try await env.waitForWatches(env.path("d"))
            try await env.waitForWatchCounts(total: 3, linked: 1)

            try writer.send("write \(b) v2")
            try await writer.waitFor("done write \(b)")
            #expect(try await app.settledPresenterEvents("Folder", count: 1) == ["subitemDidChange \(a)"])
            #expect(try String(contentsOfFile: a, encoding: .utf8) == "v2")
        }
    }

    @Test("A write through a link in another folder by sh: the folder's presenter hears its own file once")
    func uncoordinatedWriteThroughALinkElsewhere() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (a, b) = try HardLinkEndToEndTests.makeLinkedPair(env)
            let app = try await env.host("P")
            try await app.present("Folder", env.path("d"))
            try await env.waitForWatches(env.path("d"))
            try await env.waitForWatchCounts(total: 3, linked: 1)

            try sh("echo v2 >> '\(b)'")
            #expect(try await app.settledPresenterEvents("Folder", count: 1) == ["subitemDidChange \(a)"])

            // A write through the folder's own name reaches both of the daemon's watches: still heard once.
            try sh("echo v3 >> '\(a)'")
            #expect(try await app.settledPresenterEvents("Folder", count: 2).count == 2)
            #expect(app.presenterEvents("Folder") == ["subitemDidChange \(a)", "subitemDidChange \(a)"])
        }
    }

    @Test("A write through a link in another folder by sh: the file's presenter hears it once")
    func uncoordinatedWriteThroughALinkElsewhereReachesTheFilesPresenter() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (a, b) = try HardLinkEndToEndTests.makeLinkedPair(env)
            let app = try await env.host("P")
            try await app.present("File", a)
            try await env.waitForWatches(env.path("d"))
            try await env.waitForWatchCounts(total: 2, linked: 1)

            try sh("echo v2 >> '\(b)'")
            #expect(try await app.settledPresenterEvents("File", count: 1) == ["didChange"])
        }
    }

    @Test("A link made into the presented folder later: writes through the file's older name are heard from then on")
    func linkMadeIntoTheFolderLater() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            try FileManager.default.createDirectory(atPath: env.path("d"), withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: env.path("e"), withIntermediateDirectories: false)
            let x = try env.file("e/x.txt", "v1")
            let y = env.path("d/y.txt")
            let app = try await env.host("P")
            try await app.present("Folder", env.path("d"))
            try await env.waitForWatches(env.path("d"))
            try await env.waitForWatchCounts(total: 2, linked: 0)

            try sh("ln '\(x)' '\(y)'")
            let appeared = ["subitemDidChange \(y)", "subitemDidAppear \(y)"]
            #expect(try await app.settledPresenterEvents("Folder", count: 2) == appeared)
            try await env.waitForWatchCounts(total: 3, linked: 1)
            try sh("echo v2 >> '\(x)'")
            #expect(try await app.settledPresenterEvents("Folder", count: 3) == appeared + ["subitemDidChange \(y)"])
        }
    }

    @Test(
        "A link made elsewhere later: a coordinated write through it is heard by the folder, and watched from then on"
    )
    func linkMadeElsewhereLater() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            try FileManager.default.createDirectory(atPath: env.path("d"), withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: env.path("e"), withIntermediateDirectories: false)
            let a = try env.file("d/a.txt", "v1")
            let c = env.path("e/c.txt")
            let app = try await env.host("P")
            let writer = try await env.host("Q")
            try await app.present("Folder", env.path("d"))
            try await env.waitForWatches(env.path("d"))
            try await env.waitForWatchCounts(total: 2, linked: 0)

            // The link is made outside the folder: its watch sees nothing of it (inotify tells the inode alone).
            try sh("ln '\(a)' '\(c)'")
            try writer.send("write \(c) v2")
            try await writer.waitFor("done write \(c)")
            #expect(try await app.settledPresenterEvents("Folder", count: 1) == ["subitemDidChange \(a)"])
            #expect(try String(contentsOfFile: a, encoding: .utf8) == "v2")

            // The write showed that a.txt has another name: it is watched now, so a write by sh through it is heard.
            try await env.waitForWatchCounts(total: 3, linked: 1)
            try sh("echo v3 >> '\(c)'")
            #expect(
                try await app.settledPresenterEvents("Folder", count: 2) == [
                    "subitemDidChange \(a)", "subitemDidChange \(a)",
                ]
            )
        }
    }

    @Test("A link made elsewhere later, then a coordinated write through the folder's own name: heard once")
    func linkMadeElsewhereLaterThenAWriteThroughTheFoldersName() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            try FileManager.default.createDirectory(atPath: env.path("d"), withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: env.path("e"), withIntermediateDirectories: false)
            let a = try env.file("d/a.txt", "v1")
            let app = try await env.host("P")
            let writer = try await env.host("Q")
            try await app.present("Folder", env.path("d"))
            try await env.waitForWatches(env.path("d"))
            try await env.waitForWatchCounts(total: 2, linked: 0)

            // The coordination tells the folder; the watcher's report of the file's names is its echo.
            try sh("ln '\(a)' '\(env.path("e/c.txt"))'")
            try writer.send("write \(a) v2")
            try await writer.waitFor("done write \(a)")
            #expect(try await app.settledPresenterEvents("Folder", count: 1) == ["subitemDidChange \(a)"])
            // The watcher has had the report (it watches the file now), and nothing more reached the folder.
            try await env.waitForWatchCounts(total: 3, linked: 1)
            #expect(try await app.staysWithout("presenter Folder ", count: 2))
        }
    }

    @Test("A link removed, or the folder no longer presented, lets the file's watch go")
    func removedLinkOrFolderLetsTheWatchGo() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (a, b) = try HardLinkEndToEndTests.makeLinkedPair(env)
            let c = env.path("e/c.txt")
            try FileManager.default.linkItem(atPath: a, toPath: c)
            let app = try await env.host("P")
            try await app.present("Folder", env.path("d"))
            try await env.waitForWatches(env.path("d"))
            try await env.waitForWatchCounts(total: 3, linked: 1)

            // One of two other names removed: a.txt still has one, its watch stays.
            try sh("rm '\(c)'")
            try sh("echo v2 >> '\(b)'")
            #expect(try await app.settledPresenterEvents("Folder", count: 1) == ["subitemDidChange \(a)"])
            try await env.waitForWatchCounts(total: 3, linked: 1)

            // The last other name removed: a.txt's only name is in the folder, whose watch covers it.
            try sh("rm '\(b)'")
            try await env.waitForWatchCounts(total: 2, linked: 0)

            // A link made into the folder, then the folder no longer presented: no watch is left behind.
            try sh("ln '\(a)' '\(env.path("d/w.txt"))'")
            try await env.waitForWatchCounts(total: 3, linked: 1)
            try app.send("unpresent Folder")
            try await app.waitFor("unpresented Folder")
            try await env.waitForWatchCounts(total: 0, linked: 0)
        }
    }
}
