import CInotifyTools
import FCCore
import FCSystem
import Logging

// Letting go of dead watches. libinotifytools frees a watch only when its own `inotify_rm_watch` succeeds, so every
// watch the kernel drops (`IN_IGNORED`: a directory deleted, a linked file's last name gone) stays in its tables for
// the life of its instance, name and all, and each directory made again under a name it holds takes one more spelling
// (``InotifyWatcher/unseenSpelling(_:as:identity:)``). Left so, a daemon watching a build folder deleted and made
// again at each build grew without end, and stopped watching the folder the 256th time.
//
// So the watcher starts libinotifytools again (a renewal) once the dead watches it holds are at least as many as the
// live ones and at least ``InotifyWatcher/renewalFloor``, or a name has no spelling left: every watch is added anew in
// the new instance, under its own name. What happened between the old instance's close and the new watches is not
// known, so it is reported as after an overflow of the kernel's queue (presenters told of a change, live queries
// rescanned). A renewal costs what adding the watches cost (a listing and an `lstat` per entry of the indexed
// folders), once per as many dropped watches as there are live ones (and at least 1,024). Known limits: a folder
// watched for live queries only loses the watches of its files with other names until they change again; a dropped
// watch whose `IN_IGNORED` was lost in an overflow is not counted (it is let go at the next renewal all the same).
// Everything here runs on the watcher's thread, as the rest of ``InotifyWatcher``'s state.

extension InotifyWatcher {
    /// The fewest dead watches a renewal lets go of (one renewal rescans every watched directory).
    public static let renewalFloor = 1024

    /// `FD_SETSIZE`: libinotifytools waits for its inotify descriptor with `select()`, which cannot take a descriptor
    /// from this number on (it would write past its set).
    static let selectLimit = 1024

    /// Whether the process's inotify descriptor (its only one: libinotifytools') is below ``selectLimit``, as the one
    /// opened when the daemon started is. A renewal opens it anew while other threads open descriptors (connections),
    /// so with more than 1,023 open (a raised `RLIMIT_NOFILE`) it may land higher: then the watcher stops, and says so,
    /// rather than let `select()` write past its set. One `readlink` per descriptor from ``selectLimit`` on, once per
    /// renewal. Not tested: it needs another thread to take the freed number in the instant between the close and
    /// the open.
    static func inotifyDescriptorIsSelectable() -> Bool {
        var selectable = true
        try? FileSystemCalls.forEachEntry(ofDirectory: "/proc/self/fd") { name in
            guard let number = Int(name), number >= selectLimit else { return true }
            if (try? FileSystemCalls.symbolicLinkTarget("/proc/self/fd/" + name)) == "anon_inode:inotify" {
                selectable = false
                return false
            }
            return true
        }
        return selectable
    }

    /// The kernel dropped the watch `descriptor` (`IN_IGNORED`): counted when libinotifytools still holds it (not
    /// when this watcher removed it, which freed it).
    func noteDropped(_ descriptor: Int32) {
        guard let name = inotifytools_filename_from_wd(descriptor), name.pointee != 0 else { return }
        status.retiredWatches += 1
    }

    /// Whether libinotifytools is to be started again after the batch being read.
    var renewalDue: Bool {
        renewalWanted || status.retiredWatches >= max(Self.renewalFloor, byDescriptor.count + linked.count)
    }

    /// Starts libinotifytools again and adds every wanted directory's watch anew, after an overflow in the batch; a
    /// directory that can no longer be watched is reported unwatched. When inotify cannot be started again: why, and
    /// the directories it had let go to start again (`nil` when it was), for ``end(after:because:lost:)``: the
    /// watcher stops, as when its read fails.
    func renew(into batch: inout [FileSystemEvent]) -> (reason: String, lost: [ItemPath])? {
        // In the order they were added (descriptors grow): the first of two paths to one directory keeps it.
        let watchedBefore = byDescriptor.sorted { $0.key < $1.key }.map(\.value)
        let indexedBefore = indexed
        inotifytools_cleanup()
        byDescriptor = [:]
        byPath = [:]
        foldsNames = [:]
        directoryIdentities = [:]
        indexed = []
        linked = LinkedFileWatches()
        echoes = LinkedWriteEchoes()
        files = WatchedFileIdentities()
        cutDirectories = []
        renewalWanted = false
        status.retiredWatches = 0
        let failure: String? =
            if let fault = renewalFault {
                "libinotifytools could not be started again: \(fault)"
            } else if let error = setUp(renewing: true) {
                "libinotifytools could not be started again: \(error)"
            } else if !Self.inotifyDescriptorIsSelectable() {
                "libinotifytools' new inotify descriptor is above \(Self.selectLimit - 1), which its select() cannot take (more than \(Self.selectLimit - 1) descriptors are open)"
            } else {
                nil
            }
        if let failure {
            logger.error("the file watcher stopped: \(failure)")
            added = []
            return (failure, watchedBefore)
        }
        status.renewals += 1
        logger.notice(
            "libinotifytools was started again to let go of the watches the kernel dropped; \(watchedBefore.count) directories are watched anew, and presenters told of a change as after an overflow"
        )
        batch.append(.overflow)
        settling.clear()  // The overflow tells each held change's item.
        renewing = true
        // The directories first, then their files (so that a cap on watches keeps the directories it kept), neither
        // listed as made (the overflow says what may have changed); then the directories wanted but not watched, as
        // after an overflow.
        for directory in watchedBefore { add(directory, scan: false, indexing: false, into: &batch) }
        for directory in watchedBefore where indexedBefore.contains(directory) { indexWatched(directory) }
        let before = Set(watchedBefore)
        for directory in wanted.sorted() where !before.contains(directory) {
            add(directory, scan: true, indexing: waitingForRoom[directory] ?? true, into: &batch)
        }
        renewing = false
        removed += watchedBefore.filter { byPath[$0] == nil }
        added.removeAll { byPath[$0] == nil }
        updateWatchCounts()
        status.heldAfterRenewal = Int(inotifytools_get_num_watches())  // O(watches), once per renewal.
        return nil
    }
}
