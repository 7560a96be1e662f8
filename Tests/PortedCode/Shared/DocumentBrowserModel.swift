// A document browser's model as macOS code writes it (issue 44): an NSMetadataQuery of a folder's text files, kept
// current through its notifications.

import Foundation

#if canImport(FileCoordination)
import FileCoordination
#endif

// @unchecked: `names` is guarded by `lock`; the notifications arrive on the query's operation queue.
final class DocumentBrowserModel: @unchecked Sendable {
    let query = NSMetadataQuery()
    private let lock = NSLock()
    private var currentNames: [String] = []
    private var observers: [any NSObjectProtocol] = []

    init(folder: URL) {
        query.searchScopes = [folder]
        query.predicate = NSPredicate(format: "%K LIKE %@", NSMetadataItemFSNameKey, "*.txt")
        query.sortDescriptors = [NSSortDescriptor(key: NSMetadataItemFSNameKey, ascending: false)]
        query.notificationBatchingInterval = 0.1
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        query.operationQueue = queue
        let center = NotificationCenter.default
        for name in [NSNotification.Name.NSMetadataQueryDidFinishGathering, .NSMetadataQueryDidUpdate] {
            observers.append(
                center.addObserver(forName: name, object: query, queue: nil) { [weak self] _ in self?.reload() }
            )
        }
    }

    deinit {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
    }

    var names: [String] {
        lock.lock()
        defer { lock.unlock() }
        return currentNames
    }

    func start() -> Bool { query.start() }

    func stop() { query.stop() }

    private func reload() {
        query.disableUpdates()
        let names = query.results.compactMap {
            ($0 as? NSMetadataItem)?.value(forAttribute: NSMetadataItemFSNameKey) as? String
        }
        query.enableUpdates()
        lock.lock()
        currentNames = names
        lock.unlock()
    }
}
