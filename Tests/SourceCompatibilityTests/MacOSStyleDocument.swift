// Source compatibility: everything in this file is written exactly as for macOS with the current SDK (Xcode 16,
// Swift 6 language mode) and compiles there with `import Foundation` alone. The one exception is the guarded
// `import FileCoordination`: on Linux that module provides NSFileCoordinator, NSFilePresenter and NSFileAccessIntent;
// in a macOS app there is no such module, the `#if` drops the line, and Foundation provides them. Do not add anything
// here that macOS's Foundation lacks (no `presentedItemCallbacks`, no FileCoordinationError, no async conveniences).

import Foundation

#if canImport(FileCoordination)
import FileCoordination
#endif

/// A plain-text document that presents its file: keeps the text in memory, saves when asked, reloads when another
/// process writes, follows moves, closes when the file is deleted and pauses edits while another writer works.
final class TextDocument: NSObject, NSFilePresenter, @unchecked Sendable {
    let presentedItemOperationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.name = "TextDocument"
        queue.maxConcurrentOperationCount = 1
        return queue
    }()

    private let stateLock = NSLock()
    private var fileURL: URL
    private var contents = ""
    private var unsavedChanges = false
    private var closed = false
    private var writersWorking = 0
    private var reloads = 0
    private var savingCoordinator: NSFileCoordinator?

    init(fileURL: URL) {
        self.fileURL = fileURL
        super.init()
    }

    private func withState<T>(_ body: () throws -> T) rethrows -> T {
        stateLock.lock()
        defer { stateLock.unlock() }
        return try body()
    }

    // MARK: What the user sees

    var url: URL { withState { fileURL } }
    var text: String { withState { contents } }
    var hasUnsavedChanges: Bool { withState { unsavedChanges } }
    var isClosed: Bool { withState { closed } }
    /// `true` while another writer works on the file: edits are refused until it is done.
    var isEditingPaused: Bool { withState { writersWorking > 0 } }
    /// How many times the text was read again after another writer changed the file.
    var reloadCount: Int { withState { reloads } }
    /// `true` while `save()` waits for or makes its coordinated write.
    var isSaving: Bool { withState { savingCoordinator != nil } }

    /// Reads the file and registers the document, both inside one coordinated read so that no write slips between.
    func open() throws {
        let coordinator = NSFileCoordinator(filePresenter: self)
        var error: NSError?
        var readError: (any Error)?
        coordinator.coordinate(readingItemAt: url, options: .withoutChanges, error: &error) { readURL in
            do {
                let text = try String(contentsOf: readURL, encoding: .utf8)
                withState {
                    contents = text
                    unsavedChanges = false
                }
                NSFileCoordinator.addFilePresenter(self)
            } catch {
                readError = error
            }
        }
        if let failure = error ?? readError { throw failure }
    }

    /// Replaces the text, as typing would. Returns `false` when the document is closed or another writer works.
    @discardableResult
    func replaceText(with newText: String) -> Bool {
        withState {
            guard !closed, writersWorking == 0 else { return false }
            contents = newText
            unsavedChanges = true
            return true
        }
    }

    /// Writes the text to the file with a coordinated write made on behalf of the document itself.
    func save() throws {
        let coordinator = NSFileCoordinator(filePresenter: self)
        withState { savingCoordinator = coordinator }
        defer { withState { savingCoordinator = nil } }
        let (destination, text) = withState { (fileURL, contents) }
        var error: NSError?
        var writeError: (any Error)?
        coordinator.coordinate(writingItemAt: destination, options: [], error: &error) { writeURL in
            do {
                try Data(text.utf8).write(to: writeURL)
                withState {
                    if contents == text { unsavedChanges = false }
                }
            } catch {
                writeError = error
            }
        }
        if let failure = error ?? writeError { throw failure }
    }

    /// Cancels a `save()` that is waiting for its coordinated write, from any thread.
    func cancelPendingSave() {
        withState { savingCoordinator }?.cancel()
    }

    /// Stops presenting the file.
    func close() {
        withState { closed = true }
        NSFileCoordinator.removeFilePresenter(self)
    }

    // MARK: NSFilePresenter

    var presentedItemURL: URL? { withState { fileURL } }

    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        withState { writersWorking += 1 }
        writer { [self] in
            withState { writersWorking -= 1 }
        }
    }

    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        guard withState({ unsavedChanges && !closed }) else {
            completionHandler(nil)
            return
        }
        do {
            try save()
            completionHandler(nil)
        } catch {
            completionHandler(error)
        }
    }

    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        close()
        completionHandler(nil)
    }

    func presentedItemDidMove(to newURL: URL) {
        withState { fileURL = newURL }
    }

    /// Reads the file again, unless the user has edits that are not saved yet. Runs on the document's queue, with a
    /// coordinator made on behalf of the document, so the read does not wait for the document itself.
    func presentedItemDidChange() {
        guard let readURL = presentedItemURL, !isClosed else { return }
        let coordinator = NSFileCoordinator(filePresenter: self)
        var error: NSError?
        coordinator.coordinate(readingItemAt: readURL, options: .withoutChanges, error: &error) { currentURL in
            guard let text = try? String(contentsOf: currentURL, encoding: .utf8) else { return }
            withState {
                guard !unsavedChanges else { return }
                contents = text
                reloads += 1
            }
        }
    }
}

/// A note that implements the `async` forms of the save and deletion callbacks, which Apple's SDK imports from the
/// completion-handler methods and which a macOS presenter may implement instead of them (SE-0297).
final class AsyncNote: NSObject, NSFilePresenter, @unchecked Sendable {
    let presentedItemOperationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.name = "AsyncNote"
        queue.maxConcurrentOperationCount = 1
        return queue
    }()

    private let stateLock = NSLock()
    private var fileURL: URL
    private var contents: String
    private var closed = false

    init(fileURL: URL, text: String) {
        self.fileURL = fileURL
        self.contents = text
        super.init()
    }

    private func withState<T>(_ body: () throws -> T) rethrows -> T {
        stateLock.lock()
        defer { stateLock.unlock() }
        return try body()
    }

    var isClosed: Bool { withState { closed } }

    func replaceText(with newText: String) {
        withState { contents = newText }
    }

    var presentedItemURL: URL? { withState { fileURL } }

    func savePresentedItemChanges() async throws {
        let (destination, text) = withState { (fileURL, contents) }
        let coordinator = NSFileCoordinator(filePresenter: self)
        var error: NSError?
        var writeError: (any Error)?
        coordinator.coordinate(writingItemAt: destination, options: [], error: &error) { writeURL in
            do {
                try Data(text.utf8).write(to: writeURL)
            } catch {
                writeError = error
            }
        }
        if let failure = error ?? writeError { throw failure }
    }

    func accommodatePresentedItemDeletion() async throws {
        withState { closed = true }
        NSFileCoordinator.removeFilePresenter(self)
    }
}

// MARK: Another app's coordinated accesses

/// A coordinated access that did not finish in time.
struct CoordinationTimeout: Error {}

/// Writes `text` to the file with a coordinator of its own; `whileWriting` runs inside the access.
func coordinatedWrite(_ text: String, to url: URL, whileWriting: (URL) -> Void = { _ in }) throws {
    var error: NSError?
    var writeError: (any Error)?
    NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: url, options: [], error: &error) { writeURL in
        whileWriting(writeURL)
        do {
            try Data(text.utf8).write(to: writeURL)
        } catch {
            writeError = error
        }
    }
    if let failure = error ?? writeError { throw failure }
}

/// Reads the file with default options (so presenters save first), through an intent on a queue of its own.
func coordinatedRead(from url: URL, timeout: TimeInterval) throws -> String {
    final class Outcome: @unchecked Sendable {
        var result: Result<String, any Error> = .failure(CoordinationTimeout())
    }
    let outcome = Outcome()
    let done = DispatchSemaphore(value: 0)
    let intent = NSFileAccessIntent.readingIntent(with: url, options: [])
    let queue = OperationQueue()
    NSFileCoordinator(filePresenter: nil).coordinate(with: [intent], queue: queue) { error in
        if let error {
            outcome.result = .failure(error)
        } else {
            outcome.result = Result { try String(contentsOf: intent.url, encoding: .utf8) }
        }
        done.signal()
    }
    guard done.wait(timeout: .now() + timeout) == .success else { throw CoordinationTimeout() }
    return try outcome.result.get()
}

/// Moves the file the way Apple's documentation says: `.forMoving` on the source, `.forReplacing` on the destination,
/// the move, then `item(at:didMoveTo:)` inside the accessor.
func coordinatedMove(from source: URL, to destination: URL) throws {
    let coordinator = NSFileCoordinator(filePresenter: nil)
    var error: NSError?
    var moveError: (any Error)?
    coordinator.coordinate(
        writingItemAt: source,
        options: .forMoving,
        writingItemAt: destination,
        options: .forReplacing,
        error: &error
    ) { from, to in
        do {
            coordinator.item(at: from, willMoveTo: to)
            try FileManager.default.moveItem(at: from, to: to)
            coordinator.item(at: from, didMoveTo: to)
        } catch {
            moveError = error
        }
    }
    if let failure = error ?? moveError { throw failure }
}

/// Deletes the file with a coordinated write for deleting.
func coordinatedDelete(at url: URL) throws {
    let coordinator = NSFileCoordinator(filePresenter: nil)
    var error: NSError?
    var deleteError: (any Error)?
    coordinator.coordinate(writingItemAt: url, options: .forDeleting, error: &error) { deleteURL in
        do {
            try FileManager.default.removeItem(at: deleteURL)
        } catch {
            deleteError = error
        }
    }
    if let failure = error ?? deleteError { throw failure }
}
