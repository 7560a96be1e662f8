import FCCore
import FCSystem

// What changed between a presenter's registration and its watches (issue 37): read from the file system when the
// watches are in place. Runs on the watcher's thread, as the rest of ``InotifyWatcher``'s state.

extension InotifyWatcher {
    /// The item at `path` when its change time differs from `itemChangeTime` (it changed, or appeared, since the
    /// registration), and each entry of a directory whose change time is not older than `since` (less a clock tick
    /// when the directory's own change time moved): reported to `presenter` alone. O(entries) for a directory
    /// presenter, once per registration (docs/ARCHITECTURE.md §10).
    func reportChanges(
        since: Int64,
        itemChangeTime: Int64?,
        at path: ItemPath,
        presenter: PresenterID,
        into batch: inout [FileSystemEvent]
    ) {
        let bytes = path.bytes
        guard let status = try? FileSystemCalls.status(pathBytes: bytes, followingLinks: false) else { return }
        guard status.kind == .directory else {
            // A file (or link): exactly when its change time moved, or it appeared, since the registration.
            if let changed = try? ChangeTimes.changeTime(ofPathBytes: bytes), changed != itemChangeTime {
                batch.append(.changedBeforeWatch(path, presenter: presenter))
            }
            return
        }
        // A folder: its entries changed since the registration (a folder's own change time moves with its entries,
        // which inotify reports as subitem changes, not as a change of the folder). When the folder's own change time
        // moved (an entry made, removed or renamed since), a clock tick of allowance: a new entry may be stamped up to
        // a tick early by the kernel's coarse clock. Without it none, so nothing made before is reported.
        let folderChanged = (try? ChangeTimes.changeTime(ofPathBytes: bytes)).map { $0 != itemChangeTime } ?? true
        let threshold = folderChanged ? since - ChangeTimes.tickSlack : since
        let folds = byPath[path].map { foldsNames($0, path) } ?? false
        try? FileSystemCalls.forEachEntry(ofDirectoryBytes: bytes) { name in
            let name = Array(name)
            if let time = try? ChangeTimes.changeTime(ofPathBytes: bytes + [Self.slash] + name), time >= threshold {
                let entry = path.appending(folds ? Self.folded(name) : name)
                batch.append(.changedBeforeWatch(entry, presenter: presenter))
            }
            return true
        }
    }
}
