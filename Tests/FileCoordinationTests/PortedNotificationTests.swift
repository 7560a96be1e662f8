import Dispatch
import FileCoordination
import Foundation
import Testing

// Notifications that code ported from macOS relies on (docs/SEMANTICS.md §3, as updated for issue 10): each test here
// failed before the rule it names was implemented.

@Suite struct PortedNotificationTests {
    @Test func prepareForReadingAsksPresentersInsideAReadDirectoryToRelinquishAndSaveFirst() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let folder = try dir.directory("folder")
        let file = folder.appendingPathComponent("doc.txt")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let inside = RecordingPresenter(url: file)
        var error: NSError?
        withPresenters([inside]) {
            NSFileCoordinator().prepare(
                forReadingItemsAt: [folder],
                options: [],
                writingItemsAt: [],
                options: [],
                error: &error
            ) { completionHandler in
                inside.record("batch")
                completionHandler()
            }
            settle(inside)
        }
        #expect(error == nil)
        #expect(inside.events == ["relinquishToReader", "save", "batch", "reacquire"])
    }

    @Test func prepareForReadingWithoutChangesAsksNoSave() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let folder = try dir.directory("folder")
        let file = folder.appendingPathComponent("doc.txt")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let inside = RecordingPresenter(url: file)
        let item = RecordingPresenter(url: folder)
        var error: NSError?
        withPresenters([inside, item]) {
            NSFileCoordinator().prepare(
                forReadingItemsAt: [folder],
                options: .withoutChanges,
                writingItemsAt: [],
                options: [],
                error: &error
            ) { completionHandler in
                inside.record("batch")
                completionHandler()
            }
            settle(inside, item)
        }
        #expect(error == nil)
        #expect(inside.events == ["relinquishToReader", "batch", "reacquire"])
        #expect(item.events == ["relinquishToReader", "reacquire"])
    }

    @Test func aPlainDirectoryIsAskedToAccommodateTheDeletionOfAnItemInsideIt() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let folder = RecordingPresenter(url: dir.url)
        var error: NSError?
        withPresenters([folder]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forDeleting, error: &error) { url in
                folder.record("accessor")
                try? FileManager.default.removeItem(at: url)
            }
            settle(folder)
        }
        #expect(error == nil)
        #expect(
            folder.events == ["accommodateSubitemDeletion(\(file.path))", "accessor", "subitemDidChange(\(file.path))"]
        )
    }

    @Test func aPlainDirectorysRefusalToAccommodateADeletionFailsTheClaim() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let refusal = PresenterErrorTests.presenterError()
        let folder = RecordingPresenter(url: dir.url, accommodateError: refusal)
        var error: NSError?
        var ran = false
        withPresenters([folder]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forReplacing, error: &error) { _ in
                ran = true
            }
            settle(folder)
        }
        #expect(!ran)
        PresenterErrorTests.expectSame(error, as: refusal)
        #expect(folder.events == ["accommodateSubitemDeletion(\(file.path))"])
        #expect(FileManager.default.fileExists(atPath: file.path))
    }

    @Test func aNewItemIsReportedAsAChangeAndAsAnAppearance() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let folder = RecordingPresenter(url: dir.url)
        let file = try dir.file("new.txt", nil)
        var error: NSError?
        withPresenters([folder]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { url in
                try? Data("hello".utf8).writeClosingOnExec(to: url)
            }
            settle(folder)
        }
        #expect(error == nil)
        #expect(folder.events == ["subitemDidChange(\(file.path))", "subitemDidAppear(\(file.path))"])
    }

    @Test func aDirectoryPresenterHearsOneSubitemMovePerMove() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let sub = try dir.directory("sub")
        let source = try dir.file("a.txt")
        let intoSub = sub.appendingPathComponent("a.txt")
        let back = dir.url.appendingPathComponent("b.txt")
        let folder = RecordingPresenter(url: dir.url, callbacks: [.presentedSubitemDidMove])
        withPresenters([folder]) {
            #expect(MoveTests.move(source, to: intoSub).error == nil)
            #expect(MoveTests.move(intoSub, to: back).error == nil)
            // A move made with one write on the source only, the destination not coordinated.
            var error: NSError?
            let coordinator = NSFileCoordinator()
            let last = dir.url.appendingPathComponent("c.txt")
            coordinator.coordinate(writingItemAt: back, options: .forMoving, error: &error) { url in
                try? FileManager.default.moveItem(at: url, to: last)
                coordinator.item(at: url, didMoveTo: last)
            }
            #expect(error == nil)
            settle(folder)
        }
        let moves = folder.events.filter { $0.hasPrefix("subitemDidMove") }
        #expect(
            moves == [
                "subitemDidMove(\(source.path) -> \(intoSub.path))",
                "subitemDidMove(\(intoSub.path) -> \(back.path))",
                "subitemDidMove(\(back.path) -> \(dir.url.appendingPathComponent("c.txt").path))",
            ]
        )
    }
}
