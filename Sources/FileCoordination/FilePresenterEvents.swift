import FCToolkit
public import Foundation

/// What happened to a presented item, as ``FilePresenterEvents`` reports it.
public enum FilePresenterEvent: Hashable, Sendable {
    /// Another access wanted to read; the presenter said yes.
    case relinquishedToReader
    /// Another access wanted to write; the presenter said yes.
    case relinquishedToWriter
    /// That access ended.
    case reacquired
    /// The presenter was asked to save; it has nothing to save and said yes.
    case saveRequested
    /// The item is about to be deleted; the presenter said yes and stays registered until you remove it.
    case deletionRequested
    /// The item's contents or attributes changed.
    case changed
    /// The item moved.
    case moved(to: URL)
    /// An item inside the presented directory changed.
    case subitemChanged(URL)
    /// An item appeared inside the presented directory.
    case subitemAppeared(URL)
    /// An item inside the presented directory moved.
    case subitemMoved(from: URL, to: URL)
    /// An item inside the presented directory is about to be deleted; the presenter said yes.
    case subitemDeletionRequested(URL)
}

/// A presenter that says yes to every request and reports everything as an `AsyncSequence`: the Swift-concurrency
/// way to watch an item for new code.
///
/// ```swift
/// let events = FilePresenterEvents(url: documentURL)
/// NSFileCoordinator.addFilePresenter(events)
/// defer { NSFileCoordinator.removeFilePresenter(events) }
/// for await event in events {
///     if case .changed = event { reload() }
/// }
/// ```
///
/// The sequence ends when ``finish()`` is called. Events are buffered without bound, so iterate it while registered.
///
/// - Important: Thread-safe. Its callbacks run on its own serial queue; iterate from any task.
// @unchecked: an NSObject subclass; its state is `let`s: a `Locked` URL, a queue, a stream and its continuation.
public final class FilePresenterEvents: NSObject, NSFilePresenter, AsyncSequence, @unchecked Sendable {
    /// The events, in the order the callbacks ran.
    public typealias Element = FilePresenterEvent

    private let url: Locked<URL?>
    private let stream: AsyncStream<FilePresenterEvent>
    private let continuation: AsyncStream<FilePresenterEvent>.Continuation

    /// The serial queue the callbacks run on.
    public let presentedItemOperationQueue: OperationQueue

    /// Creates a presenter of `url`; register it with ``NSFileCoordinator/addFilePresenter(_:)``.
    public init(url: URL) {
        self.url = Locked(url)
        (stream, continuation) = AsyncStream.makeStream(of: FilePresenterEvent.self)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "FilePresenterEvents \(url.path)"
        presentedItemOperationQueue = queue
        super.init()
    }

    /// The presented item; it follows moves.
    public var presentedItemURL: URL? { url.withLock { $0 } }

    /// Ends the sequence.
    public func finish() { continuation.finish() }

    /// Iterates the events; one iterator at a time.
    public func makeAsyncIterator() -> AsyncStream<FilePresenterEvent>.Iterator { stream.makeAsyncIterator() }

    /// Reports ``FilePresenterEvent/relinquishedToReader`` and relinquishes; reports the reacquire.
    public func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        continuation.yield(.relinquishedToReader)
        reader { [continuation] in continuation.yield(.reacquired) }
    }

    /// Reports ``FilePresenterEvent/relinquishedToWriter`` and relinquishes; reports the reacquire.
    public func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        continuation.yield(.relinquishedToWriter)
        writer { [continuation] in continuation.yield(.reacquired) }
    }

    /// Reports ``FilePresenterEvent/saveRequested``; nothing to save.
    public func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        continuation.yield(.saveRequested)
        completionHandler(nil)
    }

    /// Reports ``FilePresenterEvent/deletionRequested`` and agrees.
    public func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        continuation.yield(.deletionRequested)
        completionHandler(nil)
    }

    /// Reports ``FilePresenterEvent/subitemDeletionRequested(_:)`` and agrees.
    public func accommodatePresentedSubitemDeletion(
        at url: URL,
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        continuation.yield(.subitemDeletionRequested(url))
        completionHandler(nil)
    }

    /// Follows the move and reports it.
    public func presentedItemDidMove(to newURL: URL) {
        url.withLock { $0 = newURL }
        continuation.yield(.moved(to: newURL))
    }

    /// Reports ``FilePresenterEvent/changed``.
    public func presentedItemDidChange() { continuation.yield(.changed) }
    /// Reports ``FilePresenterEvent/subitemChanged(_:)``.
    public func presentedSubitemDidChange(at url: URL) { continuation.yield(.subitemChanged(url)) }
    /// Reports ``FilePresenterEvent/subitemAppeared(_:)``.
    public func presentedSubitemDidAppear(at url: URL) { continuation.yield(.subitemAppeared(url)) }
    /// Reports ``FilePresenterEvent/subitemMoved(from:to:)``.
    public func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {
        continuation.yield(.subitemMoved(from: oldURL, to: newURL))
    }
}
