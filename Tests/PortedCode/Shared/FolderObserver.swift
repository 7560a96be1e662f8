// A folder observer written as public macOS code writes one (a file-system library's directory observer, a folder
// monitor, an asset tool's directory watcher): it presents a plain directory and implements only
// `presentedItemDidChange()` to learn that the folder's contents changed. On macOS that is called when anything in the
// folder is written, created, moved or deleted (issue 37). The one line that is not macOS code is the guarded import.

import Foundation

#if canImport(FileCoordination)
import FileCoordination
#endif

final class FolderObserver: NSObject, NSFilePresenter {
    let presentedItemURL: URL?
    let presentedItemOperationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()
    private let onChange: () -> Void

    init(folder: URL, onChange: @escaping () -> Void) {
        presentedItemURL = folder
        self.onChange = onChange
        super.init()
        NSFileCoordinator.addFilePresenter(self)
    }

    func stop() {
        NSFileCoordinator.removeFilePresenter(self)
    }

    func presentedItemDidChange() {
        onChange()
    }
}
