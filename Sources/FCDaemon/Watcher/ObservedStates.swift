import FCCore
import FCSystem

/// The state of the items a batch of file-system events names, read right after the batch (issue 37): the arbiter
/// compares it with what a coordinated write left behind, to tell the write's echoes from a change made after it.
///
/// - Important: Thread-safe (no state); called on the watcher's thread.
enum ObservedStates {
    /// One `lstat` per item the events name and one per directory they are in (its change time moves when an entry
    /// comes, goes or is renamed). An item that cannot be examined (no permission) has no
    /// state: its events are then taken for echoes wherever they may be.
    static func read(for events: [FileSystemEvent]) -> [ItemPath: ItemStamp] {
        var observed: [ItemPath: ItemStamp] = [:]
        func observe(_ path: ItemPath) -> ItemStamp? {
            if let known = observed[path] { return known }
            let state: ChangeTimes.FileState?
            do { state = try ChangeTimes.state(ofPathBytes: path.bytes) } catch { return nil }  // Not readable.
            let stamp = state.map { ItemStamp.present(inode: $0.inode, size: $0.size, changeTime: $0.changeTime) }
            observed[path] = stamp ?? .absent
            return observed[path]
        }
        for event in events {
            for path in event.items {
                _ = observe(path)
                if let directory = path.parent { _ = observe(directory) }
            }
        }
        return observed
    }
}
