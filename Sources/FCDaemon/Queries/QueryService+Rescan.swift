import FCCore
import FCSystem

extension QueryService {
    /// Reads the whole tree again and records the difference (after an overflow of the kernel's queue); returns
    /// the folders that are new, to be watched. On the queue, with the tree it is given (no other state).
    func rescan(_ tree: QueryTree, into delta: inout QueryTree.Delta) -> [ItemPath] {
        var found: Set<ItemPath> = []
        var fresh: [ItemPath] = []
        var pending = [tree.root]
        while let folder = pending.popLast() {
            try? ItemMetadata.forEachEntry(ofDirectoryBytes: folder.bytes) { name, metadata in
                let path = folder.appending(Array(name))
                let wasFolder = tree.metadata(of: path)?.isDirectory == true
                found.insert(path)
                tree.set(path, metadata, into: &delta)
                if metadata.isDirectory {
                    pending.append(path)
                    if !wasFolder { fresh.append(path) }
                }
            }
        }
        for (path, _) in tree.items where !found.contains(path) { tree.set(path, nil, into: &delta) }
        return fresh
    }
}
