import FCSystem
import FCToolkit
import FileCoordination
import Foundation
import Logging
import SystemPackage

/// A presenter that prints every callback and answers as the command asked.
// @unchecked: an NSObject subclass; `url` is read and written only under `lock`, the rest is `let`.
final class PrintingPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let name: String
    let refuseSave: Bool
    let neverAnswer: Bool
    let reacquire: Bool
    let readOnChange: Bool
    let showContents: Bool
    private let lock = Locked(())
    private var url: URL
    let presentedItemOperationQueue: OperationQueue

    init(
        name: String,
        url: URL,
        refuseSave: Bool,
        neverAnswer: Bool,
        reacquire: Bool,
        readOnChange: Bool,
        mainQueue: Bool,
        showContents: Bool = false
    ) {
        self.showContents = showContents
        if mainQueue {
            presentedItemOperationQueue = .main
        } else {
            presentedItemOperationQueue = OperationQueue()
            presentedItemOperationQueue.maxConcurrentOperationCount = 1
        }
        self.readOnChange = readOnChange
        self.name = name
        self.url = url
        self.refuseSave = refuseSave
        self.neverAnswer = neverAnswer
        self.reacquire = reacquire
    }

    var presentedItemURL: URL? { lock.withLock { url } }

    private func reacquirer() -> (@Sendable () -> Void)? {
        guard reacquire else { return nil }
        let name = self.name
        return { [self] in
            sayContents()
            say("presenter \(name) reacquire")
        }
    }

    /// With show-contents: prints the item's text as it is now.
    private func sayContents() {
        guard showContents, let url = presentedItemURL else { return }
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? "-"
        say("presenter \(name) contents \(text.trimmingCharacters(in: .newlines))")
    }

    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        say("presenter \(name) relinquishToReader")
        if neverAnswer { return }
        reader(reacquirer())
    }

    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        say("presenter \(name) relinquishToWriter")
        sayContents()
        if neverAnswer { return }
        writer(reacquirer())
    }

    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        say("presenter \(name) save")
        if refuseSave {
            completionHandler(
                NSError(
                    domain: "FCTestHostDomain",
                    code: 42,
                    userInfo: [NSLocalizedDescriptionKey: "The document could not be saved."]
                )
            )
        } else {
            completionHandler(nil)
        }
    }

    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        say("presenter \(name) accommodateDeletion")
        completionHandler(nil)
    }

    func presentedItemDidMove(to newURL: URL) {
        lock.withLock { url = newURL }
        say("presenter \(name) didMove \(newURL.path)")
    }

    func presentedItemDidChange() {
        say("presenter \(name) didChange")
        guard readOnChange, let url = presentedItemURL else { return }
        var error: NSError?
        NSFileCoordinator(filePresenter: self).coordinate(readingItemAt: url, options: .withoutChanges, error: &error) {
            _ in
            say("presenter \(name) readOnChange done")
        }
        if let error {
            say("presenter \(name) readOnChange failed \(error.domain) \(error.code) \(error.localizedDescription)")
        }
    }
    func accommodatePresentedSubitemDeletion(
        at url: URL,
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        say("presenter \(name) accommodateSubitemDeletion \(url.path)")
        completionHandler(nil)
    }
    func presentedItemDidGain(_ version: NSFileVersion) { say("presenter \(name) didGainVersion") }
    func presentedItemDidLose(_ version: NSFileVersion) { say("presenter \(name) didLoseVersion") }
    func presentedItemDidResolveConflict(_ version: NSFileVersion) {
        say("presenter \(name) didResolveConflictVersion")
    }
    func presentedSubitem(at url: URL, didGain version: NSFileVersion) {
        say("presenter \(name) subitemDidGainVersion \(url.path)")
    }
    func presentedSubitem(at url: URL, didLose version: NSFileVersion) {
        say("presenter \(name) subitemDidLoseVersion \(url.path)")
    }
    func presentedSubitem(at url: URL, didResolve version: NSFileVersion) {
        say("presenter \(name) subitemDidResolveConflictVersion \(url.path)")
    }
    func presentedSubitemDidChange(at url: URL) { say("presenter \(name) subitemDidChange \(url.path)") }
    func presentedSubitemDidAppear(at url: URL) { say("presenter \(name) subitemDidAppear \(url.path)") }
    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {
        say("presenter \(name) subitemDidMove \(oldURL.path) \(newURL.path)")
    }
}
