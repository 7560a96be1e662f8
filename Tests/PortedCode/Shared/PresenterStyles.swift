// Written exactly as macOS code is written, in the three styles public code uses for NSFilePresenter's block-taking
// callbacks. On macOS these compile in both language modes (Apple's protocol is imported from Objective-C, so it is
// `@preconcurrency`: a sendability mismatch is a warning); they must compile here the same way, and each presenter's
// own methods must be the ones called. The one line that is not macOS code is the guarded import: on macOS there is
// no FileCoordination module and Foundation provides the types.

import Foundation

#if canImport(FileCoordination)
import FileCoordination
#endif

/// What the presenters heard, in order, and a way to wait until they heard something.
final class CallLog: @unchecked Sendable {
    private let condition = NSCondition()
    private var entries: [String] = []

    func append(_ entry: String) {
        condition.lock()
        entries.append(entry)
        condition.broadcast()
        condition.unlock()
    }

    var all: [String] {
        condition.lock()
        defer { condition.unlock() }
        return entries
    }

    /// Waits until `entry` has been logged (or 10 s have passed); returns whether it was.
    func wait(for entry: String) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        condition.lock()
        defer { condition.unlock() }
        while !entries.contains(entry) {
            if !condition.wait(until: deadline) { return entries.contains(entry) }
        }
        return true
    }
}

/// Style 1: plain closures, as written against the SDKs before Xcode 16 (most public code).
final class PlainClosurePresenter: NSObject, NSFilePresenter {
    let presentedItemURL: URL?
    let presentedItemOperationQueue = OperationQueue()
    let log: CallLog

    init(url: URL, log: CallLog) {
        self.presentedItemURL = url
        self.log = log
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
        super.init()
    }

    func relinquishPresentedItem(toReader reader: @escaping ((() -> Void)?) -> Void) {
        log.append("plain.relinquishToReader")
        reader { self.log.append("plain.reacquireAfterRead") }
    }

    func relinquishPresentedItem(toWriter writer: @escaping ((() -> Void)?) -> Void) {
        log.append("plain.relinquishToWriter")
        writer { self.log.append("plain.reacquireAfterWrite") }
    }

    func savePresentedItemChanges(completionHandler: @escaping (Error?) -> Void) {
        log.append("plain.save")
        completionHandler(nil)
    }

    func accommodatePresentedItemDeletion(completionHandler: @escaping (Error?) -> Void) {
        log.append("plain.accommodateDeletion")
        completionHandler(nil)
    }

    func presentedItemDidChange() {
        log.append("plain.didChange")
    }
}

/// Style 2: an `@Sendable` outer closure only.
final class SendableOuterPresenter: NSObject, NSFilePresenter {
    let presentedItemURL: URL?
    let presentedItemOperationQueue = OperationQueue()
    let log: CallLog

    init(url: URL, log: CallLog) {
        self.presentedItemURL = url
        self.log = log
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
        super.init()
    }

    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((() -> Void)?) -> Void) {
        log.append("outer.relinquishToReader")
        reader { self.log.append("outer.reacquireAfterRead") }
    }

    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((() -> Void)?) -> Void) {
        log.append("outer.relinquishToWriter")
        writer { self.log.append("outer.reacquireAfterWrite") }
    }

    func savePresentedItemChanges(completionHandler: @escaping @Sendable (Error?) -> Void) {
        log.append("outer.save")
        completionHandler(nil)
    }

    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable (Error?) -> Void) {
        log.append("outer.accommodateDeletion")
        completionHandler(nil)
    }

    func presentedItemDidChange() {
        log.append("outer.didChange")
    }
}

/// Style 3: Xcode 16's fully `@Sendable` form.
final class FullySendablePresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let presentedItemURL: URL?
    let presentedItemOperationQueue = OperationQueue()
    let log: CallLog

    init(url: URL, log: CallLog) {
        self.presentedItemURL = url
        self.log = log
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
        super.init()
    }

    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        log.append("full.relinquishToReader")
        reader { self.log.append("full.reacquireAfterRead") }
    }

    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        log.append("full.relinquishToWriter")
        writer { self.log.append("full.reacquireAfterWrite") }
    }

    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        log.append("full.save")
        completionHandler(nil)
    }

    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        log.append("full.accommodateDeletion")
        completionHandler(nil)
    }

    func presentedItemDidChange() {
        log.append("full.didChange")
    }
}

/// A plain (non-`Sendable`) model object, as apps capture in their accessors.
final class DocumentModel {
    var text = ""
    var loadedURLs: [URL] = []
}

/// Reads a file through intents, capturing a non-`Sendable` model and completion handler in the accessor, as
/// macOS code does (a warning in the Swift 6 language mode there, not an error).
func loadWithIntents(_ url: URL, into model: DocumentModel, completion: @escaping (Error?) -> Void) {
    let intent = NSFileAccessIntent.readingIntent(with: url, options: [])
    let queue = OperationQueue()
    NSFileCoordinator(filePresenter: nil).coordinate(with: [intent], queue: queue) { error in
        if let error {
            completion(error)
            return
        }
        do {
            model.text = try String(contentsOf: intent.url, encoding: .utf8)
            completion(nil)
        } catch {
            completion(error)
        }
    }
}

/// Prepares for reading several files, then reads each inside the batch accessor, capturing a non-`Sendable` model,
/// and calls the completion handler from another queue, as macOS code does.
func loadAll(_ urls: [URL], into model: DocumentModel, finished: @escaping @Sendable () -> Void = {}) -> Error? {
    let coordinator = NSFileCoordinator(filePresenter: nil)
    var error: NSError?
    coordinator.prepare(forReadingItemsAt: urls, options: [], writingItemsAt: [], options: [], error: &error) {
        completionHandler in
        for url in urls {
            coordinator.coordinate(readingItemAt: url, options: [], error: nil) { readURL in
                model.loadedURLs.append(readURL)
            }
        }
        let queue = OperationQueue()
        queue.addOperation {
            model.text = "loaded \(model.loadedURLs.count)"
            completionHandler()
            finished()
        }
    }
    return error
}
