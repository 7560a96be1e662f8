// File progress as macOS code writes it (issue 44): a download reporter that publishes a file progress, and a
// folder's progress observer that subscribes to it, as a document browser does to draw its bars.

import Foundation

#if canImport(FileCoordination)
import FileCoordination
#endif

/// A sync agent's download of one file, reported as Finder expects it.
// @unchecked: `cancelled` is guarded by `lock` (the cancellation handler runs on another thread).
final class DownloadReporter: @unchecked Sendable {
    let progress: Progress
    private(set) var cancelled = false
    private let lock = NSLock()

    init(fileURL: URL, byteCount: Int64) {
        progress = Progress(totalUnitCount: byteCount)
        progress.kind = .file
        progress.fileURL = fileURL
        progress.fileOperationKind = .downloading
        progress.isCancellable = true
        progress.cancellationHandler = { [weak self] in
            self?.lock.lock()
            self?.cancelled = true
            self?.lock.unlock()
        }
        progress.publish()
    }

    var wasCancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return cancelled
    }

    func received(_ bytes: Int64) { progress.completedUnitCount += bytes }

    func finish() { progress.unpublish() }
}

/// Watches the progress published about a folder's items.
final class FolderProgressObserver {
    private var subscriber: Any?

    func start(folder: URL, onProgress: @escaping (Progress) -> Void, onEnd: @escaping (URL?) -> Void) {
        subscriber = Progress.addSubscriber(forFileURL: folder) { progress in
            onProgress(progress)
            let url = progress.fileURL
            return { onEnd(url) }
        }
    }

    func stop() {
        if let subscriber { Progress.removeSubscriber(subscriber) }
        subscriber = nil
    }
}
