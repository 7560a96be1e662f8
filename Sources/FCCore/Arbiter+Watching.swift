/// The arbiter's file-system watching state (issue 13): which directories presenters need watched, open coalescing
/// windows, and recent coordinated writes whose echoes are dropped.
///
/// Not thread-safe: owned by one ``Arbiter``.
struct WatchState {
    /// Presenters that need each directory watched. A presenter of `P` needs `P`'s parent (to hear of `P` written,
    /// deleted, renamed) and `P` itself (to hear of its direct subitems when it is a directory; the watcher uses no
    /// watch when it is not). Only directories with a count above zero are here.
    var interest: [ItemPath: Int] = [:]
    /// The counts, before this event, of the directories whose count this event changed (``flushWatchChanges()``).
    var touched: [ItemPath: Int] = [:]
    /// Why a directory could not be watched, as the watcher reported it, while presenters still need it and until
    /// the watcher says it is watched (``FileSystemEvent/watchAdded(_:)``).
    var failures: [ItemPath: String] = [:]
    /// Notifications sent for file-system events whose coalescing window is open; `true` when more of the same came
    /// in the window (one more is sent when it closes).
    var windows: [PresenterMessageKey: Bool] = [:]
    /// Items written by a coordinated write that ended recently: what tells their echoes from later changes, and
    /// the tick after which their events are no longer echoes of it.
    var echoes: [ItemPath: EchoRecord] = [:]
    /// Items created recently, to the tick after which they are no longer new, with their state when the creation was
    /// read: a file's creation and its first close after writing are one appearance when nothing was written between
    /// the two reads, and a save through a new temporary renamed over an item is a change.
    var fresh: [ItemPath: FreshItem] = [:]
    /// Ticks of the window timer so far.
    var tick = 0
    /// How far the watcher has read (``ArbiterEvent/fileSystemChanged(_:observed:readAt:drainedAt:)``): `nil` until
    /// it first says. Echo records wait for it (``Arbiter/waitsForWatcher(_:)``).
    var drainedThrough: Int64?
    /// `true` from ``ArbiterEffect/drainWatcher`` until the watcher next says how far it has read.
    var drainAsked = false
    /// The first tick at which an echo record may go (``Arbiter/expireEchoes()``): records that wait for a lagging
    /// watcher are not looked at again at every window while nothing changed for them.
    var echoScanDue = 0
    /// `true` while the window timer runs.
    var timerRunning = false
    var statistics = WatchStatistics()

    var isIdle: Bool { windows.isEmpty && echoes.isEmpty && fresh.isEmpty }
}

extension Arbiter {
    // MARK: Interest

    /// Counts a presenter's need for the directories that show changes to `path` (its parent and itself).
    func changeWatchInterest(_ path: ItemPath?, by delta: Int) {
        guard configuration.watchesFileSystem, let path else { return }
        if let parent = path.parent { changeInterest(parent, by: delta) }
        changeInterest(path, by: delta)
    }

    private func changeInterest(_ directory: ItemPath, by delta: Int) {
        let old = watching.interest[directory] ?? 0
        if watching.touched[directory] == nil { watching.touched[directory] = old }
        let new = old + delta
        watching.interest[directory] = new > 0 ? new : nil
    }

    /// Emits the watch changes of the event just handled: every unwatch before any watch, so that a directory that
    /// moved (its old path unwatched, its new path watched: one inode) keeps its watch in the host.
    func flushWatchChanges() {
        guard !watching.touched.isEmpty else { return }
        let touched = watching.touched.sorted { $0.key < $1.key }
        watching.touched = [:]
        for (directory, old) in touched where old > 0 && watching.interest[directory] == nil {
            watching.failures[directory] = nil
            effects.append(.unwatch(directory))
        }
        for (directory, old) in touched where old == 0 && watching.interest[directory] != nil {
            effects.append(.watch(directory))
        }
    }

    // MARK: Events

    /// A batch of file-system events, in the kernel's order: renames are paired by cookie within the batch.
    /// `observed`: the state of their items when read, and `readAt` when
    /// (``ArbiterEvent/fileSystemChanged(_:observed:readAt:drainedAt:)``).
    func fileSystemChanged(
        _ events: [FileSystemEvent],
        observed: [ItemPath: ItemStamp],
        readAt: Int64? = nil,
        replayed: Bool = false
    ) {
        if !replayed { watching.statistics.events += events.count }
        var movedTo: [UInt32: Int] = [:]
        for (index, event) in events.enumerated() {
            if case .movedTo(_, let cookie, _) = event { movedTo[cookie] = index }
        }
        // `true` when the event is to be reported: not an echo, and not held by a running write.
        func reported(_ path: ItemPath, _ batch: FileSystemEvent...) -> Bool {
            switch echoVerdict(path, observed: observed, readAt: readAt) {
            case .foreign: return true
            case .echo: return false
            case .held(let claim):
                claim.held.hold(batch, observed: observed, readAt: readAt)
                return false
            }
        }
        var paired: Set<Int> = []
        for (index, event) in events.enumerated() where !paired.contains(index) {
            switch event {
            case .changed(let path):
                guard reported(path, event) else { continue }
                if let fresh = watching.fresh[path], !fresh.written {
                    watching.fresh[path]?.written = true
                    // Its first contents, when they are as its creation was read: what its presenters were told of.
                    // Written after that read (a copy of some size, an append right after a move in), they are a
                    // change: until stop 69 they were dropped, and presenters read the file as it was at creation.
                    if fresh.hasContents(of: observed[path]) {
                        watching.statistics.closesOfAppearances += 1
                        continue
                    }
                }
                itemChanged(path)
            case .created(let path, let isDirectory):
                guard reported(path, event) else { continue }
                itemAppeared(path, isDirectory: isDirectory, stamp: observed[path])
            case .deleted(let path):
                guard reported(path, event) else { continue }
                itemDeleted(path)
            case .movedFrom(let from, let cookie):
                if let toIndex = movedTo[cookie], toIndex > index, case .movedTo(let to, _, _) = events[toIndex] {
                    paired.insert(toIndex)
                    if !replayed { watching.statistics.pairedMoves += 1 }
                    guard renameReported(from, to, event, events[toIndex], observed: observed, readAt: readAt) else {
                        continue
                    }
                    itemRenamed(from: from, to: to)
                } else {
                    guard reported(from, event) else { continue }
                    itemDeleted(from)  // Moved out of everything watched.
                }
            case .movedTo(let path, _, let isDirectory):
                guard reported(path, event) else { continue }
                // Moved in from somewhere unwatched.
                itemAppeared(path, isDirectory: isDirectory, stamp: observed[path])
            case .overflow:
                queueOverflowed()
            case .watchFailed(let directory, let reason):
                watchFailed(directory, reason: reason)
            case .watchAdded(let directory):
                watchAdded(directory)
            case .changedBeforeWatch(let path, let id):
                guard reported(path, event) else { continue }
                changedBeforeWatch(path, presenter: id)
            }
        }
        startWatchTimerIfNeeded()
    }

    /// A rename with both ends watched is reported when neither end is an echo; held by a running write (both
    /// halves) when either end is under one.
    private func renameReported(
        _ from: ItemPath,
        _ to: ItemPath,
        _ first: FileSystemEvent,
        _ second: FileSystemEvent,
        observed: [ItemPath: ItemStamp],
        readAt: Int64?
    ) -> Bool {
        let verdicts = [
            echoVerdict(from, observed: observed, readAt: readAt), echoVerdict(to, observed: observed, readAt: readAt),
        ]
        for verdict in verdicts {
            if case .held(let claim) = verdict {
                claim.held.hold([first, second], observed: observed, readAt: readAt)
                return false
            }
        }
        return verdicts.allSatisfy { if case .foreign = $0 { true } else { false } }
    }

    private func itemChanged(_ path: ItemPath) {
        notifyPresenters(at: path, .presentedItemDidChange)
        notifyEnclosingDirectories(of: path, appeared: false)
    }

    private func itemAppeared(_ path: ItemPath, isDirectory: Bool, stamp: ItemStamp?) {
        watching.fresh[path] = FreshItem(expiry: watching.tick + 2, stamp: stamp)
        // A presenter of an item that did not exist yet hears that it does now.
        notifyPresenters(at: path, .presentedItemDidChange)
        notifyEnclosingDirectories(of: path, appeared: true)
        if isDirectory, configuration.watchesFileSystem, watching.interest[path] != nil {
            // Presenters wait for this directory: ask again (its watch could not be added while it did not exist);
            // the host scans it right after adding the watch, so that nothing created in between is missed. A
            // failure already told stays until the watcher says the watch was added (then the presenters hear it
            // is), or fails again without telling anybody twice.
            effects.append(.watch(path))
        }
    }

    private func itemDeleted(_ path: ItemPath) {
        watching.fresh[path] = nil
        // docs/SEMANTICS.md §3: the item's presenter hears that it changed (it no longer exists).
        notifyPresenters(at: path, .presentedItemDidChange)
        notifyEnclosingDirectories(of: path, appeared: false)
    }

    /// A rename whose two ends are watched. Presenters of the item and of everything inside it get their new URL;
    /// presenters of an item it replaced hear that their item changed (an editor's save through a temporary file
    /// renamed over the item is one change and no move); enclosing directories hear of the move.
    private func itemRenamed(from: ItemPath, to: ItemPath) {
        let savedThroughTemporary = watching.fresh.removeValue(forKey: from) != nil
        let replaced = tree.existingNode(to)?.presenters ?? []
        var moving: [(PresenterRecord, ItemPath)] = []
        if let node = tree.existingNode(from), node.subtreePresenters > 0 {
            func collect(_ node: AccessNode) {
                for id in node.presenters {
                    guard let record = presenters[id], let old = record.registration.path,
                        let new = old.relocated(from: from, to: to)
                    else { continue }
                    moving.append((record, new))
                }
            }
            collect(node)
            tree.forEachDescendantWithPresenters(of: node, collect)
        }
        for (record, new) in moving {
            relocate(record, to: new)  // Moves its watch interest too.
            fileSystemNotify(record.registration.id, .presentedItemDidMove(to: new))
        }
        for id in replaced where !moving.contains(where: { $0.0.registration.id == id }) {
            fileSystemNotify(id, .presentedItemDidChange)
        }
        if savedThroughTemporary {
            notifyEnclosingDirectories(of: to, appeared: false)
            return
        }
        let fromParent = from.parent ?? .root
        let toParent = to.parent ?? .root
        var common = 0
        while common < min(fromParent.depth, toParent.depth),
            fromParent.components[common] == toParent.components[common]
        {
            common += 1
        }
        forEachEnclosingPresenter(of: from) { presenter in
            fileSystemNotify(presenter, .presentedSubitemDidMove(from: from, to: to))
        }
        // Directories the item entered without leaving (the rest heard of the move): it appeared there.
        forEachEnclosingPresenter(of: to, below: common + 1) { presenter in
            notifySubitemChanged(presenter, at: to, appeared: true)
        }
    }

    /// A change made before a presenter's watch existed but after it registered: told to that presenter only (it
    /// may have been registered too late to hear the event), as the watcher reports changes.
    /// A coordinated write's own change is not one (its claim told whoever it had to tell, never its own presenter).
    private func changedBeforeWatch(_ path: ItemPath, presenter id: PresenterID) {
        guard let presenter = presenters[id], let own = presenter.registration.path else { return }
        if path == own {
            fileSystemNotify(id, .presentedItemDidChange)
        } else if path.parent == own {
            fileSystemNotify(id, .presentedSubitemDidChange(at: path))
        }
    }

    private func queueOverflowed() {
        watching.statistics.overflows += 1
        log(.warning, "file-system events were lost (queue overflow): every watched presenter is told of a change")
        // Every presenter whose item is a watched directory or directly inside one may have missed a change.
        var told: Set<PresenterID> = []
        for directory in watching.interest.keys.sorted() {
            guard let node = tree.existingNode(directory) else { continue }
            for id in presentersAtAndDirectlyBelow(node) where told.insert(id).inserted {
                fileSystemNotify(id, .presentedItemDidChange)
            }
        }
    }

    private func watchFailed(_ directory: ItemPath, reason: String) {
        guard watching.interest[directory] != nil else { return }  // No longer needed: nobody to tell.
        watching.statistics.watchFailures += 1
        let first = watching.failures.updateValue(reason, forKey: directory) == nil
        // Logged once per failure (a watcher that stopped tells every directory, and every later watch, as failed).
        guard first else { return }
        log(.warning, "a directory cannot be watched: \(reason)", ["item.path": "\(directory)"])
        guard let node = tree.existingNode(directory) else { return }
        for id in presentersAtAndDirectlyBelow(node) {
            guard let record = presenters[id] else { continue }
            effects.append(
                .watchUnavailable(id, client: record.registration.client, directory: directory, reason: reason)
            )
        }
    }

    /// A directory whose watch had failed is watched (``FileSystemEvent/watchAdded(_:)``): its presenters, and those
    /// of its entries, hear that it is, and that their item did change (what changed meanwhile went unseen). A
    /// failure after this is told again.
    private func watchAdded(_ directory: ItemPath) {
        guard watching.failures.removeValue(forKey: directory) != nil else { return }
        log(.notice, "a directory that could not be watched is watched", ["item.path": "\(directory)"])
        guard let node = tree.existingNode(directory) else { return }
        for id in presentersAtAndDirectlyBelow(node) {
            guard let record = presenters[id] else { continue }
            effects.append(.watchAvailable(id, client: record.registration.client, directory: directory))
            fileSystemNotify(id, .presentedItemDidChange)
        }
    }

    /// Tells a presenter that comes to need directories whose watch failed (registered, or its item moved from
    /// `previous`) that they are not watched, as those that needed them when they failed were told; a directory it
    /// needed before is not told twice.
    func tellWatchFailures(to id: PresenterID, previous: ItemPath? = nil) {
        guard !watching.failures.isEmpty, let record = presenters[id], let path = record.registration.path else {
            return
        }
        let before = [previous?.parent, previous].compactMap { $0 }
        for directory in [path.parent, path].compactMap({ $0 }) where !before.contains(directory) {
            guard let reason = watching.failures[directory] else { continue }
            effects.append(
                .watchUnavailable(id, client: record.registration.client, directory: directory, reason: reason)
            )
        }
    }

    // MARK: Who hears

    /// The presenters of a directory and of its direct entries, in a stable order (children by name).
    private func presentersAtAndDirectlyBelow(_ node: AccessNode) -> [PresenterID] {
        node.presenters
            + node.children.values.sorted { $0.name.lexicographicallyPrecedes($1.name) }.flatMap(\.presenters)
    }

    private func notifyPresenters(at path: ItemPath, _ kind: PresenterMessageKind) {
        guard let node = tree.existingNode(path) else { return }
        for id in node.presenters { fileSystemNotify(id, kind) }
    }

    /// Presenters of the directories enclosing `path` (root first); only those at a depth of at least `below`.
    private func forEachEnclosingPresenter(
        of path: ItemPath,
        below minimumDepth: Int = 0,
        _ body: (PresenterID) -> Void
    ) {
        var node: AccessNode? = tree.root
        for (depth, component) in path.components.enumerated() {
            guard let current = node else { return }
            if depth >= minimumDepth {
                for id in current.presenters { body(id) }
            }
            node = current.children[component]
        }
    }

    /// Subitem did change (and did appear) to the presenters of enclosing directories; one that does not declare
    /// them hears did change instead (``Arbiter/delivered(_:to:)``), once per window.
    private func notifyEnclosingDirectories(of path: ItemPath, appeared: Bool) {
        forEachEnclosingPresenter(of: path) { presenter in
            notifySubitemChanged(presenter, at: path, appeared: appeared)
        }
    }

    /// Subitem did change, and did appear for a new item; a presenter that hears both as did change hears it once.
    private func notifySubitemChanged(_ id: PresenterID, at path: ItemPath, appeared: Bool) {
        let change = PresenterMessageKind.presentedSubitemDidChange(at: path)
        fileSystemNotify(id, change)
        guard appeared, let presenter = presenters[id] else { return }
        let appear = PresenterMessageKind.presentedSubitemDidAppear(at: path)
        if delivered(appear, to: presenter) == .presentedItemDidChange
            && delivered(change, to: presenter) == .presentedItemDidChange
        {
            return
        }
        fileSystemNotify(id, appear)
    }

    /// Sends a notification caused by the file system, coalesced: the first of a kind goes at once and opens a
    /// window; more of the same in the window are held, and one is sent when the window closes. A subitem
    /// notification the presenter does not declare goes as did change, coalesced as one (``Arbiter/delivered(_:to:)``).
    func fileSystemNotify(_ id: PresenterID, _ kind: PresenterMessageKind) {
        guard let presenter = presenters[id], let kind = delivered(kind, to: presenter) else { return }
        let key = PresenterMessageKey(presenter: id, kind: kind)
        if watching.windows[key] != nil {
            watching.windows[key] = true
            watching.statistics.coalesced += 1
            return
        }
        watching.windows[key] = false
        watching.statistics.notificationsSent += 1
        sendNotification(kind, to: presenter, claim: nil)
    }

    // MARK: The window timer

    func startWatchTimerIfNeeded() {
        guard !watching.timerRunning, !watching.isIdle else { return }
        watching.timerRunning = true
        effects.append(.startTimer(.fileSystemWindow, after: configuration.coalescingWindow))
    }

    /// The window timer: notifications that came again in their window are sent once more (the last one after the
    /// burst) and their window stays open; quiet windows close; old echoes and new items expire.
    func watchWindowElapsed() {
        watching.timerRunning = false
        watching.tick += 1
        for (key, repeated) in watching.windows.sorted(by: {
            ($0.key.presenter, "\($0.key.kind)") < ($1.key.presenter, "\($1.key.kind)")
        }) {
            if repeated, let presenter = presenters[key.presenter] {
                watching.windows[key] = false
                watching.statistics.notificationsSent += 1
                sendNotification(key.kind, to: presenter, claim: nil)
            } else {
                watching.windows[key] = nil
            }
        }
        let tick = watching.tick
        if tick >= watching.echoScanDue { expireEchoes() }
        watching.fresh = watching.fresh.filter { $0.value.expiry > tick }
        startWatchTimerIfNeeded()
    }

    // MARK: Dump

    /// The watched directories with their presenters' counts, and the counters. Costs O(watched directories).
    public func watchingSnapshot() -> WatchingSnapshot {
        WatchingSnapshot(
            directories: watching.interest.sorted { $0.key < $1.key }.map {
                WatchingSnapshot.Directory(path: $0.key, presenters: $0.value, failure: watching.failures[$0.key])
            },
            statistics: watching.statistics,
            openWindows: watching.windows.count,
            echoes: watching.echoes.count
        )
    }
}
