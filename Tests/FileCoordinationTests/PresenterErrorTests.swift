import Dispatch
import FileCoordination
import Foundation
import Testing

// A presenter's save or accommodate error fails the access (docs/SEMANTICS.md §3): the accessor does not
// run, the caller gets the presenter's very error, and presenters that relinquished get their reacquirers.

@Suite struct PresenterErrorTests {
    static func presenterError() -> NSError {
        NSError(
            domain: "com.example.FileCoordinationTests",
            code: 42,
            userInfo: [NSLocalizedDescriptionKey: "The document could not be saved.", "detail": "disk full"]
        )
    }

    /// Checks that `error` is `expected`: the same object in process, so the same domain, code and user info.
    static func expectSame(_ error: NSError?, as expected: NSError) {
        #expect(error === expected)
        #expect(error?.domain == expected.domain)
        #expect(error?.code == expected.code)
        #expect(error?.localizedDescription == expected.localizedDescription)
        #expect(error?.userInfo["detail"] as? String == "disk full")
    }

    /// What `presenter` was asked, without "didChange": the daemon is shared by the whole run, where another test's
    /// file activity can make the watcher report a change (most likely an inotify queue overflow, which tells every
    /// presenter that its item may have changed, docs/SEMANTICS.md §3); no test here is about that, and a
    /// "didChange" came between the expected events in 3 of 5 full runs under load.
    static func asked(_ presenter: RecordingPresenter) -> [String] {
        presenter.events.filter { $0 != "didChange" }
    }

    @Test func saveErrorFailsTheReadAndEveryRelinquishedPresenterReacquires() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let saveError = Self.presenterError()
        // The failing presenter saves only once the other one has relinquished, so that the other one has
        // certainly relinquished before the access fails.
        let otherRelinquished = DispatchSemaphore(value: 0)
        let other = RecordingPresenter(
            url: file,
            callbacks: [.relinquishToReader],
            afterRelinquish: { otherRelinquished.signal() }
        )
        let failing = RecordingPresenter(
            url: file,
            saveError: saveError,
            beforeSave: { _ = otherRelinquished.wait(seconds: patience) }
        )
        var error: NSError?
        var ran = false
        withPresenters([failing, other]) {
            NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in ran = true }
            settle(failing, other)
        }
        #expect(!ran)
        Self.expectSame(error, as: saveError)
        #expect(Self.asked(failing) == ["relinquishToReader", "save", "reacquire"])
        #expect(Self.asked(other) == ["relinquishToReader", "reacquire"])
        #expect(failing.offQueueCallbacks.isEmpty)
        #expect(other.offQueueCallbacks.isEmpty)
    }

    @Test func saveErrorFailsAMergingWriteAndTheFileIsUntouched() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt", "original")
        let saveError = Self.presenterError()
        let failing = RecordingPresenter(url: file, saveError: saveError)
        var error: NSError?
        var ran = false
        withPresenters([failing]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forMerging, error: &error) { url in
                ran = true
                try? Data("overwritten".utf8).writeClosingOnExec(to: url)
            }
            settle(failing)
        }
        #expect(!ran)
        Self.expectSame(error, as: saveError)
        #expect(try String(contentsOf: file, encoding: .utf8) == "original")
        // No did change: nothing was written.
        #expect(Self.asked(failing) == ["relinquishToWriter", "save", "reacquire"])
    }

    @Test func accommodateErrorFailsTheDeletion() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let refusal = Self.presenterError()
        let presenter = RecordingPresenter(url: file, accommodateError: refusal)
        var error: NSError?
        var ran = false
        withPresenters([presenter]) {
            NSFileCoordinator().coordinate(writingItemAt: file, options: .forDeleting, error: &error) { url in
                ran = true
                try? FileManager.default.removeItem(at: url)
            }
            settle(presenter)
        }
        #expect(!ran)
        Self.expectSame(error, as: refusal)
        #expect(FileManager.default.fileExists(atPath: file.path))
        #expect(Self.asked(presenter) == ["relinquishToWriter", "accommodateDeletion", "reacquire"])
    }

    @Test func saveErrorIsPassedToAnIntentAccessor() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let saveError = Self.presenterError()
        let failing = RecordingPresenter(url: file, saveError: saveError)
        let queue = OperationQueue()
        let received = Locked<NSError?>(nil)
        let onQueue = Locked(false)
        let done = DispatchSemaphore(value: 0)
        withPresenters([failing]) {
            NSFileCoordinator().coordinate(with: [.readingIntent(with: file)], queue: queue) { error in
                received.set(error.map { $0 as NSError })
                onQueue.set(OperationQueue.current === queue)
                done.signal()
            }
            #expect(done.wait(seconds: patience))
            queue.waitUntilAllOperationsAreFinished()
            settle(failing)
        }
        #expect(onQueue.current)
        Self.expectSame(received.current, as: saveError)
        #expect(Self.asked(failing) == ["relinquishToReader", "save", "reacquire"])
    }

    @Test func theNextAccessAfterAFailureIsNotFailedByTheOldError() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let failing = RecordingPresenter(url: file, saveError: Self.presenterError())
        var first: NSError?
        var second: NSError?
        var ran = false
        withPresenters([failing]) {
            NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &first) { _ in }
            // A read that does not ask to save is not refused.
            NSFileCoordinator().coordinate(readingItemAt: file, options: .withoutChanges, error: &second) { _ in
                ran = true
            }
            settle(failing)
        }
        #expect(first?.code == 42)
        #expect(second == nil)
        #expect(ran)
        #expect(Self.asked(failing) == ["relinquishToReader", "save", "reacquire", "relinquishToReader", "reacquire"])
    }
}
