// A new item's record in the watching rules (Arbiter+Watching.swift): what tells its first change from its
// appearance (docs/SEMANTICS.md §3).

/// An item created recently (``WatchState/fresh``).
struct FreshItem {
    /// The tick after which it is no longer new.
    var expiry: Int
    /// Its state when its creation was read (``ArbiterEvent/fileSystemChanged(_:observed:readAt:drainedAt:)``);
    /// `nil` when the watcher could not read it.
    var stamp: ItemStamp?
    /// `true` once its first change came.
    var written = false

    /// Whether `now`, its state at its first change, shows the contents its creation was read with: the same file,
    /// of the same size, and, unless empty, changed no later (an empty file's times may differ: `touch` sets them
    /// after its creation, and that is one appearance; a file sized first and filled after, as downloaders do, is
    /// not). `true` when either state is unknown, as before stop 69.
    func hasContents(of now: ItemStamp?) -> Bool {
        guard let stamp, let now else { return true }
        switch (stamp, now) {
        case (.present(let inode, let size, let time), .present(let nowInode, let nowSize, let nowTime)):
            return inode == nowInode && size == nowSize && (size == 0 || time == nowTime)
        default:
            return stamp == now
        }
    }
}
