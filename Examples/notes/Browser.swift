import FileCoordination
import Foundation

/// `notes --browse FOLDER`: the documents of a folder, kept current by an `NSMetadataQuery` (files appear, change and
/// disappear as the mirror or a shell changes them), with the copies a sync agent publishes a file progress for
/// (issue 44). Up and Down move the selection; ^Q quits.
///
/// - Important: Every method runs on `queue` (serial): keys, the query's notifications and file progress all hop
///   there.
final class Browser: @unchecked Sendable {
    let queue = DispatchQueue(label: "notes.browser")
    private let folder: URL
    private let terminal: Terminal
    private let query = NSMetadataQuery()
    private var items: [(name: String, size: Int)] = []
    private var selected = 0
    private var message = "gathering"
    private var copying: [String: Progress] = [:]
    private var observers: [any NSObjectProtocol] = []
    private var subscriber: Any?
    /// Redraws while copies run.
    private lazy var redraws = RedrawTimer(queue: queue) { [weak self] in self?.draw() }

    init(folder: URL, terminal: Terminal) {
        self.folder = folder
        self.terminal = terminal
    }

    /// Starts the query and the progress subscription; `false` when the query cannot start (no filecoordd).
    func start() -> Bool {
        query.searchScopes = [folder]
        query.predicate = NSPredicate(format: "%K == 'public.data'", NSMetadataItemContentTypeTreeKey)
        query.sortDescriptors = [NSSortDescriptor(key: NSMetadataItemFSNameKey, ascending: true)]
        query.notificationBatchingInterval = 0.2
        let notifications = OperationQueue()
        notifications.underlyingQueue = queue
        query.operationQueue = notifications
        let center = NotificationCenter.default
        observers.append(
            center.addObserver(forName: .NSMetadataQueryDidFinishGathering, object: query, queue: nil) { [self] _ in
                reload("\(query.resultCount) documents")
            }
        )
        observers.append(
            center.addObserver(forName: .NSMetadataQueryDidUpdate, object: query, queue: nil) { [self] note in
                let count = { (key: String) in (note.userInfo?[key] as? [NSMetadataItem])?.count ?? 0 }
                reload(
                    "updated: \(count(NSMetadataQueryUpdateAddedItemsKey)) added, "
                        + "\(count(NSMetadataQueryUpdateChangedItemsKey)) changed, "
                        + "\(count(NSMetadataQueryUpdateRemovedItemsKey)) removed"
                )
            }
        )
        subscriber = Progress.addSubscriber(forFileURL: folder) { [self] progress in
            let shown = UncheckedProgress(progress)
            queue.async { self.progressAppeared(shown.value) }
            return { self.queue.async { self.progressEnded(shown.value) } }
        }
        return query.start()
    }

    private func reload(_ text: String) {
        query.disableUpdates()
        items = query.results.compactMap { result in
            guard let item = result as? NSMetadataItem,
                let name = item.value(forAttribute: NSMetadataItemFSNameKey) as? String
            else { return nil }
            let size = (item.value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber)?.intValue ?? 0
            return (name, size)
        }
        query.enableUpdates()
        selected = min(selected, max(0, items.count - 1))
        message = text
        draw()
    }

    private func progressAppeared(_ progress: Progress) {
        guard let name = progress.fileURL?.lastPathComponent else { return }
        copying[name] = progress
        redraws.run(true)
        draw()
    }

    private func progressEnded(_ progress: Progress) {
        guard let name = progress.fileURL?.lastPathComponent, copying[name] === progress else { return }
        copying[name] = nil
        redraws.run(!copying.isEmpty)
        message = "copied \(name)"
        draw()
    }

    /// Keys (on `queue`); returns `false` to quit.
    func handle(_ keys: [Key]) -> Bool {
        for key in keys {
            switch key {
            case .control("q"): return false
            case .up: selected = max(0, selected - 1)
            case .down: selected = min(max(0, items.count - 1), selected + 1)
            default: break
            }
        }
        draw()
        return true
    }

    func draw() {
        let (rows, columns) = terminal.size
        var screen = "\u{1B}[?25l\u{1B}[H"
        func line(_ text: String, reverse: Bool = false) {
            let clipped = String(text.prefix(columns))
            screen += (reverse ? "\u{1B}[7m" : "") + clipped
            screen +=
                reverse ? String(repeating: " ", count: max(0, columns - clipped.count)) + "\u{1B}[0m" : "\u{1B}[K"
            screen += "\r\n"
        }
        line(" notes  browsing \(folder.path)", reverse: true)
        for index in 0..<max(0, rows - 3) {
            guard index < items.count else {
                line("")
                continue
            }
            let item = items[index]
            var text = "\(index == selected ? ">" : " ") \(item.name)  \(item.size) bytes"
            if let progress = copying[item.name] {
                text += "  copying \(Int((progress.fractionCompleted * 100).rounded(.down)))%"
            }
            line(text)
        }
        line(" \(items.count) documents | \(message)", reverse: true)
        screen += String(" Up/Down select  ^Q quit".prefix(columns)) + "\u{1B}[K"
        terminal.write(screen)
    }
}
