import FCCore
import FCSystem

/// One folder tree that live queries watch (issue 44; docs/SEMANTICS.md §18): its items as last read, kept by folder, so
/// that an event costs what it touches (a removed folder, its subtree) and a listing hashes names, not paths.
///
/// - Important: Not thread-safe: confined to the ``QueryService``'s queue.
final class QueryTree {
    let root: ItemPath
    /// A name in a folder: its bytes, hashed as one buffer (``ByteKey``).
    typealias Name = ByteKey
    /// The entries of one folder of the tree, by name. A class, so that a listing finds its folder once and adds
    /// each entry by its name alone: no path hashed per item (the flat table of paths and the index of each
    /// folder's entries hashed each path three times: half of a gathering's own work, Benchmarks/README.md).
    final class Folder {
        var entries: [Name: ItemMetadata] = [:]
    }
    /// Every item under the root (the root itself not included), as last read, by folder: the root's and each
    /// folder's entries. A folder's node goes with the folder (an emptied folder keeps its node).
    private var folders: [ItemPath: Folder] = [:]
    /// How many items the tree holds.
    private(set) var count = 0
    /// How many folders have a node (the root and the folders listed or holding items).
    var folderNodes: Int { folders.count }
    /// The queries that use the tree.
    var queries: Set<QueryService.QueryKey> = []
    /// The gathering is done: updates go out from now on.
    var gathered = false
    /// The most items one tree keeps; beyond it new items are left out (and logged once).
    let maximumItems: Int
    private(set) var overLimit = false
    /// How many of the items are folders.
    private(set) var directoryCount = 0
    /// The folders this tree asked the daemon to watch and has not let go: each asked once, let go once, so that the
    /// host's count of the tree's watches is exact whatever order listings, events and rescans come in.
    private(set) var watched: Set<ItemPath> = []
    /// The folders of ``watched`` whose watch failed, with why (`FileSystemEvent.watchFailed`): changes in them do not
    /// reach the tree's queries, which are told when the first fails (``watchFailed(_:reason:)``). A folder leaves it
    /// when it is let go, and when its watch is added later (``watchesTook(_:)``).
    private(set) var unwatchable: [ItemPath: String] = [:]
    /// An overflow of the kernel's queue came while the tree was being gathered: it is read again once gathered.
    var rescanWhenGathered = false
    /// What the gathering read or was told since its last piece went out (``Delta/Recording/piece``): sent when it
    /// holds ``QueryService/itemsPerMessage`` items, when a query joins, and at the end of the gathering, so that the
    /// frames of a gathering are as many as its items need, whatever number of folders hold them.
    var piece = Delta(.piece)
    /// The listings of the gathering asked and not yet read: the gathering ends when none is left (a count, so that
    /// each listing's check is O(1), whatever number of folders a level holds).
    var gatheringListings = 0

    init(root: ItemPath, maximumItems: Int) {
        self.root = root
        self.maximumItems = maximumItems
    }

    /// The item at `path`, as last read.
    func metadata(of path: ItemPath) -> ItemMetadata? {
        guard let parent = path.parent, let name = path.lastComponent else { return nil }
        return folders[parent]?.entries[Name(name)]
    }

    /// Every item, with its path: O(items).
    var items: [(ItemPath, ItemMetadata)] {
        var all: [(ItemPath, ItemMetadata)] = []
        all.reserveCapacity(count)
        for (folder, node) in folders {
            for (name, metadata) in node.entries { all.append((folder.appending(name.bytes), metadata)) }
        }
        return all
    }

    /// The node of `folder`, made if it has none: what a listing of the folder adds to.
    func folder(_ folder: ItemPath) -> Folder {
        if let node = folders[folder] { return node }
        let node = Folder()
        folders[folder] = node
        return node
    }

    /// What one batch of events, or one piece of a gathering, did to the tree, for the queries.
    struct Delta {
        /// How items are recorded.
        enum Recording {
            /// Each item once (an item added and removed within the batch is neither; added and changed is added),
            /// in dictionaries: a batch of events, told as one update.
            case changes
            /// Each item set, in order, in ``Delta/listed`` (no dictionary per item); removals in ``Delta/removed``:
            /// a piece of a gathering, which the client applies in that order (what is listed, then what is removed).
            case piece
        }

        let recording: Recording
        var added: [ItemPath: ItemMetadata] = [:]
        var changed: [ItemPath: ItemMetadata] = [:]
        var removed: Set<ItemPath> = []
        /// ``Recording/piece``: every item set, in order.
        var listed: [(ItemPath, ItemMetadata)] = []
        /// Folders to watch and to stop watching.
        var watch: [ItemPath] = []
        var unwatch: [ItemPath] = []

        init(_ recording: Recording = .changes) { self.recording = recording }

        var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty && listed.isEmpty }

        /// The items this delta tells: a piece's as it recorded them, a batch's added and changed ones.
        var told: [(ItemPath, ItemMetadata)] {
            recording == .piece
                ? listed
                : added.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
                    + changed.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        }
    }

    /// Sets `path` to `metadata` (`nil`: it is gone), recording the change in `delta`.
    func set(_ path: ItemPath, _ metadata: ItemMetadata?, into delta: inout Delta) {
        guard path != root, path.isDescendant(of: root), let parent = path.parent, let name = path.lastComponent else {
            return
        }
        // An item whose folder is not in the tree (not listed yet, or gone) is not added: its folder's listing
        // reads it, and nothing would remove it with a folder that is not there.
        guard metadata == nil || parent == root || self.metadata(of: parent)?.isDirectory == true else { return }
        set(Name(name), in: metadata == nil ? folders[parent] : folder(parent), at: path, metadata, into: &delta)
    }

    /// Sets the entry `name` of `node` (the folder of `path`, which is under the root) to `metadata`: a listing's
    /// way, which finds its folder's node once.
    func set(_ name: Name, in node: Folder?, at path: ItemPath, _ metadata: ItemMetadata?, into delta: inout Delta) {
        guard let node else { return }
        let before = node.entries[name]
        guard let metadata else {
            guard before != nil else { return }
            remove(name, in: node, at: path, into: &delta)
            return
        }
        if let before {
            guard before != metadata else { return }
            if before.isDirectory != metadata.isDirectory {
                remove(name, in: node, at: path, into: &delta)
                insert(name, in: node, at: path, metadata, into: &delta)
            } else {
                node.entries[name] = metadata
                switch delta.recording {
                case .piece: delta.listed.append((path, metadata))
                case .changes:
                    if delta.added[path] != nil { delta.added[path] = metadata } else { delta.changed[path] = metadata }
                }
            }
        } else {
            insert(name, in: node, at: path, metadata, into: &delta)
        }
    }

    private func insert(
        _ name: Name,
        in node: Folder,
        at path: ItemPath,
        _ metadata: ItemMetadata,
        into delta: inout Delta
    ) {
        guard count < maximumItems else {
            overLimit = true
            return
        }
        node.entries[name] = metadata
        count += 1
        switch delta.recording {
        case .piece:
            // Removed earlier in the piece, then made again: told as listed only (the client removes after).
            if !delta.removed.isEmpty { delta.removed.remove(path) }
            delta.listed.append((path, metadata))
        case .changes:
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

    /// Removes the entry `name` of `node` (at `path`) and, for a folder, everything in it.
    private func remove(_ name: Name, in node: Folder, at path: ItemPath, into delta: inout Delta) {
        guard let metadata = node.entries.removeValue(forKey: name) else { return }
        count -= 1
        switch delta.recording {
        case .piece:
            delta.removed.insert(path)
        case .changes:
            if delta.added.removeValue(forKey: path) == nil {
                delta.changed[path] = nil
                delta.removed.insert(path)
            }
        }
        if metadata.isDirectory {
            directoryCount -= 1
            delta.unwatch.append(path)
        }
        // What was under it (a folder's entries; a file's node only if events named paths under it).
        guard let inside = folders.removeValue(forKey: path) else { return }
        for name in inside.entries.keys { remove(name, in: inside, at: path.appending(name.bytes), into: &delta) }
    }

    /// The folders of `folders` not watched for this tree yet, now counted as watched.
    func startWatching(_ folders: [ItemPath]) -> [ItemPath] { folders.filter { watched.insert($0).inserted } }

    /// The folders of `folders` watched for this tree, now let go.
    func stopWatching(_ folders: [ItemPath]) -> [ItemPath] {
        folders.filter {
            guard watched.remove($0) != nil else { return false }
            unwatchable[$0] = nil
            return true
        }
    }

    /// Every folder watched for this tree, let go (the tree is dropped).
    func stopWatchingAll() -> [ItemPath] {
        defer {
            watched = []
            unwatchable = [:]
        }
        return watched.sorted()
    }

    /// Records that the watch of `folder` failed. Whether the tree's queries are to be told: it is one of the tree's
    /// folders, and no other of them is recorded (they were told of that one).
    func watchFailed(_ folder: ItemPath, reason: String) -> Bool {
        guard watched.contains(folder), unwatchable[folder] == nil else { return false }
        unwatchable[folder] = reason
        return unwatchable.count == 1
    }

    /// The watches of `folders` took (a folder whose watch failed was watched later: after an overflow, the watcher
    /// tries every wanted folder again, and a cap may have room by then): they are live again. Whether one of them
    /// was a folder of this tree not watched.
    func watchesTook(_ folders: [ItemPath]) -> Bool {
        guard !unwatchable.isEmpty else { return false }
        var took = false
        for folder in folders where unwatchable.removeValue(forKey: folder) != nil { took = true }
        return took
    }

    /// Whether every folder of the tree is watched (none recorded by ``watchFailed(_:reason:)`` is left).
    var allWatched: Bool { unwatchable.isEmpty }

    /// What a query that joins the tree is told of its folders not watched: the first by path, and why. O(folders
    /// not watched), once per joining query.
    var firstUnwatchable: (folder: ItemPath, reason: String)? {
        unwatchable.min { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Whether `path` is in the tree (the root, or under it).
    func holds(_ path: ItemPath) -> Bool { path.isEqualOrDescendant(of: root) }
}
