import FCCore
import FCSystem
import FCToolkit
import Logging
import Synchronization

// The watcher's events in the query service (QueryService.swift): each tree reads what changed, and each of its
// queries gets one update. On the service's queue, or for a small batch on the watcher's thread when the queue is
// idle (``QueryService/fileSystemChanged(_:)``); never two at once.

extension QueryService {
    /// A batch of the watcher's events: each tree that holds their items reads what changed, and each of its
    /// queries gets one update.
    ///
    /// Called from the watcher's own thread (``QueryRelay``). A tree is in `trees` before its first watch is asked
    /// for, so no event of a watched folder finds the flag down.
    func fileSystemChanged(_ events: [FileSystemEvent]) {
        guard holdsTrees.load(ordering: .acquiring) else { return }
        if events.contains(where: { if case .watchFailed = $0 { true } else { false } }) {
            holdsUnwatchable.store(true, ordering: .releasing)
        }
        // A few events are read here, on the watcher's thread, when nothing else waits (an idle queue would wake a
        // thread: about 60 us of a create's way to a query, issue 44). Never a rescan, a deletion or a move away,
        // which may take a folder's subtree out of a tree: the watcher (and the arbiter after it) would wait for it.
        let small =
            events.count <= Self.eventsReadOnWatcherThread
            && !events.contains {
                switch $0 {
                case .overflow, .deleted, .movedFrom: true
                default: false
                }
            }
        queue.async(runningHereIfIdle: small) { self.changed(events) }
    }

    /// The most events of one batch read on the watcher's thread (``fileSystemChanged(_:)``): each costs a `statx` of
    /// its item, so the watcher's next read waits some microseconds at most (a folder that appears is listed later,
    /// on the queue).
    static let eventsReadOnWatcherThread = 16

    private func changed(_ events: [FileSystemEvent]) {
        guard !trees.isEmpty else { return }
        var deltas: [ItemPath: QueryTree.Delta] = [:]
        var appeared: [ItemPath: [ItemPath]] = [:]
        // Told first: what the batch's updates hold may already miss what the folder's watch would have seen.
        var outputs: [Output] = []
        for event in events {
            if case .watchFailed(let folder, let reason) = event {
                for tree in trees.values.filter({ $0.holds(folder) }).sorted(by: { $0.root < $1.root })
                where tree.watchFailed(folder, reason: reason) {
                    outputs += watchUnavailable(folder, reason: reason, of: tree)
                }
                // Set before the batch was queued; set again here, in case no tree was left in between (cleared).
                holdsUnwatchable.store(true, ordering: .releasing)
                continue
            }
            if case .overflow = event {
                for tree in trees.values {
                    guard tree.gathered else {
                        tree.rescanWhenGathered = true
                        continue
                    }
                    let fresh = rescan(tree, into: &deltas[tree.root, default: QueryTree.Delta()])
                    appeared[tree.root, default: []] += fresh
                }
                continue
            }
            // The name was vacated: whatever is there when the batch is read is another item, made since.
            let vacated: Bool
            switch event {
            case .deleted, .movedFrom: vacated = true
            default: vacated = false
            }
            for path in event.items {
                // A tree being gathered takes the change too (its folder may be listed already).
                let holders = trees.values.filter { $0.holds(path) && path != $0.root }
                guard !holders.isEmpty, let metadata = readItem(path, vacated: vacated) else { continue }
                for tree in holders {
                    // A tree being gathered adds the change to its piece: its queries may have had the item.
                    var delta = deltas[tree.root] ?? (tree.gathered ? QueryTree.Delta() : tree.piece)
                    if !tree.gathered { tree.piece = QueryTree.Delta(.piece) }
                    // The old item goes first, so that a folder made again at once (`rm -r d; mkdir d`, read in one
                    // batch) is a folder that appeared: the kernel dropped the old one's watch, and the new one is
                    // watched and listed. Read as the same folder, it was neither, and nothing made in it was told.
                    if vacated, metadata != nil { tree.set(path, nil, into: &delta) }
                    let wasFolder = tree.metadata(of: path)?.isDirectory == true
                    tree.set(path, metadata, into: &delta)
                    // A folder that appears may hold what was made in it before its watch: listed once watched. So
                    // does a folder that replaced a file of the same name (before, it was never watched nor listed).
                    if let metadata, metadata.isDirectory, !wasFolder, tree.metadata(of: path) != nil {
                        appeared[tree.root, default: []].append(path)
                    }
                    deltas[tree.root] = delta
                }
            }
        }
        for (root, recorded) in deltas.sorted(by: { $0.key < $1.key }) {
            guard let tree = trees[root] else { continue }
            var delta = recorded
            // Folders gone are let go before those that appeared are watched (see `listed`).
            outputs += watchOutputs(delta.unwatch, of: tree)
            delta.unwatch = []
            delta.watch = []
            if let folders = appeared[root] { outputs += list(folders, of: tree, asChanges: tree.gathered) }
            if tree.gathered {
                outputs += updates(delta, of: tree)
            } else {
                tree.piece = delta
                if delta.listed.count + delta.removed.count >= Self.itemsPerMessage { outputs += flushPiece(of: tree) }
            }
        }
        output(outputs)
        publish()
    }

    /// The folders of `tree` gone (`unwatch`), let go once each.
    func watchOutputs(_ unwatch: [ItemPath], of tree: QueryTree) -> [Output] {
        tree.stopWatching(unwatch).map { .unwatch($0) }
    }

    /// What is at `path` now (`.some(nil)`: nothing), once for every tree that holds it; `nil` when it cannot be read
    /// (`EACCES`: a folder on its way lost its search permission; `ENAMETOOLONG`) and the event did not vacate the
    /// name: the trees keep the item as they had it (before, it was taken for gone and removed from every query's
    /// results, and nothing told it again when it could be read). A name vacated (deleted, moved away) is gone
    /// whatever cannot be read there now.
    private func readItem(_ path: ItemPath, vacated: Bool) -> ItemMetadata?? {
        do {
            return .some(try ItemMetadata.of(pathBytes: path.bytes))
        } catch {
            logger.debug(
                vacated
                    ? "an item of a live query's tree cannot be read where one was deleted or moved away: told as gone"
                    : "an item of a live query's tree cannot be read: kept as it was",
                metadata: ["item.path": "\(path)", "error": "\(error)"]
            )
            return vacated ? .some(nil) : nil
        }
    }

    /// Watches the watcher added (`WatcherReport.watched`): folders of trees that had failed are live again, and what
    /// changed in them meanwhile went unseen, so each such tree is read again and the difference told (as after an
    /// overflow; a tree still being gathered is read again once gathered). Called from the watcher's thread; a job on
    /// the queue only while a tree may have a folder not watched (``holdsUnwatchable``).
    func watchesAdded(_ folders: [ItemPath]) {
        guard holdsUnwatchable.load(ordering: .acquiring) else { return }
        queue.async {
            var outputs: [Output] = []
            for tree in self.trees.values.sorted(by: { $0.root < $1.root }) where tree.watchesTook(folders) {
                outputs += self.readAgain(tree)
                if tree.allWatched { outputs += self.watchAvailable(of: tree) }
            }
            self.output(outputs)
            self.publish()
        }
    }

    /// Reads `tree` again and tells the difference, as after an overflow (``changed(_:)``).
    private func readAgain(_ tree: QueryTree) -> [Output] {
        guard tree.gathered else {
            tree.rescanWhenGathered = true
            return []
        }
        var delta = QueryTree.Delta()
        let fresh = rescan(tree, into: &delta)
        var outputs = watchOutputs(delta.unwatch, of: tree)
        delta.unwatch = []
        delta.watch = []
        outputs += list(fresh, of: tree, asChanges: true)
        return outputs + updates(delta, of: tree)
    }

    /// What the queries of `tree` are told when its last folder not watched is watched again (each of them was told of
    /// one: ``watchUnavailable(_:reason:of:to:)``, at the failure or as it joined), after what changed meanwhile.
    func watchAvailable(of tree: QueryTree) -> [Output] {
        logger.notice(
            "every folder of a live query's tree is watched again: changes in them reach its queries",
            metadata: ["query.root": "\(tree.root)"]
        )
        return tree.queries.sorted().map { .watchAvailable($0, root: tree.root) }
    }

    /// What the queries of `tree` are told when a folder of it cannot be watched (``QueryTree/watchFailed(_:reason:)``
    /// said to tell them), or what `keys` alone are told (a query that joins a tree with such a folder).
    func watchUnavailable(
        _ folder: ItemPath,
        reason: String,
        of tree: QueryTree,
        to keys: [QueryKey]? = nil
    ) -> [Output] {
        logger.warning(
            "changes in a folder of a live query's tree will not reach its queries: it cannot be watched",
            metadata: ["query.root": "\(tree.root)", "item.path": "\(folder)", "reason": "\(reason)"]
        )
        return (keys ?? tree.queries.sorted()).map { .watchUnavailable($0, folder: folder, reason: reason) }
    }
}
