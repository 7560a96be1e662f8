import FCCore
public import Foundation

/// The callbacks an ``NSFilePresenter`` implements, declared so that no message is sent for nothing.
///
/// Swift on Linux has no optional protocol requirements, so every callback of ``NSFilePresenter`` has a default
/// implementation and the arbiter cannot see which ones a presenter overrides. A presenter that implements only some
/// of them says so with ``NSFilePresenter/presentedItemCallbacks``; the arbiter then sends it nothing else, and
/// treats an undeclared relinquish, save or accommodate as an immediate yes (docs/SEMANTICS.md §3).
public struct FilePresenterCallbacks: OptionSet, Hashable, Sendable {
    /// The bits (the same as the daemon's).
    public let rawValue: UInt32
    /// Callbacks from their bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `relinquishPresentedItem(toReader:)`
    public static let relinquishToReader = FilePresenterCallbacks(PresenterCallbacks.relinquishToReader)
    /// `relinquishPresentedItem(toWriter:)`
    public static let relinquishToWriter = FilePresenterCallbacks(PresenterCallbacks.relinquishToWriter)
    /// `savePresentedItemChanges(completionHandler:)`
    public static let savePresentedItemChanges = FilePresenterCallbacks(PresenterCallbacks.savePresentedItemChanges)
    /// `accommodatePresentedItemDeletion(completionHandler:)`
    public static let accommodatePresentedItemDeletion = FilePresenterCallbacks(
        PresenterCallbacks.accommodatePresentedItemDeletion
    )
    /// `accommodatePresentedSubitemDeletion(at:completionHandler:)`
    public static let accommodatePresentedSubitemDeletion = FilePresenterCallbacks(
        PresenterCallbacks.accommodatePresentedSubitemDeletion
    )
    /// `presentedItemDidMove(to:)`
    public static let presentedItemDidMove = FilePresenterCallbacks(PresenterCallbacks.presentedItemDidMove)
    /// `presentedItemDidChange()`
    public static let presentedItemDidChange = FilePresenterCallbacks(PresenterCallbacks.presentedItemDidChange)
    /// `presentedSubitemDidChange(at:)`
    public static let presentedSubitemDidChange = FilePresenterCallbacks(PresenterCallbacks.presentedSubitemDidChange)
    /// `presentedSubitemDidAppear(at:)`
    public static let presentedSubitemDidAppear = FilePresenterCallbacks(PresenterCallbacks.presentedSubitemDidAppear)
    /// `presentedSubitem(at:didMoveTo:)`
    public static let presentedSubitemDidMove = FilePresenterCallbacks(PresenterCallbacks.presentedSubitemDidMove)
    /// `presentedItemDidGain(_:)`
    public static let presentedItemDidGainVersion = FilePresenterCallbacks(
        PresenterCallbacks.presentedItemDidGainVersion
    )
    /// `presentedItemDidLose(_:)`
    public static let presentedItemDidLoseVersion = FilePresenterCallbacks(
        PresenterCallbacks.presentedItemDidLoseVersion
    )
    /// `presentedItemDidResolveConflict(_:)`
    public static let presentedItemDidResolveConflictVersion = FilePresenterCallbacks(
        PresenterCallbacks.presentedItemDidResolveConflictVersion
    )
    /// `presentedSubitem(at:didGain:)`
    public static let presentedSubitemDidGainVersion = FilePresenterCallbacks(
        PresenterCallbacks.presentedSubitemDidGainVersion
    )
    /// `presentedSubitem(at:didLose:)`
    public static let presentedSubitemDidLoseVersion = FilePresenterCallbacks(
        PresenterCallbacks.presentedSubitemDidLoseVersion
    )
    /// `presentedSubitem(at:didResolve:)`
    public static let presentedSubitemDidResolveConflictVersion = FilePresenterCallbacks(
        PresenterCallbacks.presentedSubitemDidResolveConflictVersion
    )
    /// Every callback.
    public static let all = FilePresenterCallbacks(PresenterCallbacks.all)

    init(_ core: PresenterCallbacks) { self.rawValue = core.rawValue }

    /// The core's value with the same bits.
    var core: PresenterCallbacks { PresenterCallbacks(rawValue: rawValue) }
}

/// An object that presents a file or directory to the user and wants to hear when others read, write, move or
/// delete it: Apple's `NSFilePresenter`, with the same Swift names and signatures.
///
/// Register a presenter with ``NSFileCoordinator/addFilePresenter(_:)`` and remove it with
/// ``NSFileCoordinator/removeFilePresenter(_:)`` before it goes away.
///
/// - Important: Every callback except ``presentedItemURL`` and ``presentedItemOperationQueue`` runs on
///   ``presentedItemOperationQueue``, in the order the arbiter sent them. Make that queue serial (the usual
///   `maxConcurrentOperationCount = 1`) or make the callbacks thread-safe. ``presentedItemURL`` may be read from any
///   thread at any time, including from inside coordinated calls, so it must be thread-safe and must not block.
///   A relinquish, save or accommodate callback must call its block or completion handler exactly once; until it
///   does, the access that asked waits (up to the arbiter's presenter timeout).
///
/// The protocol is `@preconcurrency`, as Apple's (imported from Objective-C) is: a presenter whose witnesses differ
/// from these only in `@Sendable` (plain `@escaping ((() -> Void)?) -> Void` closures, or an `@Sendable` outer closure
/// only, as written before Xcode 16) conforms, with a warning in the Swift 6 language mode instead of an error, and
/// its own methods are the ones called (docs/PORTING.md).
@preconcurrency
public protocol NSFilePresenter: NSObjectProtocol {
    /// The presented item, or `nil` while it does not exist yet.
    var presentedItemURL: URL? { get }
    /// The queue on which the callbacks run.
    var presentedItemOperationQueue: OperationQueue { get }
    /// The primary item of a secondary item (App Sandbox on macOS). Not used for coordination on Linux.
    var primaryPresentedItemURL: URL? { get }
    /// The callbacks this presenter implements (default: all of them).
    var presentedItemCallbacks: FilePresenterCallbacks { get }
    /// `true` when the presented directory is a package: one document, whose contents count as the whole
    /// (docs/SEMANTICS.md §2 rule 2). Directories with a known package extension are packages anyway. Default `false`.
    var presentedItemIsPackage: Bool { get }

    /// Another object or process wants to read the item: do what is needed, then call `reader`, optionally with a
    /// reacquirer that runs on this presenter's queue when the read is done.
    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void)
    /// Another object or process wants to write the item: do what is needed, then call `writer`, optionally with a
    /// reacquirer that runs on this presenter's queue when the write is done.
    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void)
    /// Save unsaved changes to disk, then call the handler with `nil` or with the error that stops the access.
    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    /// The `async` form of ``savePresentedItemChanges(completionHandler:)``: implement either one. The default
    /// completion-handler form calls this one.
    func savePresentedItemChanges() async throws
    /// The `async` form of ``accommodatePresentedItemDeletion(completionHandler:)``: implement either one.
    func accommodatePresentedItemDeletion() async throws
    /// The `async` form of ``accommodatePresentedSubitemDeletion(at:completionHandler:)``: implement either one.
    func accommodatePresentedSubitemDeletion(at url: URL) async throws
    /// The item is about to be deleted: prepare (close the document), then call the handler.
    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    /// The item is about to be evicted. Not sent on Linux (there is no eviction); the default refuses.
    func accommodatePresentedItemEviction(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    /// The item, or a directory containing it, moved to `newURL`.
    func presentedItemDidMove(to newURL: URL)
    /// The item's contents or attributes changed.
    func presentedItemDidChange()
    /// The ubiquity attributes of the item changed. Not sent on Linux.
    func presentedItemDidChangeUbiquityAttributes(_ attributes: Set<URLResourceKey>)
    /// The ubiquity attributes this presenter wants to hear about.
    var observedPresentedItemUbiquityAttributes: Set<URLResourceKey> { get }
    /// A version of the item was added.
    func presentedItemDidGain(_ version: NSFileVersion)
    /// A version of the item was removed.
    func presentedItemDidLose(_ version: NSFileVersion)
    /// A conflict version of the item was resolved.
    func presentedItemDidResolveConflict(_ version: NSFileVersion)
    /// An item inside the presented directory is about to be deleted.
    func accommodatePresentedSubitemDeletion(
        at url: URL,
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    )
    /// An item appeared inside the presented directory.
    func presentedSubitemDidAppear(at url: URL)
    /// An item inside the presented directory moved.
    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL)
    /// An item inside the presented directory changed.
    func presentedSubitemDidChange(at url: URL)
    /// A version of an item inside the presented directory was added.
    func presentedSubitem(at url: URL, didGain version: NSFileVersion)
    /// A version of an item inside the presented directory was removed.
    func presentedSubitem(at url: URL, didLose version: NSFileVersion)
    /// A conflict version of an item inside the presented directory was resolved.
    func presentedSubitem(at url: URL, didResolve version: NSFileVersion)
}

extension NSFilePresenter {
    /// `nil`: no primary item.
    public var primaryPresentedItemURL: URL? { nil }
    /// All callbacks: without a declaration the arbiter sends every message.
    public var presentedItemCallbacks: FilePresenterCallbacks { .all }
    /// `false`: a package only if its extension says so.
    public var presentedItemIsPackage: Bool { false }
    /// None: there are no ubiquitous items on Linux.
    public var observedPresentedItemUbiquityAttributes: Set<URLResourceKey> { [] }

    /// Relinquishes at once, with no reacquirer.
    public func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        reader(nil)
    }
    /// Relinquishes at once, with no reacquirer.
    public func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        writer(nil)
    }
    /// Calls the `async` form, ``savePresentedItemChanges()``, and hands its outcome to the handler.
    public func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        answer(completionHandler) { try await $0.savePresentedItemChanges() }
    }
    /// Nothing to save: succeeds at once.
    public func savePresentedItemChanges() async throws {}
    /// Calls the `async` form, ``accommodatePresentedItemDeletion()``, and hands its outcome to the handler.
    public func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        answer(completionHandler) { try await $0.accommodatePresentedItemDeletion() }
    }
    /// Nothing to prepare: succeeds at once.
    public func accommodatePresentedItemDeletion() async throws {}
    /// Refuses, as Apple's does when the method is not implemented.
    public func accommodatePresentedItemEviction(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completionHandler(CocoaError(.featureUnsupported))
    }
    /// Does nothing.
    public func presentedItemDidMove(to newURL: URL) {}
    /// Does nothing.
    public func presentedItemDidChange() {}
    /// Does nothing.
    public func presentedItemDidChangeUbiquityAttributes(_ attributes: Set<URLResourceKey>) {}
    /// Does nothing.
    public func presentedItemDidGain(_ version: NSFileVersion) {}
    /// Does nothing.
    public func presentedItemDidLose(_ version: NSFileVersion) {}
    /// Does nothing.
    public func presentedItemDidResolveConflict(_ version: NSFileVersion) {}
    /// Calls the `async` form, ``accommodatePresentedSubitemDeletion(at:)``, and hands its outcome to the handler.
    public func accommodatePresentedSubitemDeletion(
        at url: URL,
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        answer(completionHandler) { try await $0.accommodatePresentedSubitemDeletion(at: url) }
    }
    /// Nothing to prepare: succeeds at once.
    public func accommodatePresentedSubitemDeletion(at url: URL) async throws {}
    /// Not implemented: the presenter hears ``presentedItemDidChange()`` instead, once for the messages that come
    /// together (docs/SEMANTICS.md §3, "A folder presenter that implements only did change").
    public func presentedSubitemDidAppear(at url: URL) { subitemCallbackNotImplemented() }
    /// Not implemented: the presenter hears ``presentedItemDidChange()`` instead, once for the messages that come
    /// together.
    public func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) { subitemCallbackNotImplemented() }
    /// Not implemented: the presenter hears ``presentedItemDidChange()`` instead, once for the messages that come
    /// together.
    public func presentedSubitemDidChange(at url: URL) { subitemCallbackNotImplemented() }
    /// Not implemented: the presenter hears ``presentedItemDidChange()`` instead, once for the messages that come
    /// together.
    public func presentedSubitem(at url: URL, didGain version: NSFileVersion) { subitemCallbackNotImplemented() }
    /// Not implemented: the presenter hears ``presentedItemDidChange()`` instead, once for the messages that come
    /// together.
    public func presentedSubitem(at url: URL, didLose version: NSFileVersion) { subitemCallbackNotImplemented() }
    /// Not implemented: the presenter hears ``presentedItemDidChange()`` instead, once for the messages that come
    /// together.
    public func presentedSubitem(at url: URL, didResolve version: NSFileVersion) { subitemCallbackNotImplemented() }

    /// A subitem method the presenter does not implement ran: while the library delivers a message, it sends one
    /// ``presentedItemDidChange()`` for the batch afterwards; called by the app itself, did change runs now.
    private func subitemCallbackNotImplemented() {
        if !ThreadContext.fellBackToDidChange() { presentedItemDidChange() }
    }
}

extension NSFilePresenter {
    /// Runs one of the presenter's `async` callbacks on a task and reports its outcome to `completionHandler`:
    /// how the default completion-handler forms reach a presenter that implements the `async` forms.
    fileprivate func answer(
        _ completionHandler: @escaping @Sendable ((any Error)?) -> Void,
        with body: @escaping @Sendable (any NSFilePresenter) async throws -> Void
    ) {
        let presenter = UncheckedPresenter(value: self)
        Task {
            do {
                try await body(presenter.value)
                completionHandler(nil)
            } catch {
                completionHandler(error)
            }
        }
    }
}
