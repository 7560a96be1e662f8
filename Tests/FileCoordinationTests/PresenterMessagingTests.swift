import FileCoordination
import Foundation
import Testing

// Which presenter hears what, and when (docs/SEMANTICS.md §3), for single-item accesses.
// Each test records the accessor into the presenters' logs, so the expected sequences also pin down what happens
// before the accessor runs and what after.

@Suite struct PresenterMessagingTests {
    @Test func readAsksToRelinquishAndSaveThenReacquiresAfterTheRead() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: file)
        var error: NSError?
        var urls: [URL] = []
        withPresenters([presenter]) {
            NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { url in
                urls.append(url)
                presenter.record("accessor")
            }
            settle(presenter)
        }
        #expect(error == nil)
        #expect(urls == [file])
        #expect(presenter.events == ["relinquishToReader", "save", "accessor", "reacquire"])
        #expect(presenter.offQueueCallbacks.isEmpty)
    }

    @Test func readWithoutChangesDoesNotAskToSave() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: file)
        var error: NSError?
        withPresenters([presenter]) {
            NSFileCoordinator().coordinate(readingItemAt: file, options: .withoutChanges, error: &error) { _ in
                presenter.record("accessor")
            }
            settle(presenter)
        }
        #expect(error == nil)
        #expect(presenter.events == ["relinquishToReader", "accessor", "reacquire"])
        #expect(presenter.offQueueCallbacks.isEmpty)
    }

    @Test func writeRelinquishesThenDidChangeAfterTheAccessorThenReacquires() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt", "old")
        let presenter = RecordingPresenter(url: file)
        var error: NSError?
        var urls: [URL] = []
        withPresenters([presenter]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { url in
                urls.append(url)
                presenter.record("accessor")
                try? Data("new".utf8).writeClosingOnExec(to: url)
            }
            settle(presenter)
        }
        #expect(error == nil)
        #expect(urls == [file])
        #expect(presenter.events == ["relinquishToWriter", "accessor", "didChange", "reacquire"])
        #expect(presenter.offQueueCallbacks.isEmpty)
        #expect(try String(contentsOf: file, encoding: .utf8) == "new")
    }

    @Test func writeForMergingAlsoAsksToSave() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: file)
        var error: NSError?
        withPresenters([presenter]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forMerging, error: &error) { _ in
                presenter.record("accessor")
            }
            settle(presenter)
        }
        #expect(error == nil)
        #expect(presenter.events == ["relinquishToWriter", "save", "accessor", "didChange", "reacquire"])
        #expect(presenter.offQueueCallbacks.isEmpty)
    }

    @Test func writeForDeletingAsksToAccommodateTheDeletionAndSendsNoDidChange() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: file)
        let folder = RecordingPresenter(url: dir.url)
        var error: NSError?
        withPresenters([presenter, folder]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forDeleting, error: &error) { url in
                presenter.record("accessor")
                folder.record("accessor")
                try? FileManager.default.removeItem(at: url)
            }
            settle(presenter, folder)
        }
        #expect(error == nil)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(presenter.events == ["relinquishToWriter", "accommodateDeletion", "accessor", "reacquire"])
        // The enclosing plain directory is asked to accommodate the deletion before, and hears a subitem change after.
        #expect(
            folder.events == ["accommodateSubitemDeletion(\(file.path))", "accessor", "subitemDidChange(\(file.path))"]
        )
        #expect(presenter.offQueueCallbacks.isEmpty)
        #expect(folder.offQueueCallbacks.isEmpty)
    }

    @Test func writeForReplacingAsksToAccommodateTheDeletionThenSendsDidChange() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: file)
        var error: NSError?
        withPresenters([presenter]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forReplacing, error: &error) { url in
                presenter.record("accessor")
                try? Data("replaced".utf8).writeClosingOnExec(to: url)
            }
            settle(presenter)
        }
        #expect(error == nil)
        #expect(
            presenter.events == ["relinquishToWriter", "accommodateDeletion", "accessor", "didChange", "reacquire"]
        )
    }

    @Test func directoryPresenterHearsSubitemDidChangeAfterAWriteInside() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let inner = try dir.directory("inner")
        let file = inner.appendingPathComponent("doc.txt")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let outer = RecordingPresenter(url: dir.url)
        let folder = RecordingPresenter(url: inner)
        var error: NSError?
        withPresenters([outer, folder]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { url in
                folder.record("accessor")
                outer.record("accessor")
                try? Data("b".utf8).writeClosingOnExec(to: url)
            }
            settle(outer, folder)
        }
        #expect(error == nil)
        // Every enclosing directory presenter hears, at any depth, once, and only after the accessor.
        #expect(folder.events == ["accessor", "subitemDidChange(\(file.path))"])
        #expect(outer.events == ["accessor", "subitemDidChange(\(file.path))"])
        #expect(folder.offQueueCallbacks.isEmpty)
    }

    @Test func readInsideADirectoryTellsTheDirectoryPresenterNothing() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let folder = RecordingPresenter(url: dir.url)
        var error: NSError?
        withPresenters([folder]) {
            NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in
                folder.record("accessor")
            }
            settle(folder)
        }
        #expect(error == nil)
        #expect(folder.events == ["accessor"])
    }

    @Test func newFileInsideAPresentedDirectoryIsReportedAsAppeared() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let folder = RecordingPresenter(url: dir.url)
        let file = try dir.file("new.txt", nil)
        var error: NSError?
        withPresenters([folder]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { url in
                folder.record("accessor")
                try? Data("hello".utf8).writeClosingOnExec(to: url)
            }
            settle(folder)
        }
        #expect(error == nil)
        #expect(folder.events == ["accessor", "subitemDidChange(\(file.path))", "subitemDidAppear(\(file.path))"])
        #expect(folder.offQueueCallbacks.isEmpty)
    }

    /// A symbolic link is an item of its own: one a write makes where nothing was appears, whether or not its target
    /// exists (the item is looked at after the accessor as before it, without following a final link). Looked at
    /// through the link, as `FileManager.fileExists` does, a link to nothing was never told as appeared.
    @Test func aDanglingLinkMadeByAWriteIsReportedAsAppeared() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let folder = RecordingPresenter(url: dir.url)
        let link = dir.url.appendingPathComponent("link")
        var error: NSError?
        withPresenters([folder]) {
            NSFileCoordinator().coordinate(writingItemAt: link, options: [], error: &error) { url in
                folder.record("accessor")
                try? FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "nowhere")
            }
            settle(folder)
        }
        #expect(error == nil)
        #expect(folder.events == ["accessor", "subitemDidChange(\(link.path))", "subitemDidAppear(\(link.path))"])
    }

    @Test func coordinatorCreatedWithAPresenterNeverMessagesIt() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let sibling = try dir.file("other.txt")
        let own = RecordingPresenter(url: file)
        let other = RecordingPresenter(url: file)
        let ownFolder = RecordingPresenter(url: dir.url)
        let otherFolder = RecordingPresenter(url: dir.url)
        var errors: [NSError?] = []
        withPresenters([own, other, ownFolder, otherFolder]) {
            let coordinator = NSFileCoordinator(filePresenter: own)
            var error: NSError?
            coordinator.coordinate(readingItemAt: file, options: [], error: &error) { _ in }
            errors.append(error)
            coordinator.coordinate(writingItemAt: file, options: .forMerging, error: &error) { url in
                try? Data("mine".utf8).writeClosingOnExec(to: url)
            }
            errors.append(error)
            coordinator.coordinate(writingItemAt: file, options: .forReplacing, error: &error) { _ in }
            errors.append(error)
            // A second coordinator made with the same presenter is just as silent towards it.
            NSFileCoordinator(filePresenter: own).coordinate(writingItemAt: file, options: [], error: &error) { _ in }
            errors.append(error)
            // The same for a directory presenter: its own coordinator's write inside tells it nothing.
            let folderCoordinator = NSFileCoordinator(filePresenter: ownFolder)
            folderCoordinator.coordinate(writingItemAt: sibling, options: [], error: &error) { _ in }
            errors.append(error)
            settle(own, other, ownFolder, otherFolder)
        }
        #expect(errors.count == 5)
        #expect(errors.allSatisfy { $0 == nil })
        #expect(own.events == [])
        #expect(
            other.events == [
                "relinquishToReader", "save", "reacquire",
                "relinquishToWriter", "save", "didChange", "reacquire",
                "relinquishToWriter", "accommodateDeletion", "didChange", "reacquire",
                "relinquishToWriter", "didChange", "reacquire",
            ]
        )
        // The `.forReplacing` write asks both folders to accommodate the deletion of the file first.
        let changes = [
            "subitemDidChange(\(file.path))", "accommodateSubitemDeletion(\(file.path))",
            "subitemDidChange(\(file.path))", "subitemDidChange(\(file.path))",
        ]
        #expect(ownFolder.events == changes)
        #expect(otherFolder.events == changes + ["subitemDidChange(\(sibling.path))"])
    }

    @Test func callbacksArriveInOrderOnThePresentersOwnQueue() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: file)
        var errors: [NSError?] = []
        withPresenters([presenter]) {
            let coordinator = NSFileCoordinator()
            for round in 0..<5 {
                var error: NSError?
                coordinator.coordinate(readingItemAt: file, options: [], error: &error) { _ in
                    presenter.record("read \(round)")
                }
                errors.append(error)
                coordinator.coordinate(writingItemAt: file, options: .forMerging, error: &error) { _ in
                    presenter.record("write \(round)")
                }
                errors.append(error)
                coordinator.coordinate(readingItemAt: file, options: .withoutChanges, error: &error) { _ in
                    presenter.record("peek \(round)")
                }
                errors.append(error)
            }
            settle(presenter)
        }
        #expect(errors.allSatisfy { $0 == nil })
        let expected = (0..<5).flatMap { round in
            [
                "relinquishToReader", "save", "read \(round)", "reacquire",
                "relinquishToWriter", "save", "write \(round)", "didChange", "reacquire",
                "relinquishToReader", "peek \(round)", "reacquire",
            ]
        }
        #expect(presenter.events == expected)
        #expect(presenter.offQueueCallbacks.isEmpty)
    }

    @Test func presenterHearsOnlyTheCallbacksItDeclares() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        // It would never answer a relinquish or save request: the accesses would wait if one were sent.
        let presenter = RecordingPresenter(url: file, callbacks: [.presentedItemDidChange], relinquish: .never)
        let errors = Locked<[NSError?]>([])
        // Accessors are logged apart: with no request to answer first, nothing orders the presenter's queue (the
        // did change of the write) against the next accessor.
        let accessors = Locked<[String]>([])
        withPresenters([presenter]) {
            let done = spawn {
                let coordinator = NSFileCoordinator()
                var error: NSError?
                coordinator.coordinate(readingItemAt: file, options: [], error: &error) { _ in
                    accessors.withLock { $0.append("read") }
                }
                errors.withLock { $0.append(error) }
                coordinator.coordinate(writingItemAt: file, options: .forMerging, error: &error) { _ in
                    accessors.withLock { $0.append("write") }
                }
                errors.withLock { $0.append(error) }
                coordinator.coordinate(writingItemAt: file, options: .forDeleting, error: &error) { _ in
                    accessors.withLock { $0.append("delete") }
                }
                errors.withLock { $0.append(error) }
            }
            #expect(done.wait(seconds: patience), "an undeclared relinquish, save or accommodate must count as yes")
            settle(presenter)
            presenter.releaseRelinquishBlocks()
        }
        #expect(errors.current.count == 3)
        #expect(errors.current.allSatisfy { $0 == nil })
        #expect(accessors.current == ["read", "write", "delete"])
        #expect(presenter.events == ["didChange"])
    }

    @Test func presenterDeclaringNoRelinquishStillGetsItsSaveRequest() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(
            url: file,
            callbacks: [.savePresentedItemChanges, .presentedItemDidChange],
            relinquish: .never
        )
        var error: NSError?
        withPresenters([presenter]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forMerging, error: &error) { _ in
                presenter.record("accessor")
            }
            settle(presenter)
        }
        #expect(error == nil)
        #expect(presenter.events == ["save", "accessor", "didChange"])
    }

    @Test func presenterAddedAndRemovedIsListedOnlyWhileRegistered() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let presenter = RecordingPresenter(url: try dir.file("doc.txt"))
        #expect(!NSFileCoordinator.filePresenters.contains { $0 === presenter })
        withPresenters([presenter]) {
            #expect(NSFileCoordinator.filePresenters.contains { $0 === presenter })
        }
        #expect(!NSFileCoordinator.filePresenters.contains { $0 === presenter })
    }

    @Test func removedPresenterHearsNothingMore() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: file)
        withPresenters([presenter]) {}
        var error: NSError?
        NSFileCoordinator().coordinate(writingItemAt: file, options: .forMerging, error: &error) { _ in }
        settle(presenter)
        #expect(error == nil)
        #expect(presenter.events == [])
    }

    @Test func packagePresenterHearsAboutItemsInsideAsAboutTheWholePackage() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let package = try dir.directory("Report.rtfd")
        let file = package.appendingPathComponent("TXT.rtf")
        try Data("a".utf8).writeClosingOnExec(to: file)
        // A package presenter that implements no subitem callback gets did change instead.
        let presenter = RecordingPresenter(
            url: package,
            callbacks: [.relinquishToReader, .relinquishToWriter, .savePresentedItemChanges, .presentedItemDidChange]
        )
        var errors: [NSError?] = []
        withPresenters([presenter]) {
            var error: NSError?
            NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in
                presenter.record("read")
            }
            errors.append(error)
            NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in
                presenter.record("write")
            }
            errors.append(error)
            settle(presenter)
        }
        #expect(errors.allSatisfy { $0 == nil })
        #expect(
            presenter.events == [
                "relinquishToReader", "save", "read", "reacquire",
                "relinquishToWriter", "write", "didChange", "reacquire",
            ]
        )
    }

    @Test func deletingInsideAPackageAsksThePackageToAccommodateASubitemDeletion() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let package = try dir.directory("Doc.pages")
        let file = package.appendingPathComponent("index.xml")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let presenter = RecordingPresenter(url: package)
        var error: NSError?
        withPresenters([presenter]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forDeleting, error: &error) { url in
                presenter.record("accessor")
                try? FileManager.default.removeItem(at: url)
            }
            settle(presenter)
        }
        #expect(error == nil)
        #expect(
            presenter.events == [
                "relinquishToWriter", "accommodateSubitemDeletion(\(file.path))", "accessor",
                "subitemDidChange(\(file.path))", "reacquire",
            ]
        )
    }

    @Test func deletingADirectoryAsksPresentersInsideToAccommodateTheirDeletion() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let folder = try dir.directory("folder")
        let file = folder.appendingPathComponent("doc.txt")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let inside = RecordingPresenter(url: file)
        let folderPresenter = RecordingPresenter(url: folder)
        var error: NSError?
        withPresenters([inside, folderPresenter]) {
            NSFileCoordinator().coordinate(writingItemAt: folder, options: .forDeleting, error: &error) { url in
                inside.record("accessor")
                folderPresenter.record("accessor")
                try? FileManager.default.removeItem(at: url)
            }
            settle(inside, folderPresenter)
        }
        #expect(error == nil)
        #expect(inside.events == ["relinquishToWriter", "accommodateDeletion", "accessor", "reacquire"])
        #expect(folderPresenter.events == ["relinquishToWriter", "accommodateDeletion", "accessor", "reacquire"])
    }
}

/// A presenter that implements nothing but its URL and queue: every callback is the protocol's default.
private final class PlainPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let presentedItemURL: URL?
    let presentedItemOperationQueue = OperationQueue()
    init(url: URL) { presentedItemURL = url }
}

@Suite struct DefaultCallbackTests {
    @Test func presenterWithTheDefaultCallbacksLetsEveryAccessThrough() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = PlainPresenter(url: file)
        var log: [String] = []
        var errors: [NSError?] = []
        withPresenters([presenter]) {
            var error: NSError?
            NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in log.append("read") }
            errors.append(error)
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forMerging, error: &error) { _ in
                log.append("merge")
            }
            errors.append(error)
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forDeleting, error: &error) { url in
                log.append("delete")
                try? FileManager.default.removeItem(at: url)
            }
            errors.append(error)
        }
        #expect(errors == [nil, nil, nil])
        #expect(log == ["read", "merge", "delete"])
    }
}
