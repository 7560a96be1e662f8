import FCToolkit
public import FileCoordination
public import Foundation

/// A document that reads and writes its file only through coordinated accesses and presents it to every other
/// program: a `UIDocument`/`NSDocument` for Linux, built only on `FileCoordination`'s public API.
///
/// Subclass it, keep the document's contents in the subclass, and override the pair of methods for its
/// ``storage``: ``read(from:)-(Data)`` and ``dataForSaving()`` for a single file (the default), or
/// ``read(from:)-(DocumentFolder)`` and ``folderForSaving()`` for a folder. Change the contents only inside
/// ``edit(_:)``, which counts the change and schedules the autosave. Then:
///
/// - ``open()`` reads the file in a coordinated read and registers the document as the file's presenter;
/// - ``save()``, ``revert()`` and ``close(saving:)`` write, read again and stop presenting, each through a
///   coordinated access made on the document's behalf (so that it never waits for itself);
/// - while it is open the document answers other programs as Apple's documents do: it saves its unsaved changes
///   when a reader or writer asks, tells you while another program reads or writes the file
///   (``DocumentEvent/othersAccessing(readers:writers:)``), reads the file again after another program changed it
///   (coordinated, or without coordination: the daemon's watcher reports that too), follows a move, closes when the
///   file is deleted, and reports conflict versions a sync tool added (``conflictVersions``,
///   ``resolveConflicts(keeping:)``);
/// - with an ``autosaveDelay``, unsaved changes are saved that long after the first unsaved edit.
///
/// ## Threading
///
/// - Everything the document does to its file (open, save, autosave, revert, reload, conflict resolution, close)
///   runs on one private serial dispatch queue, the document's *work queue*, one thing at a time. The `async` methods
///   suspend the calling task until their work is done there; they never block a thread of Swift's pool.
/// - Presenter callbacks run on ``presentedItemOperationQueue`` (serial). They never wait for the work queue: only
///   the save another program asks for (`savePresentedItemChanges`) writes the file from that queue, with a
///   coordinator made for the document, as docs/PORTING.md describes.
/// - ``read(from:)-(Data)``, ``dataForSaving()``, ``read(from:)-(DocumentFolder)`` and ``folderForSaving()`` are
///   called on either queue, one at a time, holding the document's *contents lock*; ``edit(_:)`` and
///   ``withContents(_:)`` hold the same lock, so a subclass that touches its contents only inside them needs no lock
///   of its own. The lock is recursive.
/// - ``fileURL``, ``hasUnsavedChanges``, ``isClosed`` and the other state properties may be read from any thread.
/// - ``events`` delivers ``DocumentEvent``s in the order the document's state changed, to one consumer.
// @unchecked: an open class (not checkable); its own state is `let`s (queues, locks, the event stream), `State`
// under a `Locked`. A subclass's contents are safe by the rule above: touched only with the contents lock held
// (`edit`, `withContents`, and the read and save hooks, which are called with it held).
open class CoordinatedDocument: NSObject, NSFilePresenter, @unchecked Sendable {
    /// How a document's contents are stored.
    public enum Storage: Sendable {
        /// One regular file, read and written as `Data`.
        case file
        /// A folder of files (a package), read and written as a ``DocumentFolder``.
        case folder
    }

    /// The errors of the document itself (coordination and file-system errors are passed on as they are).
    public struct DocumentError: Error, Sendable, Equatable, CustomStringConvertible {
        /// What went wrong.
        public var message: String
        /// An error with a message.
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    struct State {
        var url: URL
        var isOpen = false
        var isClosed = false
        /// Edits made; saved when equal to `savedChangeCount`.
        var changeCount = 0
        var savedChangeCount = 0
        var readers = 0
        var writers = 0
        var autosaveDelay: Duration?
        var autosaveScheduled = false
    }

    /// The queue of the presenter callbacks (serial).
    public let presentedItemOperationQueue: OperationQueue
    /// The document's work queue: every access to the file is made here, one at a time.
    let workQueue: DispatchQueue
    let state: Locked<State>
    /// The contents lock: held around edits and around the read and save hooks.
    ///
    /// Recursive, not a `Locked`, by the documented contract: the hooks a subclass overrides run with it held and may
    /// read the contents through accessors that take it again (`withContents`, `PlainTextDocument.text`), and an
    /// `edit` body may call them too.
    let contentsLock = NSRecursiveLock()
    /// Held while the file is being written, so that the work queue's save and a save another program asked for
    /// (same presenter, same purpose: the arbiter lets both in) never write at once.
    let writeLock = Locked(())
    let eventContinuation: AsyncStream<DocumentEvent>.Continuation

    /// The document's events, in order, for one consumer; finished when the document closes. The newest 1,024 are
    /// kept when nobody reads them.
    public let events: AsyncStream<DocumentEvent>

    /// Creates a document for the file at `fileURL`. Nothing is read until ``open()``.
    ///
    /// - Parameters:
    ///   - fileURL: The document's file (or folder, for ``Storage/folder``).
    ///   - autosaveDelay: How long after the first unsaved edit the document saves by itself; `nil` never does.
    public init(fileURL: URL, autosaveDelay: Duration? = .seconds(1)) {
        let name = "CoordinatedDocument \(fileURL.lastPathComponent)"
        presentedItemOperationQueue = OperationQueue()
        presentedItemOperationQueue.name = name + " presenter"
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
        workQueue = DispatchQueue(label: name + " work")
        var state = State(url: fileURL.standardizedFileURL)
        state.autosaveDelay = autosaveDelay
        self.state = Locked(state)
        (events, eventContinuation) = AsyncStream.makeStream(
            of: DocumentEvent.self,
            bufferingPolicy: .bufferingNewest(1024)
        )
        super.init()
    }

    func withState<T, Failure: Error>(_ body: (inout State) throws(Failure) -> T) throws(Failure) -> T {
        try state.withLock(body)
    }

    func emit(_ event: DocumentEvent) {
        eventContinuation.yield(event)
    }

    // MARK: State

    /// The document's file, where it is now (it follows moves).
    public var fileURL: URL { withState { $0.url } }
    /// `true` when the contents have edits that are not in the file.
    public var hasUnsavedChanges: Bool { withState { $0.changeCount != $0.savedChangeCount } }
    /// `true` between a successful ``open()`` and the close.
    public var isOpen: Bool { withState { $0.isOpen && !$0.isClosed } }
    /// `true` once the document closed (``close(saving:)``, or its file was deleted). A closed document stays closed.
    public var isClosed: Bool { withState { $0.isClosed } }
    /// Other programs' coordinated accesses that hold the file now, as the presenter was told of them.
    public var othersAccessing: (readers: Int, writers: Int) { withState { ($0.readers, $0.writers) } }
    /// How long after the first unsaved edit the document saves by itself; `nil` never does.
    public var autosaveDelay: Duration? {
        get { withState { $0.autosaveDelay } }
        set { withState { $0.autosaveDelay = newValue } }
    }

    /// How the contents are stored: ``Storage/file`` unless a subclass says otherwise.
    open var storage: Storage { .file }

    // MARK: Contents: what subclasses override

    /// Replaces the contents with what was read from the file. Called with the contents lock held, on the work
    /// queue. The default throws: a ``Storage/file`` document must override it.
    open func read(from data: Data) throws {
        throw DocumentError("\(type(of: self)) does not override read(from: Data)")
    }

    /// The contents to write to the file. Called with the contents lock held, on the work queue or the presenter
    /// queue. The default throws: a ``Storage/file`` document must override it.
    open func dataForSaving() throws -> Data {
        throw DocumentError("\(type(of: self)) does not override dataForSaving()")
    }

    /// Replaces the contents with what was read from the folder. As ``read(from:)-(Data)``, for ``Storage/folder``.
    open func read(from folder: DocumentFolder) throws {
        throw DocumentError("\(type(of: self)) does not override read(from: DocumentFolder)")
    }

    /// The contents to write as the folder. As ``dataForSaving()``, for ``Storage/folder``.
    open func folderForSaving() throws -> DocumentFolder {
        throw DocumentError("\(type(of: self)) does not override folderForSaving()")
    }

    /// Runs `body` with the contents lock held, to read the subclass's contents consistently from any thread.
    public func withContents<T>(_ body: () throws -> T) rethrows -> T {
        contentsLock.lock()
        defer { contentsLock.unlock() }
        return try body()
    }

    /// Changes the contents: runs `body` with the contents lock held, then counts one unsaved change and schedules
    /// the autosave. Call it from any thread.
    public func edit<T>(_ body: () throws -> T) rethrows -> T {
        contentsLock.lock()
        defer { contentsLock.unlock() }
        let result = try body()
        updateChangeCount()
        return result
    }

    /// Counts one unsaved change and schedules the autosave (what ``edit(_:)`` does after its body).
    public func updateChangeCount() {
        let delay: Duration? = withState { state in
            state.changeCount += 1
            guard let delay = state.autosaveDelay, !state.autosaveScheduled, state.isOpen, !state.isClosed else {
                return nil
            }
            state.autosaveScheduled = true
            return delay
        }
        guard let delay else { return }
        workQueue.asyncAfter(deadline: .now() + delay.dispatchInterval) { [self] in
            let due = withState { state in
                state.autosaveScheduled = false
                return state.isOpen && !state.isClosed && state.changeCount != state.savedChangeCount
            }
            guard due else { return }
            do {
                try saveNow(always: false)
            } catch {
                emit(.saveFailed("\(error)"))
            }
        }
    }

    // MARK: Opening, saving, reverting, closing

    /// Reads the file in a coordinated read and registers the document as its presenter, inside that read so that
    /// no write slips in between (docs/SEMANTICS.md §7).
    ///
    /// - Throws: `DocumentError` when the document was opened or closed before; else the coordination error or what
    ///   the read hook threw (the document is then not open).
    public func open() async throws {
        try await onWorkQueue { [self] in try openNow() }
    }

    /// Writes the contents to the file in a coordinated write, even when nothing changed.
    ///
    /// - Throws: `DocumentError` when the document is not open; else the coordination error or what the save hook or
    ///   the file system threw (the changes stay unsaved).
    public func save() async throws {
        try await onWorkQueue { [self] in try saveNow(always: true) }
    }

    /// Reads the file again in a coordinated read, dropping unsaved changes.
    ///
    /// - Throws: `DocumentError` when the document is not open; else the coordination error or what the read hook
    ///   threw.
    public func revert() async throws {
        try await onWorkQueue { [self] in try reloadNow(dropUnsavedChanges: true) }
    }

    /// Stops presenting the file, after saving unsaved changes when `saving` is `true`. Closing a closed document
    /// does nothing.
    ///
    /// - Throws: What the save threw; the document is then still open.
    public func close(saving: Bool = true) async throws {
        try await onWorkQueue { [self] in
            guard !isClosed else { return }
            if saving && isOpen && hasUnsavedChanges { try saveNow(always: false) }
            closeNow(.closedByApp)
        }
    }

    /// Runs `body` on the work queue and returns what it returns, suspending the task meanwhile.
    func onWorkQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            workQueue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    func requireOpen() throws -> URL {
        try withState { state in
            guard state.isOpen, !state.isClosed else {
                throw DocumentError(state.isClosed ? "The document is closed." : "The document is not open.")
            }
            return state.url
        }
    }

    /// A coordinated read or write made on the document's behalf: synchronous, for the work queue and callbacks.
    func coordinated(
        writing: Bool,
        options: NSFileCoordinator.WritingOptions = [],
        _ body: (URL) throws -> Void
    )
        throws
    {
        let url = fileURL
        let coordinator = NSFileCoordinator(filePresenter: self)
        var coordinationError: NSError?
        var bodyError: (any Error)?
        let accessor: (URL) -> Void = { url in
            do { try body(url) } catch { bodyError = error }
        }
        if writing {
            coordinator.coordinate(
                writingItemAt: url,
                options: options,
                error: &coordinationError,
                byAccessor: accessor
            )
        } else {
            coordinator.coordinate(
                readingItemAt: url,
                options: .withoutChanges,
                error: &coordinationError,
                byAccessor: accessor
            )
        }
        if let error = coordinationError ?? bodyError { throw error }
    }

    func openNow() throws {
        try withState { state in
            guard !state.isOpen, !state.isClosed else {
                throw DocumentError(state.isClosed ? "The document is closed." : "The document is already open.")
            }
        }
        try coordinated(writing: false) { url in
            try readContents(at: url, dropUnsavedChanges: true)
            NSFileCoordinator.addFilePresenter(self)
            withState { $0.isOpen = true }
        }
        emit(.opened)
        let conflicts = conflictVersions.count
        if conflicts > 0 { emit(.conflictVersionsChanged(count: conflicts)) }
    }

    /// Saves in a coordinated write; with `always` false only when there are unsaved changes when the write is
    /// granted. Called on the work queue, or on the presenter queue when another program asked for the save.
    func saveNow(always: Bool) throws {
        _ = try requireOpen()
        do {
            try coordinated(writing: true) { url in
                guard always || hasUnsavedChanges else { return }
                try writeContents(to: url)
            }
        } catch {
            emit(.saveFailed("\(error)"))
            throw error
        }
    }

    /// Reads the file again in a coordinated read. Unless `dropUnsavedChanges`, a document with unsaved changes
    /// keeps them and reports ``DocumentEvent/changedOnDiskWithUnsavedChanges``.
    func reloadNow(dropUnsavedChanges: Bool) throws {
        _ = try requireOpen()
        try coordinated(writing: false) { url in
            try readContents(at: url, dropUnsavedChanges: dropUnsavedChanges)
        }
    }

    /// Reads the file at `url` into the subclass (contents lock held). Emits `.reloaded` once open.
    func readContents(at url: URL, dropUnsavedChanges: Bool) throws {
        let didRead: Bool = try withContents {
            if !dropUnsavedChanges && hasUnsavedChanges { return false }
            switch storage {
            case .file: try self.read(from: try Data(contentsOf: url))
            case .folder: try self.read(from: try DocumentFolder(contentsOf: url))
            }
            withState { $0.savedChangeCount = $0.changeCount }
            return true
        }
        guard isOpen else { return }
        emit(didRead ? .reloaded : .changedOnDiskWithUnsavedChanges)
    }

    /// Writes the contents to `url` (inside a coordinated write): a file atomically, a folder through a sibling
    /// folder that replaces it.
    func writeContents(to url: URL) throws {
        try writeLock.withLock { try writeContentsLocked(to: url) }
    }

    /// ``writeContents(to:)`` with `writeLock` held.
    private func writeContentsLocked(to url: URL) throws {
        enum Payload {
            case data(Data)
            case folder(DocumentFolder)
        }
        let (payload, count): (Payload, Int) = try withContents {
            let payload: Payload =
                switch storage {
                case .file: .data(try dataForSaving())
                case .folder: .folder(try folderForSaving())
                }
            return (payload, withState { $0.changeCount })
        }
        switch payload {
        case .data(let data):
            try data.write(to: url, options: .atomic)
        case .folder(let folder):
            let sibling = url.deletingLastPathComponent().appendingPathComponent(
                ".\(url.lastPathComponent).saving-\(UUID().uuidString)"
            )
            do {
                try folder.write(to: sibling)
                if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
                try FileManager.default.moveItem(at: sibling, to: url)
            } catch {
                try? FileManager.default.removeItem(at: sibling)
                throw error
            }
        }
        withState { $0.savedChangeCount = max($0.savedChangeCount, count) }
        emit(.saved)
    }

    /// Stops presenting; emits `.closed(reason)` and finishes ``events``.
    func closeNow(_ reason: DocumentCloseReason) {
        let wasPresenting = withState { state -> Bool in
            guard !state.isClosed else { return false }
            state.isClosed = true
            return true
        }
        guard wasPresenting else { return }
        NSFileCoordinator.removeFilePresenter(self)
        emit(.closed(reason))
        eventContinuation.finish()
    }

    // MARK: Conflict versions

    /// The unresolved conflict versions of the file (a sync tool added them with
    /// `NSFileVersion.addConflictVersionOfItem`), oldest first; empty when there are none.
    public var conflictVersions: [NSFileVersion] {
        NSFileVersion.unresolvedConflictVersionsOfItem(at: fileURL) ?? []
    }

    /// Resolves the file's conflicts in one coordinated write, as Apple documents: replaces the file with `version`
    /// (one of ``conflictVersions``; `nil` keeps the file as it is), marks every conflict version resolved, removes
    /// the other versions, and reads the file again (dropping unsaved changes when a version was picked).
    ///
    /// - Throws: `DocumentError` when the document is not open; else the coordination or version store's error.
    public func resolveConflicts(keeping version: NSFileVersion?) async throws {
        try await onWorkQueue { [self] in
            _ = try requireOpen()
            try coordinated(writing: true, options: .forMerging) { url in
                let conflicts = NSFileVersion.unresolvedConflictVersionsOfItem(at: url) ?? []
                if let version {
                    guard conflicts.contains(version) else {
                        throw DocumentError("The version is not an unresolved conflict version of the document.")
                    }
                    try version.replaceItem(at: url)
                }
                for conflict in conflicts { conflict.isResolved = true }
                try NSFileVersion.removeOtherVersionsOfItem(at: url)
                if version != nil { try readContents(at: url, dropUnsavedChanges: true) }
            }
            emit(.conflictVersionsChanged(count: conflictVersions.count))
        }
    }
}
