import FCCore
import FCSystem
import SystemPackage

extension QueryService {
    /// Reads the whole tree again and records the difference (after an overflow of the kernel's queue); returns
    /// the folders that are new, to be watched. On the queue, with the tree it is given (no other state).
    ///
    /// A folder that cannot be listed (`EACCES`; not `ENOENT` or `ENOTDIR`: gone) keeps what the tree holds under it,
    /// and so does an entry that is listed but cannot be read (a folder with read permission and no search
    /// permission), as an item that cannot be read does (``QueryService/fileSystemChanged(_:)``).
    func rescan(_ tree: QueryTree, into delta: inout QueryTree.Delta) -> [ItemPath] {
        var found: Set<ItemPath> = []
        var unreadable: Set<ItemPath> = []
        var fresh: [ItemPath] = []
        var pending = [tree.root]
        while let folder = pending.popLast() {
            do {
                try ItemMetadata.forEachEntry(ofDirectoryBytes: folder.bytes) { name in
                    // Listed but not read (`EACCES`: the folder cannot be searched): kept as it was, with what it holds.
                    let path = folder.appending(Array(name))
                    found.insert(path)
                    if tree.metadata(of: path)?.isDirectory == true { unreadable.insert(path) }
                } _: { name, metadata in
                    let path = folder.appending(Array(name))
                    let wasFolder = tree.metadata(of: path)?.isDirectory == true
                    found.insert(path)
                    tree.set(path, metadata, into: &delta)
                    if metadata.isDirectory {
                        pending.append(path)
                        if !wasFolder { fresh.append(path) }
                    }
                }
            } catch {
                // Gone (`ENOENT`, `ENOTDIR`): what it held is removed below. Otherwise kept.
                if error != .noSuchFileOrDirectory && error != .notDirectory { unreadable.insert(folder) }
            }
        }
        for (path, _) in tree.items where !found.contains(path) {
            // O(depth) per item not found: kept when a folder above it could not be listed.
            var above = path.parent
            var kept = false
            while !unreadable.isEmpty, let folder = above, folder.isEqualOrDescendant(of: tree.root), !kept {
                kept = unreadable.contains(folder)
                above = folder.parent
            }
            if !kept { tree.set(path, nil, into: &delta) }
        }
        return fresh
    }
}
