// Issue 26 across processes: a hard-linked file is one file under two names. A claim through one name waits for a
// claim through the other; presenters of either name, and of the folder holding it, hear a write through the
// other name in their own spelling; a link removed while presented stops reaching its presenter.

import FCTestSupport
import Foundation
import Testing

@Suite("One file under two hard links, across processes (issue 26)")
struct HardLinkEndToEndTests {
    /// `d/a.txt` with `text`, and `e/b.txt`, a second name of it.
    static func makeLinkedPair(_ env: TestEnvironment, _ text: String = "v1") throws -> (a: String, b: String) {
        try FileManager.default.createDirectory(atPath: env.path("d"), withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: env.path("e"), withIntermediateDirectories: false)
        let a = try env.file("d/a.txt", text)
        let b = env.path("e/b.txt")
        try FileManager.default.linkItem(atPath: a, toPath: b)
        return (a, b)
    }

    @Test("A writer through the second name waits for another process's writer through the first")
    func aWriteThroughOneNameWaitsForAWriteThroughTheOther() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (a, b) = try Self.makeLinkedPair(env)
            let first = try await env.host("A")
            let second = try await env.host("B")
            try first.send("write \(a) first hold")
            try await first.waitFor("holding write \(a)")
            try second.send("write \(b) second")
            #expect(try await second.staysWithout("granted write"), "B's write through b.txt ran while A held a.txt")
            try first.send("release")
            let firstDone = try await first.waitFor("done write \(a)")
            let secondGranted = try await second.waitFor("granted write \(b)")
            #expect(firstDone.round <= secondGranted.round, "B's write was granted before A's accessor returned")
            try await second.waitFor("done write \(b)")
            #expect(try String(contentsOfFile: a, encoding: .utf8) == "second")
        }
    }

    @Test("A reader through one name waits for a writer through the other, in either order of names")
    func aReadThroughOneNameWaitsForAWriteThroughTheOther() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (a, b) = try Self.makeLinkedPair(env)
            let writer = try await env.host("W")
            let reader = try await env.host("R")
            try await writer.expectHeldWriteHoldsBack(
                b,
                "new",
                reader: reader,
                reading: a,
                "a read through a.txt ran while b.txt was written"
            )
        }
    }

    @Test("Presenters of the first name and of its folder hear another process's write through the second")
    func presentersOfOneNameAndItsFolderHearAWriteThroughTheOther() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (a, b) = try Self.makeLinkedPair(env)
            let app = try await env.host("A")
            let writer = try await env.host("W")
            try await app.present("File", a)
            try await app.present("Folder", env.path("d"))
            try writer.send("write \(b) v2")
            try await writer.waitFor("done write \(b)")
            #expect(
                try await app.settledPresenterEvents("File", count: 3) == [
                    "relinquishToWriter", "didChange", "reacquire",
                ]
            )
            // The folder hears its own subitem, spelled as the presenter's process spells it, not the writer's name.
            #expect(try await app.settledPresenterEvents("Folder", count: 1) == ["subitemDidChange \(a)"])
            #expect(try String(contentsOfFile: a, encoding: .utf8) == "v2")
        }
    }

    @Test("A link deleted while presented: its presenter hears the deletion, the other name's presenter nothing")
    func aLinkRemovedWhilePresentedStopsReachingItsPresenter() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (a, b) = try Self.makeLinkedPair(env)
            let app = try await env.host("A")
            let other = try await env.host("B")
            let tool = try await env.host("T")
            try await app.present("File", a)
            try await other.present("Link", b)
            try tool.send("write \(b) deleting")
            try await tool.waitFor("done write \(b)")
            #expect(try await other.settledPresenterEvents("Link", count: 1).contains("accommodateDeletion"))
            #expect(app.presenterEvents("File").isEmpty, "\(app.presenterEvents("File"))")
            #expect(!FileManager.default.fileExists(atPath: b))
            #expect(try String(contentsOfFile: a, encoding: .utf8) == "v1")

            // The file lives on under a.txt: a write there reaches a.txt's presenter, and no longer b.txt's.
            let linkEventsBefore = other.presenterEvents("Link")
            try tool.send("write \(a) v2")
            try await tool.waitFor("done write \(a)")
            #expect(
                try await app.settledPresenterEvents("File", count: 3) == [
                    "relinquishToWriter", "didChange", "reacquire",
                ]
            )
            #expect(other.presenterEvents("Link") == linkEventsBefore)
        }
    }
}

extension HardLinkEndToEndTests {
    @Test("fcdump shows a presented file's other names, as text and as JSON")
    func fcdumpShowsAnItemsOtherNames() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (a, b) = try Self.makeLinkedPair(env)
            let first = try await env.host("A")
            let second = try await env.host("B")
            try await first.present("File", a)
            try await second.present("Link", b)
            let text = try await env.runTool("fcdump", [])
            #expect(text.output.contains("also named \(b)"), "\(text.output)")
            #expect(text.output.contains("also named \(a)"), "\(text.output)")
            let json = try await env.runTool("fcdump", ["--json"])
            let dump = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
            let presenters = try #require(dump["presenters"] as? [[String: Any]])
            let named = presenters.compactMap { $0["otherNames"] as? [String] }
            #expect(named.sorted { $0.first ?? "" < $1.first ?? "" } == [[a], [b]], "\(presenters)")
        }
    }
}
