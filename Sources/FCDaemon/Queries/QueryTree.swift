import FCCore
import FCSystem

/// One folder tree that live queries watch (issue 44; docs/SEMANTICS.md §18): its items as last read, with an index
/// of each folder's entries, so that an event costs what it touches (a removed folder, its subtree).
///
/// - Important: Not thread-safe: confined to the ``QueryService``'s queue.
final class QueryTree {
    let root: ItemPath
    /// Every item under the root (the root itself not included), as last read.
    private(set) var items: [ItemPath: ItemMetadata] = [:]
    /// Each folder's entries that are in ``items``.
    private var entries: [ItemPath: Set<ItemPath>] = [:]
    /// The queries that use the tree.
    var queries: Set<QueryService.QueryKey> = []
    /// The gathering is done: updates go out from now on.
    var gathered = false
    /// The most items one tree keeps; beyond it new items are left out (and logged once).
    let maximumItems: Int
    private(set) var overLimit = false
    /// How many of ``items`` are folders.
    private(set) var directoryCount = 0
    /// The folders this tree asked the daemon to watch and has not let go: each asked once, let go once, so that the
    /// host's count of the tree's watches is exact whatever order listings, events and rescans come in.
    private(set) var watched: Set<ItemPath> = []
    /// An overflow of the kernel's queue came while the tree was being gathered: it is read again once gathered.
    var rescanWhenGathered = false

    init(root: ItemPath, maximumItems: Int) {
        self.root = root
        self.maximumItems = maximumItems
    }

    /// The folders of the tree: the root and every folder in it.
    var directories: [ItemPath] { [root] + items.filter(\.value.isDirectory).map(\.key) }

    /// What one batch of events did to the tree, for the queries: each item once (an item added and removed within
    /// the batch is neither; added and changed is added).
    struct Delta {
        /// `false`: only the folders to watch and let go are recorded (a gathering, handed over whole).
        var recordsItems = true
        var added: [ItemPath: ItemMetadata] = [:]
        var changed: [ItemPath: ItemMetadata] = [:]
        var removed: Set<ItemPath> = []
        /// Folders to watch and to stop watching.
        var watch: [ItemPath] = []
        var unwatch: [ItemPath] = []

        var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }
    }

    /// Sets `path` to `metadata` (`nil`: it is gone), recording the change in `delta`.
    func set(_ path: ItemPath, _ metadata: ItemMetadata?, into delta: inout Delta) {
        guard path != root, path.isDescendant(of: root) else { return }
        let before = items[path]
        guard let metadata else {
            guard before != nil else { return }
            remove(path, into: &delta)
            return
        }
        if let before {
            guard before != metadata else { return }
            if before.isDirectory != metadata.isDirectory {
                remove(path, into: &delta)
                insert(path, metadata, into: &delta)
            } else {
                items[path] = metadata
                guard delta.recordsItems else { return }
                if delta.added[path] != nil { delta.added[path] = metadata } else { delta.changed[path] = metadata }
            }
        } else {
            insert(path, metadata, into: &delta)
        }
    }

    private func insert(_ path: ItemPath, _ metadata: ItemMetadata, into delta: inout Delta) {
        guard items.count < maximumItems else {
            overLimit = true
            return
        }
        items[path] = metadata
        if let parent = path.parent { entries[parent, default: []].insert(path) }
        if delta.recordsItems {
            if delta.removed.remove(path) != nil {
                delta.changed[path] = metadata
            } else {
                delta.added[path] = metadata
            }
        }
        if metadata.isDirectory {
            directoryCount += 1
            delta.watch.append(path)
        }
    }

    /// Removes `path` and, for a folder, everything in it.
    private func remove(_ path: ItemPath, into delta: inout Delta) {
        guard let metadata = items.removeValue(forKey: path) else { return }
        if let parent = path.parent {
            entries[parent]?.remove(path)
            if entries[parent]?.isEmpty == true { entries[parent] = nil }
        }
        if delta.recordsItems, delta.added.removeValue(forKey: path) == nil {
            delta.changed[path] = nil
            delta.removed.insert(path)
        }
        if metadata.isDirectory {
            directoryCount -= 1
            delta.unwatch.append(path)
            for entry in entries.removeValue(forKey: path) ?? [] { remove(entry, into: &delta) }
        }
    }

    /// The folders of `folders` not watched for this tree yet, now counted as watched.
    func startWatching(_ folders: [ItemPath]) -> [ItemPath] { folders.filter { watched.insert($0).inserted } }

    /// The folders of `folders` watched for this tree, now let go.
    func stopWatching(_ folders: [ItemPath]) -> [ItemPath] { folders.filter { watched.remove($0) != nil } }

    /// Every folder watched for this tree, let go (the tree is dropped).
    func stopWatchingAll() -> [ItemPath] {
        defer { watched = [] }
        return watched.sorted()
    }

    /// Whether `path` is in the tree (the root, or under it).
    func holds(_ path: ItemPath) -> Bool { path.isEqualOrDescendant(of: root) }
}
