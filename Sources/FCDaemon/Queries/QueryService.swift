import Dispatch
import FCCore
import FCSystem
import FCToolkit
import Logging
import Synchronization

/// The daemon's live queries of folder trees (issue 44; docs/SEMANTICS.md §18, docs/PROTOCOL.md §13): each tree is
/// gathered and watched once, whatever number of queries of whichever clients use it, and each batch of the watcher's
/// events becomes one update per query.
///
/// Runs on its own serial queue, off the event loop: gathering a tree and reading the items an event names are file
/// system work. What it asks of the daemon (frames for clients, watches to add or drop) goes to `output`, which the
/// host runs on its loop, in order. A small batch of the watcher's events is read on the watcher's thread when the
/// queue is idle (``fileSystemChanged(_:)``): one thread hop less on the way of a change to a query.
///
/// - Important: Thread-safe: every method hands a job to ``queue``; the trees and queries are touched only in its
///   jobs, which never overlap (``IdleInlineQueue``), on its thread or, for a small batch of events, the watcher's.
// @unchecked: `trees`, `queries` and `ownQueries` are confined to `queue`'s jobs.
final class QueryService: @unchecked Sendable {
    /// A query: its client and the client's id for it.
    struct QueryKey: Hashable, Comparable, Sendable {
        let client: ClientID
        let local: UInt64
        static func < (a: QueryKey, b: QueryKey) -> Bool { (a.client, a.local) < (b.client, b.local) }
    }

    let queue = IdleInlineQueue(label: "filecoordd.queries")
    /// The trees by root. Set only in this file; read by the service's extensions, on the queue.
    private(set) var trees: [ItemPath: QueryTree] = [:] {
        didSet {
            holdsTrees.store(!trees.isEmpty, ordering: .releasing)
            if trees.isEmpty { holdsUnwatchable.store(false, ordering: .releasing) }
        }
    }
    /// `!trees.isEmpty`, stored on the queue whenever `trees` changes, read from any thread: the watcher's thread
    /// hands over no events while no tree holds any (``fileSystemChanged(_:)``).
    let holdsTrees = Atomic<Bool>(false)
    /// Whether a tree may hold a folder whose watch failed: the watcher's thread hands over the watches it adds only
    /// while it is set (``watchesAdded(_:)``). Set on the calling thread before a batch that tells a failed watch is
    /// queued (so that the watches of a later report are not dropped while that batch waits its turn), and on the
    /// queue when a tree records one; cleared only when no tree is left (a clearing job could otherwise overtake a
    /// setting that came after it was queued).
    let holdsUnwatchable = Atomic<Bool>(false)
    private(set) var queries: [QueryKey: (scopes: [ItemPath], waiting: Set<ItemPath>)] = [:]
    private var ownQueries: [ClientID: Set<UInt64>] = [:]
    /// Folders to list once their watches are in place: by barrier token, with their tree and whether what they
    /// hold is told as changes (a folder that appeared) or is part of the gathering.
    private var listings: [UInt64: (tree: QueryTree, folders: [ItemPath], asChanges: Bool)] = [:]
    private var lastToken: UInt64 = 0
    /// Hands what the service asks to the host (which runs it on its loop, in order).
    let output: @Sendable ([Output]) -> Void
    let logger: Logger
    /// The most items sent in one `QueryItems` (``QueryMessageRuns``).
    static let itemsPerMessage = QueryMessageRuns.itemsPerMessage
    let maximumQueriesPerClient: Int
    let maximumItemsPerTree: Int
    /// About the most bytes of one `QueryItems` (``QueryMessageRuns/bytesPerMessage(maximumFrameSize:)``).
    let bytesPerMessage: Int

    init(
        maximumQueriesPerClient: Int = 64,
        maximumItemsPerTree: Int = 2_000_000,
        bytesPerMessage: Int = QueryMessageRuns.bytesPerMessage,
        logger: Logger,
        output: @escaping @Sendable ([Output]) -> Void
    ) {
        self.maximumQueriesPerClient = maximumQueriesPerClient
        self.maximumItemsPerTree = maximumItemsPerTree
        self.bytesPerMessage = bytesPerMessage
        self.logger = logger
        self.output = output
    }

    // MARK: Queries

    /// Starts a query of the trees under `scopes` (the host checked the client's limits and ids).
    func start(_ key: QueryKey, scopes: [ItemPath]) {
        queue.async { self.startOnQueue(key, scopes: Array(Set(scopes)).sorted()) }
    }

    func stop(_ key: QueryKey) {
        queue.async { self.stopOnQueue(key) }
    }

    /// A client left: its queries stop.
    func clientLeft(_ client: ClientID) {
        queue.async {
            for local in self.ownQueries[client] ?? [] { self.stopOnQueue(QueryKey(client: client, local: local)) }
            self.ownQueries[client] = nil
        }
    }

    private func startOnQueue(_ key: QueryKey, scopes: [ItemPath]) {
        guard queries[key] == nil else { return }
        queries[key] = (scopes, Set(scopes))
        ownQueries[key.client, default: []].insert(key.local)
        var outputs: [Output] = []
        for root in scopes {
            if let tree = trees[root] {
                // What the tree's queries have not been sent yet goes to them first: the new one gets the tree as
                // it is now.
                outputs += flushPiece(of: tree)
                tree.queries.insert(key)
                // A tree gathered is handed over whole; one being gathered, what it holds so far, and then its
                // pieces as they are read, with its other queries'.
                outputs += pieces(tree.items, removed: [], of: tree, to: [key], last: tree.gathered)
                if let (folder, reason) = tree.firstUnwatchable {
                    outputs += watchUnavailable(folder, reason: reason, of: tree, to: [key])
                }
            } else {
                let tree = QueryTree(root: root, maximumItems: maximumItemsPerTree)
                tree.queries.insert(key)
                trees[root] = tree
                outputs += gather(tree)
            }
        }
        if scopes.isEmpty { outputs.append(.items(key, added: [], changed: [], removed: [], gathered: true, count: 0)) }
        output(outputs)
        publish()
    }

    private func stopOnQueue(_ key: QueryKey) {
        guard let query = queries.removeValue(forKey: key) else { return }
        ownQueries[key.client]?.remove(key.local)
        var outputs: [Output] = []
        for root in query.scopes {
            guard let tree = trees[root] else { continue }
            tree.queries.remove(key)
            guard tree.queries.isEmpty else { continue }
            trees[root] = nil
            outputs += tree.stopWatchingAll().map { .unwatch($0) }
        }
        output(outputs)
        publish()
    }

    // MARK: Gathering

    /// Starts gathering `tree`: its root is watched, then listed (``barriersPassed(_:)``), level by level.
    private func gather(_ tree: QueryTree) -> [Output] {
        list([tree.root], of: tree, asChanges: false)
    }

    /// Watches `folders` of `tree`, and lists them once the watches are in place: a folder is listed only when its
    /// changes are seen, so that nothing made in it between its listing and its watch is missed.
    ///
    /// A few folders per barrier: the first are listed while the watcher still adds the watches of the next (a
    /// watch of a folder of 1,000 files costs the kernel some 0.2 ms; one barrier after the 100 folders of a level
    /// held the level's listing back by 20 ms).
    func list(_ folders: [ItemPath], of tree: QueryTree, asChanges: Bool) -> [Output] {
        // A folder listed again (it appeared in an event and in its parent's listing, or a rescan found it) is
        // watched once for the tree; the watcher is asked again all the same, for a folder made anew. Named twice
        // (made, deleted and made again within one batch), it is asked for once: two `watch`es and one `unwatch`
        // left a watch the host never let go.
        var named: Set<ItemPath> = []
        let folders = folders.filter { named.insert($0).inserted }
        let fresh = Set(tree.startWatching(folders))
        var outputs: [Output] = []
        var start = 0
        while start < folders.count {
            let group = Array(folders[start..<min(start + Self.foldersPerBarrier, folders.count)])
            lastToken += 1
            listings[lastToken] = (tree, group, asChanges)
            if !asChanges { tree.gatheringListings += 1 }
            outputs += group.map { fresh.contains($0) ? .watch($0) : .rewatch($0) }
            outputs.append(.barrier(lastToken))
            start += group.count
        }
        return outputs
    }

    /// The most folders watched before one barrier (``list(_:of:asChanges:)``).
    static let foldersPerBarrier = 8

    /// The watches asked before these tokens are in place: their folders are listed.
    func barriersPassed(_ tokens: [UInt64]) {
        queue.async {
            for token in tokens {
                // A listing of a tree dropped since (its queries stopped, maybe a new tree of the same root made
                // since) is not read into any tree.
                guard let listing = self.listings.removeValue(forKey: token),
                    let tree = self.trees[listing.tree.root], tree === listing.tree
                else { continue }
                if !listing.asChanges { tree.gatheringListings -= 1 }
                // Each listing's outputs go before the next listing sends its first piece: in order.
                self.output(self.listed(listing.folders, of: tree, asChanges: listing.asChanges))
            }
            self.publish()
        }
    }

    /// Lists `folders` into `tree`; their folders are watched and listed next. What a gathering reads goes to its
    /// queries in pieces as it is read (sent from here, before what this returns), so that the loop and the client
    /// take one piece while the next is listed; the end of a gathering that has no more to list is told to its
    /// queries. What folders that appeared hold is told as changes.
    private func listed(_ folders: [ItemPath], of tree: QueryTree, asChanges: Bool) -> [Output] {
        // A gathering adds to the tree's piece (taken out while it is filled, so that the tree is not accessed
        // through two paths at once), which goes out when full; what folders that appeared hold is one update.
        var delta = asChanges ? QueryTree.Delta() : tree.piece
        if !asChanges { tree.piece = QueryTree.Delta(.piece) }
        var next: [ItemPath] = []
        // A folder gone from the tree since it was asked for (its deletion came first) is not listed: its node
        // would be made again, empty, and kept for good. One made anew has an event, and a listing, of its own.
        for folder in folders where folder == tree.root || tree.metadata(of: folder)?.isDirectory == true {
            let node = tree.folder(folder)
            try? ItemMetadata.forEachEntry(ofDirectoryBytes: folder.bytes) { name, metadata in
                let name = QueryTree.Name(Array(name))
                let path = folder.appending(name.bytes)
                tree.set(name, in: node, at: path, metadata, into: &delta)
                if metadata.isDirectory, node.entries[name] != nil { next.append(path) }
                if !asChanges, delta.listed.count + delta.removed.count >= Self.itemsPerMessage {
                    output(pieces(delta, of: tree))
                    delta = QueryTree.Delta(.piece)
                }
            }
        }
        // Folders gone are let go before those that appeared are watched (a folder that went and came back is
        // watched anew, not let go after its new watch was asked).
        var outputs = watchOutputs(delta.unwatch, of: tree)
        delta.unwatch = []
        delta.watch = []
        outputs += next.isEmpty ? [] : list(next, of: tree, asChanges: asChanges)
        if asChanges {
            outputs += updates(delta, of: tree)
            return outputs
        }
        tree.piece = delta
        if next.isEmpty && tree.gatheringListings == 0 {
            outputs += flushPiece(of: tree)
            if tree.rescanWhenGathered {
                // An overflow during the gathering: what the lost events told is read again now, before the
                // gathering ends (its difference is part of the gathering).
                tree.rescanWhenGathered = false
                var difference = QueryTree.Delta()
                let fresh = rescan(tree, into: &difference)
                outputs += watchOutputs(difference.unwatch, of: tree)
                outputs += pieces(difference, of: tree)
                if !fresh.isEmpty { return outputs + list(fresh, of: tree, asChanges: false) }
            }
            tree.gathered = true
            if tree.overLimit {
                logger.warning(
                    "a live query's tree holds more items than a query keeps; the rest are left out",
                    metadata: ["query.root": "\(tree.root)", "query.items": "\(tree.maximumItems)"]
                )
            }
            outputs += pieces([], removed: [], of: tree, to: tree.queries.sorted(), last: true)
        }
        return outputs
    }

    /// The tree's piece for its queries (``QueryTree/piece``), which is emptied.
    func flushPiece(of tree: QueryTree) -> [Output] {
        guard !tree.piece.isEmpty else { return [] }
        defer { tree.piece = QueryTree.Delta(.piece) }
        return pieces(tree.piece, of: tree)
    }

    /// `delta` as a piece of `tree`'s gathering for each of its queries.
    private func pieces(_ delta: QueryTree.Delta, of tree: QueryTree) -> [Output] {
        pieces(delta.told, removed: delta.removed.sorted(), of: tree, to: tree.queries.sorted(), last: false)
    }

    /// Items of `tree`'s gathering for those of `keys` that wait for it, in messages of ``QueryMessageRuns``'s
    /// size, `removed` after the items (the client removes after it adds). `last`: the tree is gathered; a query that
    /// waits for no other tree is told its gathering ended, in its last message.
    private func pieces(
        _ items: [(ItemPath, ItemMetadata)],
        removed: [ItemPath],
        of tree: QueryTree,
        to keys: [QueryKey],
        last: Bool
    ) -> [Output] {
        let packed = QueryMessageRuns.pack(added: items, removed: removed, bytesPerMessage: bytesPerMessage)
        var outputs: [Output] = []
        for key in keys {
            guard var query = queries[key], query.waiting.contains(tree.root) else { continue }
            if last {
                query.waiting.remove(tree.root)
                queries[key] = query
            }
            let ends = last && query.waiting.isEmpty
            let messages = packed.isEmpty && ends ? [QueryMessageRuns.Message()] : packed
            for (index, message) in messages.enumerated() {
                outputs.append(
                    .items(
                        key,
                        added: message.added,
                        changed: [],
                        removed: message.removed,
                        gathered: ends && index == messages.count - 1,
                        count: tree.count
                    )
                )
            }
        }
        return outputs
    }

    /// One update per query of `tree` for `delta`.
    func updates(_ delta: QueryTree.Delta, of tree: QueryTree) -> [Output] {
        var outputs: [Output] = []
        guard !delta.isEmpty else { return outputs }
        // One message unless it would be too big (see `QueryMessageRuns`): then the client receives them one after
        // the other, and tells them in its batch.
        let messages = QueryMessageRuns.pack(
            added: delta.added.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
            changed: delta.changed.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
            removed: delta.removed.sorted(),
            bytesPerMessage: bytesPerMessage
        )
        for key in tree.queries.sorted() {
            for message in messages {
                outputs.append(
                    .items(
                        key,
                        added: message.added,
                        changed: message.changed,
                        removed: message.removed,
                        gathered: false,
                        count: 0
                    )
                )
            }
        }
        return outputs
    }

    /// How many folder nodes the tree of `root` keeps (on the queue; for the tests).
    func folderNodes(of root: ItemPath) -> Int? { queue.sync { trees[root]?.folderNodes } }

    /// The trees as the queue last left them, for the dump: read from any thread without waiting for the queue
    /// (which may be gathering a big tree).
    var summaries: [TreeSummary] { published.withLock { $0 } }
    private let published = Locked<[TreeSummary]>([])

    /// Publishes the summaries (on the queue, after each change): O(trees).
    func publish() {
        let summaries = trees.values.sorted { $0.root < $1.root }.map {
            TreeSummary(
                root: $0.root,
                queries: $0.queries.sorted(),
                items: $0.count,
                directories: $0.directoryCount + 1,
                unwatched: $0.unwatchable.count,
                gathered: $0.gathered
            )
        }
        published.withLock { $0 = summaries }
    }
}
