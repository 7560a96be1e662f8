import FCToolkit
public import FileCoordination
public import Foundation

/// A presenter callback, as `fccoord present` prints it and `libfilecoord` forwards it.
public enum PresenterEvent: Sendable, Hashable {
    case relinquishToReader
    case relinquishToWriter
    /// The read or write the presenter relinquished to is done (the reacquirer of Apple's API).
    case reacquire(afterWriter: Bool)
    case savePresentedItemChanges
    case accommodatePresentedItemDeletion
    case accommodatePresentedSubitemDeletion(path: String)
    case presentedItemDidMove(path: String)
    case presentedItemDidChange
    case presentedSubitemDidChange(path: String)
    case presentedSubitemDidAppear(path: String)
    case presentedSubitemDidMove(from: String, to: String)
    case presentedItemDidGainVersion
    case presentedItemDidLoseVersion
    case presentedItemDidResolveConflictVersion
    case presentedSubitemDidGainVersion(path: String)
    case presentedSubitemDidLoseVersion(path: String)
    case presentedSubitemDidResolveConflictVersion(path: String)

    /// Apple's name of the callback (without arguments), as `fccoord present` prints it.
    public var name: String {
        switch self {
        case .relinquishToReader: "relinquishPresentedItemToReader"
        case .relinquishToWriter: "relinquishPresentedItemToWriter"
        case .reacquire: "reacquire"
        case .savePresentedItemChanges: "savePresentedItemChanges"
        case .accommodatePresentedItemDeletion: "accommodatePresentedItemDeletion"
        case .accommodatePresentedSubitemDeletion: "accommodatePresentedSubitemDeletion"
        case .presentedItemDidMove: "presentedItemDidMove"
        case .presentedItemDidChange: "presentedItemDidChange"
        case .presentedSubitemDidChange: "presentedSubitemDidChange"
        case .presentedSubitemDidAppear: "presentedSubitemDidAppear"
        case .presentedSubitemDidMove: "presentedSubitemDidMove"
        case .presentedItemDidGainVersion: "presentedItemDidGainVersion"
        case .presentedItemDidLoseVersion: "presentedItemDidLoseVersion"
        case .presentedItemDidResolveConflictVersion: "presentedItemDidResolveConflictVersion"
        case .presentedSubitemDidGainVersion: "presentedSubitemDidGainVersion"
        case .presentedSubitemDidLoseVersion: "presentedSubitemDidLoseVersion"
        case .presentedSubitemDidResolveConflictVersion: "presentedSubitemDidResolveConflictVersion"
        }
    }

    /// Whether the arbiter waits for the answer (relinquish, save, accommodate).
    public var expectsAnswer: Bool {
        switch self {
        case .relinquishToReader, .relinquishToWriter, .savePresentedItemChanges, .accommodatePresentedItemDeletion,
            .accommodatePresentedSubitemDeletion:
            true
        default: false
        }
    }
}

/// A refusal of a presenter: the access that asked fails with it (save and accommodation callbacks only; a
/// relinquish cannot be refused, as in Apple's API).
public struct PresenterRefusal: Error, Sendable {
    public var code: Int
    public var message: String

    public init(code: Int, message: String) {
        self.code = code
        self.message = message
    }

    /// The error domain of refusals made through the bridge (`fccoord present --on-save`, `libfilecoord`).
    public static let domain = "FileCoordinationBridgePresenter"

    var nsError: NSError {
        NSError(domain: Self.domain, code: code, userInfo: [NSLocalizedDescriptionKey: message])
    }
}

/// A presenter whose callbacks are one closure: registered by ``register(path:callbacks:handler:)``, removed by
/// ``remove()``.
///
/// - Important: The handler runs on the presenter's own serial queue (a thread of the library's), one event at a
///   time, in the order the arbiter sent them. Its return value answers an event that expects one
///   (``PresenterEvent/expectsAnswer``); for the others it is ignored. After ``remove()`` returns, the handler is
///   never called again (unless `remove()` was called from the handler itself, which then finishes first).
// @unchecked: an NSObject subclass; its state is `let`s and a `Locked`, the handler is `@Sendable`.
public final class BridgePresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    public typealias Handler = @Sendable (PresenterEvent) -> PresenterRefusal?

    private struct State {
        var url: URL
        var removed = false
    }

    private let state: Locked<State>
    private let handler: Handler
    private let callbacks: FilePresenterCallbacks
    public let presentedItemOperationQueue: OperationQueue
    public let presentedItemIsPackage: Bool

    private init(url: URL, callbacks: FilePresenterCallbacks, isPackage: Bool, handler: @escaping Handler) {
        self.state = Locked(State(url: url))
        self.handler = handler
        self.callbacks = callbacks
        self.presentedItemIsPackage = isPackage
        presentedItemOperationQueue = OperationQueue()
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
        presentedItemOperationQueue.name = "FCBridge.presenter"
    }

    /// Registers a presenter of `path` that hears `callbacks` (`.relinquishToReader` and `.relinquishToWriter`
    /// bring the reacquire events with them).
    public static func register(
        path: String,
        callbacks: FilePresenterCallbacks = .all,
        isPackage: Bool = false,
        handler: @escaping Handler
    ) -> BridgePresenter {
        let presenter = BridgePresenter(
            url: URL(fileURLWithPath: path),
            callbacks: callbacks,
            isPackage: isPackage,
            handler: handler
        )
        NSFileCoordinator.addFilePresenter(presenter)
        return presenter
    }

    /// Unregisters the presenter and waits until no callback of it runs (unless called from one).
    public func remove() {
        let first = state.withLock { state in
            defer { state.removed = true }
            return !state.removed
        }
        guard first else { return }
        NSFileCoordinator.removeFilePresenter(self)
        if OperationQueue.current !== presentedItemOperationQueue {
            presentedItemOperationQueue.waitUntilAllOperationsAreFinished()
        }
    }

    /// Where the presented item is now (it follows moves).
    public var path: String { state.withLock { $0.url.path } }

    public var presentedItemURL: URL? { state.withLock { $0.url } }
    public var presentedItemCallbacks: FilePresenterCallbacks { callbacks }

    private func deliver(_ event: PresenterEvent) -> PresenterRefusal? {
        guard !state.withLock({ $0.removed }) else { return nil }
        return handler(event)
    }

    private func completion(_ event: PresenterEvent, _ done: @Sendable ((any Error)?) -> Void) {
        done(deliver(event)?.nsError)
    }

    public func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        _ = deliver(.relinquishToReader)
        reader { [self] in _ = deliver(.reacquire(afterWriter: false)) }
    }

    public func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        _ = deliver(.relinquishToWriter)
        writer { [self] in _ = deliver(.reacquire(afterWriter: true)) }
    }

    public func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completion(.savePresentedItemChanges, completionHandler)
    }

    public func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completion(.accommodatePresentedItemDeletion, completionHandler)
    }

    public func accommodatePresentedSubitemDeletion(
        at url: URL,
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        completion(.accommodatePresentedSubitemDeletion(path: url.path), completionHandler)
    }

    public func presentedItemDidMove(to newURL: URL) {
        state.withLock { $0.url = newURL }
        _ = deliver(.presentedItemDidMove(path: newURL.path))
    }

    public func presentedItemDidChange() { _ = deliver(.presentedItemDidChange) }
    public func presentedSubitemDidChange(at url: URL) { _ = deliver(.presentedSubitemDidChange(path: url.path)) }
    public func presentedSubitemDidAppear(at url: URL) { _ = deliver(.presentedSubitemDidAppear(path: url.path)) }
    public func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {
        _ = deliver(.presentedSubitemDidMove(from: oldURL.path, to: newURL.path))
    }
    public func presentedItemDidGain(_ version: NSFileVersion) { _ = deliver(.presentedItemDidGainVersion) }
    public func presentedItemDidLose(_ version: NSFileVersion) { _ = deliver(.presentedItemDidLoseVersion) }
    public func presentedItemDidResolveConflict(_ version: NSFileVersion) {
        _ = deliver(.presentedItemDidResolveConflictVersion)
    }
    public func presentedSubitem(at url: URL, didGain version: NSFileVersion) {
        _ = deliver(.presentedSubitemDidGainVersion(path: url.path))
    }
    public func presentedSubitem(at url: URL, didLose version: NSFileVersion) {
        _ = deliver(.presentedSubitemDidLoseVersion(path: url.path))
    }
    public func presentedSubitem(at url: URL, didResolve version: NSFileVersion) {
        _ = deliver(.presentedSubitemDidResolveConflictVersion(path: url.path))
    }
}
