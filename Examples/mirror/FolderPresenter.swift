import FileCoordination
import Foundation

/// One side's folder as the mirror presents it: every change, appearance, move or deletion inside it is handed to
/// the mirror by relative path.
///
/// - Important: Callbacks run on `presentedItemOperationQueue` (serial) and only hand work to the mirror's queue.
final class FolderPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let side: Side
    let folder: URL
    let presentedItemOperationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()
    /// Called with what happened, by relative path: `changed(path)` or `moved(from, to)`.
    let report: @Sendable (Side, FolderChange) -> Void

    init(side: Side, folder: URL, report: @escaping @Sendable (Side, FolderChange) -> Void) {
        self.side = side
        self.folder = folder
        self.report = report
    }

    var presentedItemURL: URL? { folder }

    var presentedItemCallbacks: FilePresenterCallbacks {
        [
            .presentedSubitemDidChange, .presentedSubitemDidAppear, .presentedSubitemDidMove,
            .accommodatePresentedSubitemDeletion,
        ]
    }

    private func relative(_ url: URL) -> String? {
        let base = folder.path.hasSuffix("/") ? folder.path : folder.path + "/"
        let path = url.standardizedFileURL.path
        guard path.hasPrefix(base) else { return nil }
        return String(path.dropFirst(base.count))
    }

    /// With `--verbose`, each callback is printed as heard (`mirror: heard ...`), before the mirror acts on it.
    nonisolated(unsafe) static var verbose = false

    private func heard(_ what: String) {
        if Self.verbose { say("mirror: heard \(what) on \(side)") }
    }

    func presentedSubitemDidChange(at url: URL) {
        heard("subitem did change \(url.lastPathComponent)")
        if let path = relative(url) { report(side, .changed(path)) }
    }

    func presentedSubitemDidAppear(at url: URL) {
        heard("subitem did appear \(url.lastPathComponent)")
        if let path = relative(url) { report(side, .changed(path)) }
    }

    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {
        heard("subitem \(oldURL.lastPathComponent) did move to \(newURL.lastPathComponent)")
        guard let from = relative(oldURL), let to = relative(newURL) else { return }
        report(side, .moved(from: from, to: to))
    }

    /// A deletion is about to happen: the mirror's next look at the path (a coordinated read, which waits for the
    /// deleting write) finds it gone.
    func accommodatePresentedSubitemDeletion(at url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void)
    {
        heard("deletion of \(url.lastPathComponent)")
        if let path = relative(url) { report(side, .changed(path)) }
        completionHandler(nil)
    }
}

/// Which folder.
enum Side: Sendable, CustomStringConvertible {
    case this, other
    var description: String { self == .this ? "this" : "other" }
    var opposite: Side { self == .this ? .other : .this }
}

/// What a folder presenter reports.
enum FolderChange: Sendable {
    case changed(String)
    case moved(from: String, to: String)
}
