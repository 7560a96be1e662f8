import FileCoordination
import Foundation
import Testing

/// `TextDocument` and the helpers next to it, written as for macOS, behave on Linux as they do on macOS.
///
/// Coordinated calls block their thread, so each runs on a thread of its own (``onAnotherThread(timeout:_:)``) and
/// every wait is bounded: a coordination bug fails a test instead of hanging it, and no test blocks a thread of the
/// shared pool that presenter queues also need.
@Suite struct MacOSStyleDocumentTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("SourceCompatibilityTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// Creates `name` with `text` and opens a document on it.
    func openDocument(_ name: String, text: String) async throws -> TextDocument {
        let url = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        let document = TextDocument(fileURL: url)
        try await onAnotherThread { try document.open() }
        return document
    }

    func cleanUp(_ document: TextDocument) {
        document.close()
        try? FileManager.default.removeItem(at: directory)
    }

    @Test func anotherWriterMakesTheDocumentReload() async throws {
        let document = try await openDocument("doc.txt", text: "original")
        defer { cleanUp(document) }
        #expect(NSFileCoordinator.filePresenters.contains { $0 === document })

        let duringWrite = Locked((paused: false, editAccepted: true))
        let url = document.url
        try await onAnotherThread {
            try coordinatedWrite("from another app", to: url) { _ in
                duringWrite.value = (document.isEditingPaused, document.replaceText(with: "typed meanwhile"))
            }
        }

        #expect(duringWrite.value.paused, "the document did not relinquish to the writer before it wrote")
        #expect(!duringWrite.value.editAccepted, "the document accepted an edit while another writer worked")
        #expect(await eventually { document.text == "from another app" }, "the document did not reload")
        #expect(await eventually { !document.isEditingPaused }, "the reacquirer did not resume editing")
        await drain(document)
        #expect(document.reloadCount == 1)
        #expect(!document.hasUnsavedChanges)
        #expect(document.replaceText(with: "typed after"))
    }

    @Test func aReaderSeesUnsavedEditsSavedFirst() async throws {
        let document = try await openDocument("doc.txt", text: "original")
        defer { cleanUp(document) }
        #expect(document.replaceText(with: "edited, not saved"))
        let url = document.url

        let seen = try await onAnotherThread { try coordinatedRead(from: url, timeout: 10) }

        #expect(seen == "edited, not saved", "the reader did not see the document's unsaved edits")
        #expect(!document.hasUnsavedChanges)
        #expect(try String(contentsOf: url, encoding: .utf8) == "edited, not saved")
        await drain(document)
        #expect(document.text == "edited, not saved")
        #expect(document.reloadCount == 0, "the document heard of its own save")
    }

    @Test func aCoordinatedMoveMovesTheDocument() async throws {
        let document = try await openDocument("before.txt", text: "moving")
        defer { cleanUp(document) }
        let source = document.url
        let destination = directory.appendingPathComponent("after.txt")

        try await onAnotherThread { try coordinatedMove(from: source, to: destination) }

        #expect(await eventually { samePath(document.url, destination) }, "the URL is \(document.url.path)")
        await drain(document)
        #expect(samePath(try #require(document.presentedItemURL), destination))
        #expect(!document.isClosed)
        #expect(document.reloadCount == 0, "a move is not a change")
        #expect(document.replaceText(with: "saved at the new place"))
        try await onAnotherThread { try document.save() }
        #expect(try String(contentsOf: destination, encoding: .utf8) == "saved at the new place")
        #expect(!FileManager.default.fileExists(atPath: source.path))
    }

    @Test func aCoordinatedDeleteClosesTheDocument() async throws {
        let document = try await openDocument("doc.txt", text: "doomed")
        defer { cleanUp(document) }
        let url = document.url

        try await onAnotherThread { try coordinatedDelete(at: url) }

        // The deleter waited for the document's answer, so the document is closed by now.
        #expect(document.isClosed, "the deletion did not wait for accommodatePresentedItemDeletion")
        #expect(!NSFileCoordinator.filePresenters.contains { $0 === document }, "the document is still registered")
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(!document.replaceText(with: "too late"))
    }

    @Test func aWaitingSaveCanBeCancelledFromAnotherThread() async throws {
        let document = try await openDocument("doc.txt", text: "original")
        defer { cleanUp(document) }
        #expect(document.replaceText(with: "unsaved"))
        let url = document.url

        // Another app holds a coordinated write on the file until `release` is signalled.
        let holding = Locked(false)
        let holderDone = Locked(false)
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        Thread.detachNewThread {
            var error: NSError?
            NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: url, options: [], error: &error) { _ in
                holding.value = true
                _ = release.wait(timeout: .now() + 10)
            }
            holderDone.value = true
        }
        try #require(await eventually { holding.value }, "the holder never got its write")

        // The document's save waits behind it; cancel it from this thread.
        let saveResult = Locked<Result<Void, any Error>?>(nil)
        Thread.detachNewThread { saveResult.value = Result { try document.save() } }
        #expect(await eventually { document.isSaving }, "save() never started")
        try await Task.sleep(for: .milliseconds(200))
        #expect(saveResult.value == nil, "save() did not wait for the writer that holds the file")
        document.cancelPendingSave()

        #expect(await eventually { saveResult.value != nil }, "the cancelled save() did not return")
        #expect(!holderDone.value)
        let result = try #require(saveResult.value)
        #expect(throws: CocoaError.self) { try result.get() }
        if case .failure(let error) = result {
            #expect((error as NSError).domain == NSCocoaErrorDomain)
            #expect((error as NSError).code == CocoaError.userCancelled.rawValue)
        }
        #expect(try String(contentsOf: url, encoding: .utf8) == "original", "the cancelled save wrote anyway")
        #expect(document.hasUnsavedChanges)

        // Once the holder is done, a new save (with a new coordinator) goes through.
        release.signal()
        try #require(await eventually { holderDone.value })
        try await onAnotherThread { try document.save() }
        #expect(try String(contentsOf: url, encoding: .utf8) == "unsaved")
        #expect(!document.hasUnsavedChanges)
    }

    // Apple's SDK lets a presenter implement `savePresentedItemChanges() async throws` and
    // `accommodatePresentedItemDeletion() async throws` instead of the completion-handler forms; FileCoordination's
    // default completion-handler forms call them.

    @Test func anAsyncSaveIsCalledBeforeAReader() async throws {
        let url = directory.appendingPathComponent("note.txt")
        try Data("original".utf8).write(to: url)
        let note = AsyncNote(fileURL: url, text: "original")
        NSFileCoordinator.addFilePresenter(note)
        defer {
            NSFileCoordinator.removeFilePresenter(note)
            try? FileManager.default.removeItem(at: directory)
        }
        note.replaceText(with: "edited, not saved")

        let seen = try await onAnotherThread { try coordinatedRead(from: url, timeout: 10) }

        #expect(seen == "edited, not saved", "the async save was not called")
    }

    @Test func anAsyncAccommodateIsCalledBeforeADeletion() async throws {
        let url = directory.appendingPathComponent("note.txt")
        try Data("doomed".utf8).write(to: url)
        let note = AsyncNote(fileURL: url, text: "doomed")
        NSFileCoordinator.addFilePresenter(note)
        defer {
            NSFileCoordinator.removeFilePresenter(note)
            try? FileManager.default.removeItem(at: directory)
        }

        try await onAnotherThread { try coordinatedDelete(at: url) }

        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(note.isClosed, "the async accommodate was not called")
        #expect(!NSFileCoordinator.filePresenters.contains { $0 === note })
    }
}

// MARK: Bounded waiting

/// A value shared between threads.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// `true` as soon as `condition` holds, `false` if it does not within `timeout` seconds.
func eventually(timeout: TimeInterval = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        if Date() >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}

/// Runs `body` on a thread of its own, where it may block, and waits at most `timeout` seconds for it.
func onAnotherThread<T: Sendable>(
    timeout: TimeInterval = 10,
    _ body: @escaping @Sendable () throws -> T
) async throws -> T {
    let outcome = Locked<Result<T, any Error>?>(nil)
    Thread.detachNewThread { outcome.value = Result { try body() } }
    guard await eventually(timeout: timeout, { outcome.value != nil }), let result = outcome.value else {
        throw CoordinationTimeout()
    }
    return try result.get()
}

/// Waits (at most `timeout` seconds each time) until the document's queue has run what was sent to it so far, twice
/// with a pause between, so that messages sent just after an access ended have arrived and run too.
func drain(_ document: TextDocument, timeout: TimeInterval = 5) async {
    for _ in 0..<2 {
        let ran = Locked(false)
        document.presentedItemOperationQueue.addOperation { ran.value = true }
        #expect(await eventually(timeout: timeout) { ran.value }, "the document's queue is stuck")
        try? await Task.sleep(for: .milliseconds(50))
    }
}

func samePath(_ url: URL, _ other: URL) -> Bool {
    url.standardizedFileURL.resolvingSymlinksInPath().path == other.standardizedFileURL.resolvingSymlinksInPath().path
}
