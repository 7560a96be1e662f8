import Dispatch
import FileCoordination
import Foundation
import Testing

// Two URLs name the same item when their canonical forms are equal: symbolic links in every existing component are
// resolved (docs/SEMANTICS.md §4), also when the last component does not exist (yet, or any more after a move).

@Suite struct SymbolicLinkTests {
    /// A temporary directory with `real/` and `link -> real`.
    static func makeLinkedDirectory() throws -> (dir: TempDirectory, real: URL, link: URL) {
        let dir = try TempDirectory()
        let real = try dir.directory("real")
        let link = dir.url.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        return (dir, real, link)
    }

    @Test func writeThroughALinkReachesThePresenterOfTheTarget() throws {
        let (dir, real, link) = try Self.makeLinkedDirectory()
        defer { dir.remove() }
        let file = real.appendingPathComponent("doc.txt")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let presenter = RecordingPresenter(url: file)
        let viaLink = link.appendingPathComponent("doc.txt")
        var urls: [URL] = []
        var error: NSError?
        withPresenters([presenter]) {
            NSFileCoordinator().coordinate(writingItemAt: viaLink, options: [], error: &error) { url in
                urls.append(url)
            }
            settle(presenter)
        }
        #expect(error == nil)
        // The accessor gets the caller's own spelling.
        #expect(urls == [viaLink])
        #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
    }

    @Test func fileCreatedThroughALinkAppearsInThePresentedTargetDirectory() throws {
        let (dir, real, link) = try Self.makeLinkedDirectory()
        defer { dir.remove() }
        let folder = RecordingPresenter(url: real)
        var error: NSError?
        withPresenters([folder]) {
            NSFileCoordinator().coordinate(
                writingItemAt: link.appendingPathComponent("new.txt"),
                options: [],
                error: &error
            ) { url in
                try? Data("new".utf8).writeClosingOnExec(to: url)
            }
            settle(folder)
        }
        #expect(error == nil)
        let created = real.appendingPathComponent("new.txt").path
        #expect(folder.events == ["subitemDidChange(\(created))", "subitemDidAppear(\(created))"])
    }

    @Test func writersOfANewFileThroughALinkAndDirectlyExcludeEachOther() throws {
        let (dir, real, link) = try Self.makeLinkedDirectory()
        defer { dir.remove() }
        let timeline = WaitingTests.checkWaits(
            first: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(
                    writingItemAt: link.appendingPathComponent("new.txt"),
                    options: [],
                    error: &error
                ) { _ in accessor() }
            },
            second: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(
                    writingItemAt: real.appendingPathComponent("new.txt"),
                    options: [],
                    error: &error
                ) { _ in accessor() }
            }
        )
        #expect(timeline == ["first in", "first out", "second"])
    }

    @Test func moveAnnouncedThroughALinkMovesThePresenterOfTheTarget() throws {
        let (dir, real, link) = try Self.makeLinkedDirectory()
        defer { dir.remove() }
        let file = real.appendingPathComponent("a.txt")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let presenter = RecordingPresenter(url: file)
        withPresenters([presenter]) {
            let result = MoveTests.move(link.appendingPathComponent("a.txt"), to: link.appendingPathComponent("b.txt"))
            #expect(result.error == nil)
            #expect(result.moveError == nil)
            settle(presenter)
        }
        let moved = real.appendingPathComponent("b.txt")
        #expect(presenter.events == ["relinquishToWriter", "didMove(\(moved.path))", "reacquire"])
        #expect(presenter.presentedItemURL?.path == moved.path)
    }
}
