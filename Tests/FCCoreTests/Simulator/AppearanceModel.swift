import FCCore

/// Invariant 13 (stop 69; docs/SEMANTICS.md §3): a new file's first change is taken as part of its appearance (not
/// told again) only when the file is as its appearance was read: the same file, of the same size, and changed no later
/// unless empty. The model keeps the state each appearance was read with (a creation, or a move in from an unwatched
/// place), until the item's first change, and says of a batch of one change whether the arbiter may take it so.
struct AppearanceModel {
    /// An item that appeared and has not changed since: the state its appearance was read with (`nil`: not read, or
    /// an appearance the arbiter may not have taken, which leaves the rule's outcome open).
    private var appeared: [ItemPath: ItemStamp?] = [:]
    /// First changes whose two states were known: the invariant's cases.
    private(set) var checked = 0

    /// Whether the arbiter may take a change of `path`, the only event of a batch read with `observed`, as part of
    /// the item's appearance.
    mutating func mayTakeAsAppearance(_ path: ItemPath, observed: [ItemPath: ItemStamp]) -> Bool {
        guard case let stamp?? = appeared[path], let now = observed[path] else { return true }
        checked += 1
        switch (stamp, now) {
        case (.present(let inode, let size, let time), .present(let nowInode, let nowSize, let nowTime)):
            return inode == nowInode && size == nowSize && (size == 0 || time == nowTime)
        default:
            return stamp == now
        }
    }

    /// Follows a batch the arbiter was sent. `unknown`: items whose events may be taken as echoes (their appearance
    /// then may not count).
    mutating func read(
        _ events: [FileSystemEvent],
        observed: [ItemPath: ItemStamp],
        unknown: (ItemPath) -> Bool
    ) {
        var movingOut: Set<UInt32> = []
        for event in events {
            switch event {
            case .created(let path, _):
                appeared[path] = .some(unknown(path) ? nil : observed[path])
            case .movedFrom(let path, let cookie):
                movingOut.insert(cookie)
                appeared[path] = nil
            case .movedTo(let path, let cookie, _):
                // A rename within the watched folders leaves the arbiter's record of the name as it was.
                guard !movingOut.contains(cookie) else { continue }
                appeared[path] = .some(unknown(path) ? nil : observed[path])
            case .changed(let path), .deleted(let path):
                appeared[path] = nil
            case .changedBeforeWatch, .overflow, .watchFailed, .watchAdded:
                continue
            }
        }
    }
}
