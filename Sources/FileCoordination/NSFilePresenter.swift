public import FCCore
public import Foundation

/// The callbacks an ``NSFilePresenter`` implements, declared so that no message is sent for nothing.
///
/// Swift on Linux has no optional protocol requirements, so every callback of ``NSFilePresenter`` has a default
/// implementation and the arbiter cannot see which ones a presenter overrides. A presenter that implements only some
/// of them says so with ``NSFilePresenter/presentedItemCallbacks``; the arbiter then sends it nothing else, and
/// treats an undeclared relinquish, save or accommodate as an immediate yes (SEMANTICS.md §3).
public typealias FilePresenterCallbacks = PresenterCallbacks

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
public protocol NSFilePresenter: AnyObject {
    /// The presented item, or `nil` while it does not exist yet.
    var presentedItemURL: URL? { get }
    /// The queue on which the callbacks run.
    var presentedItemOperationQueue: OperationQueue { get }
    /// The primary item of a secondary item (App Sandbox on macOS). Not used for coordination on Linux.
    var primaryPresentedItemURL: URL? { get }
    /// The callbacks this presenter implements (default: all of them).
    var presentedItemCallbacks: FilePresenterCallbacks { get }
    /// `true` when the presented directory is a package: one document, whose contents count as the whole
    /// (SEMANTICS.md §2 rule 2). Directories with a known package extension are packages anyway. Default `false`.
    var presentedItemIsPackage: Bool { get }

    /// Another object or process wants to read the item: do what is needed, then call `reader`, optionally with a
    /// reacquirer that runs on this presenter's queue when the read is done.
    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void)
    /// Another object or process wants to write the item: do what is needed, then call `writer`, optionally with a
    /// reacquirer that runs on this presenter's queue when the write is done.
    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void)
    /// Save unsaved changes to disk, then call the handler with `nil` or with the error that stops the access.
    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void)
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
    public var primaryPresentedItemURL: URL? { nil }
    public var presentedItemCallbacks: FilePresenterCallbacks { .all }
    public var presentedItemIsPackage: Bool { false }
    public var observedPresentedItemUbiquityAttributes: Set<URLResourceKey> { [] }

    public func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        reader(nil)
    }
    public func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        writer(nil)
    }
    public func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completionHandler(nil)
    }
    public func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completionHandler(nil)
    }
    public func accommodatePresentedItemEviction(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        completionHandler(CocoaError(.featureUnsupported))
    }
    public func presentedItemDidMove(to newURL: URL) {}
    public func presentedItemDidChange() {}
    public func presentedItemDidChangeUbiquityAttributes(_ attributes: Set<URLResourceKey>) {}
    public func presentedItemDidGain(_ version: NSFileVersion) {}
    public func presentedItemDidLose(_ version: NSFileVersion) {}
    public func presentedItemDidResolveConflict(_ version: NSFileVersion) {}
    public func accommodatePresentedSubitemDeletion(
        at url: URL,
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        completionHandler(nil)
    }
    public func presentedSubitemDidAppear(at url: URL) {}
    public func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {}
    public func presentedSubitemDidChange(at url: URL) {}
    public func presentedSubitem(at url: URL, didGain version: NSFileVersion) {}
    public func presentedSubitem(at url: URL, didLose version: NSFileVersion) {}
    public func presentedSubitem(at url: URL, didResolve version: NSFileVersion) {}
}
