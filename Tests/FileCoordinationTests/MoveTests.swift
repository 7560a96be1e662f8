import Dispatch
import FileCoordination
import Foundation
import Testing

// Moves announced with `item(at:didMoveTo:)` inside a coordinated write (docs/SEMANTICS.md §2 rule 7,
// §3 "exactly once").

@Suite struct MoveTests {
    /// The usual move: `.forMoving` on the source, `.forReplacing` on the destination, the file system move, then
    /// `item(at:didMoveTo:)`.
    static func move(
        _ source: URL,
        to destination: URL,
        with coordinator: NSFileCoordinator = NSFileCoordinator()
    )
        -> (error: NSError?, urls: [URL], moveError: (any Error)?)
    {
        var error: NSError?
        var urls: [URL] = []
        var moveError: (any Error)?
        coordinator.coordinate(
            writingItemAt: source,
            options: .forMoving,
            writingItemAt: destination,
            options: .forReplacing,
            error: &error
        ) { from, to in
            urls = [from, to]
            do {
                try FileManager.default.moveItem(at: from, to: to)
                coordinator.item(at: from, didMoveTo: to)
            } catch {
                moveError = error
            }
        }
        return (error, urls, moveError)
    }

    @Test func movedPresenterHearsDidMoveOnceFollowsTheItemAndHearsLaterWritesThere() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let source = try dir.file("draft.txt")
        let destination = try dir.file("final.txt", nil)
        let presenter = RecordingPresenter(url: source)
        let folder = RecordingPresenter(url: dir.url)
        var errors: [NSError?] = []
        withPresenters([presenter, folder]) {
            let result = Self.move(source, to: destination)
            #expect(result.moveError == nil)
            #expect(result.urls == [source, destination])
            errors.append(result.error)
            settle(presenter, folder)
            #expect(presenter.presentedItemURL == destination)
            #expect(presenter.events == ["relinquishToWriter", "didMove(\(destination.path))", "reacquire"])
            // The destination is written `.forReplacing`: the folder is asked to accommodate its deletion first.
            #expect(
                folder.events == [
                    "accommodateSubitemDeletion(\(destination.path))",
                    "subitemDidMove(\(source.path) -> \(destination.path))",
                ]
            )

            // A write at the new location reaches the presenter; a new file at the old one does not.
            var error: NSError?
            NSFileCoordinator().coordinate(writingItemAt: destination, options: [], error: &error) { url in
                presenter.record("write at new URL")
                try? Data("x".utf8).writeClosingOnExec(to: url)
            }
            errors.append(error)
            NSFileCoordinator().coordinate(writingItemAt: source, options: [], error: &error) { url in
                try? Data("new draft".utf8).writeClosingOnExec(to: url)
            }
            errors.append(error)
            settle(presenter, folder)
        }
        #expect(errors == [nil, nil, nil])
        #expect(
            presenter.events == [
                "relinquishToWriter", "didMove(\(destination.path))", "reacquire",
                "relinquishToWriter", "write at new URL", "didChange", "reacquire",
            ]
        )
        #expect(
            folder.events == [
                "accommodateSubitemDeletion(\(destination.path))",
                "subitemDidMove(\(source.path) -> \(destination.path))",
                "subitemDidChange(\(destination.path))",
                "subitemDidChange(\(source.path))",
                "subitemDidAppear(\(source.path))",
            ]
        )
        #expect(presenter.offQueueCallbacks.isEmpty)
        #expect(folder.offQueueCallbacks.isEmpty)
    }

    @Test func movingADirectoryMovesThePresentersInsideIt() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let folder = try dir.directory("folder")
        let file = folder.appendingPathComponent("doc.txt")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let renamed = dir.url.appendingPathComponent("renamed", isDirectory: true)
        let folderPresenter = RecordingPresenter(url: folder)
        let inside = RecordingPresenter(url: file)
        let movedFile = renamed.appendingPathComponent("doc.txt")
        withPresenters([folderPresenter, inside]) {
            let result = Self.move(folder, to: renamed)
            #expect(result.error == nil)
            #expect(result.moveError == nil)
            settle(folderPresenter, inside)
        }
        #expect(folderPresenter.events == ["relinquishToWriter", "didMove(\(renamed.path))", "reacquire"])
        #expect(inside.events == ["relinquishToWriter", "didMove(\(movedFile.path))", "reacquire"])
        #expect(inside.presentedItemURL?.path == movedFile.path)
        #expect(folderPresenter.presentedItemURL?.path == renamed.path)
    }

    @Test func claimWaitingForAMovedItemIsGrantedWithItsNewURL() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let source = try dir.file("old.txt", "contents")
        let destination = try dir.file("new.txt", nil)
        let mover = NSFileCoordinator()
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let moveDone = spawn {
            var error: NSError?
            mover.coordinate(
                writingItemAt: source,
                options: .forMoving,
                writingItemAt: destination,
                options: .forReplacing,
                error: &error
            ) { from, to in
                inside.signal()
                // Wait until the reader is queued for the old location, then move.
                _ = release.wait(seconds: patience)
                try? FileManager.default.moveItem(at: from, to: to)
                mover.item(at: from, didMoveTo: to)
            }
        }
        #expect(inside.wait(seconds: patience))
        // Intents submit their claims before `coordinate(with:queue:byAccessor:)` returns.
        let intent = NSFileAccessIntent.readingIntent(with: source)
        let queue = OperationQueue()
        let read = Locked<(url: URL, contents: String?)?>(nil)
        let readDone = DispatchSemaphore(value: 0)
        NSFileCoordinator().coordinate(with: [intent], queue: queue) { _ in
            read.set((intent.url, try? String(contentsOf: intent.url, encoding: .utf8)))
            readDone.signal()
        }
        #expect(readDone.staysUnsignalled())
        release.signal()
        #expect(moveDone.wait(seconds: patience))
        #expect(readDone.wait(seconds: patience))
        queue.waitUntilAllOperationsAreFinished()
        #expect(read.current?.url.path == destination.path)
        #expect(read.current?.contents == "contents")
    }

    @Test func replacingWriterWaitingForAMovedItemKeepsItsURL() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let source = try dir.file("old.txt", "contents")
        let destination = try dir.file("new.txt", nil)
        let mover = NSFileCoordinator()
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let moveDone = spawn {
            var error: NSError?
            mover.coordinate(
                writingItemAt: source,
                options: .forMoving,
                writingItemAt: destination,
                options: .forReplacing,
                error: &error
            ) { from, to in
                inside.signal()
                _ = release.wait(seconds: patience)
                try? FileManager.default.moveItem(at: from, to: to)
                mover.item(at: from, didMoveTo: to)
            }
        }
        #expect(inside.wait(seconds: patience))
        let intent = NSFileAccessIntent.writingIntent(with: source, options: .forReplacing)
        let queue = OperationQueue()
        let url = Locked<URL?>(nil)
        let writeDone = DispatchSemaphore(value: 0)
        NSFileCoordinator().coordinate(with: [intent], queue: queue) { _ in
            url.set(intent.url)
            writeDone.signal()
        }
        #expect(writeDone.staysUnsignalled())
        release.signal()
        #expect(moveDone.wait(seconds: patience))
        #expect(writeDone.wait(seconds: patience))
        queue.waitUntilAllOperationsAreFinished()
        #expect(url.current == source)
    }
}
