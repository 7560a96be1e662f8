/// One change a file-system watcher saw (inotify in the daemon), in the arbiter's terms: paths, not descriptors.
///
/// The watcher watches the directories the arbiter asks for (``ArbiterEffect/watch(_:)``) and feeds what it reads
/// as ``ArbiterEvent/fileSystemChanged(_:observed:readAt:drainedAt:)``, one batch per read, in the kernel's order. The arbiter turns the
/// batch into presenter notifications (docs/SEMANTICS.md §3, changes made without coordination).
public enum FileSystemEvent: Hashable, Sendable {
    /// An item's contents or attributes changed: a file opened for writing was closed (`IN_CLOSE_WRITE`: one
    /// finished write), or a change that closed no written file settled (`IN_MODIFY`, `IN_ATTRIB`: the watcher holds
    /// them until the item is quiet, and tells one).
    case changed(ItemPath)
    /// An item appeared in a watched directory (`IN_CREATE`), or was found by a scan of a directory whose watch was
    /// just added (so that nothing created before the watch existed is missed).
    case created(ItemPath, isDirectory: Bool)
    /// An item was removed from a watched directory (`IN_DELETE`).
    case deleted(ItemPath)
    /// The first half of a rename (`IN_MOVED_FROM`); paired with ``movedTo(_:cookie:isDirectory:)`` by the cookie
    /// within one batch. Unpaired, it is a move out of everything watched: a deletion as far as presenters can tell.
    case movedFrom(ItemPath, cookie: UInt32)
    /// The second half of a rename (`IN_MOVED_TO`). Unpaired, it is a move in from somewhere unwatched: a creation.
    case movedTo(ItemPath, cookie: UInt32, isDirectory: Bool)
    /// The kernel's queue overflowed (`IN_Q_OVERFLOW`): events were lost. Every presenter of a watched item is
    /// told its item changed (never silence); the watcher rescans what it watches.
    case overflow
    /// A watched directory could not be watched, or no longer is: the watcher ran out of watches (the kernel's
    /// `max_user_watches` or the daemon's own cap), or the kernel refused for another reason. Presenters that
    /// relied on it are reported (``ArbiterEffect/watchUnavailable(_:client:directory:reason:)``).
    case watchFailed(ItemPath, reason: String)
    /// A directory whose watch had failed is watched now: the watcher added it later (a watch let go gave it room,
    /// the directory was made again, or the watches were renewed). The presenters told it could not be watched are told it
    /// is (``ArbiterEffect/watchAvailable(_:client:directory:)``) and, since what changed meanwhile went unseen, that
    /// their item did change, as after an ``overflow``. The daemon's watcher tells it, in the batch's order, when it
    /// adds the watch of a directory whose failure it told; nothing of inotify names it.
    case watchAdded(ItemPath)
    /// An item changed between a presenter's registration and the moment its watch was in place (issue 37): the
    /// watcher found the item's (or, for a directory presenter, an entry's) change time not older than the
    /// registration. Told to that presenter alone (the others were registered, and heard of it from inotify): did
    /// change for its item, subitem did change for an entry of its directory.
    case changedBeforeWatch(ItemPath, presenter: PresenterID)
}

extension FileSystemEvent {
    /// The items the event names: one, or none for ``overflow``, ``watchFailed(_:reason:)`` and ``watchAdded(_:)``.
    public var items: [ItemPath] {
        switch self {
        case .changed(let path), .created(let path, _), .deleted(let path), .movedFrom(let path, _),
            .movedTo(let path, _, _), .changedBeforeWatch(let path, _):
            [path]
        case .overflow, .watchFailed, .watchAdded:
            []
        }
    }
}

/// Counters of the file-system watching rules, for the dump and for tests.
public struct WatchStatistics: Hashable, Sendable {
    /// File-system events received.
    public var events = 0
    /// Renames whose two ends were paired by cookie.
    public var pairedMoves = 0
    /// Events dropped as echoes of a coordinated write (its own notification covers them).
    public var echoesSuppressed = 0
    /// Events on an item a coordinated write had just written that showed a change made after it (issue 37):
    /// reported, not dropped.
    public var changesAfterWrites = 0
    /// A new file's first change taken as part of its appearance (the file as its creation was read, docs/SEMANTICS.md
    /// §3): not told again.
    public var closesOfAppearances = 0
    /// Notifications held back by the coalescing window (each burst still ends with one after it).
    public var coalesced = 0
    /// Notifications sent for file-system events.
    public var notificationsSent = 0
    /// Queue overflows reported by the watcher.
    public var overflows = 0
    /// Watches the watcher could not add or keep.
    public var watchFailures = 0
    /// Creates counters that are all zero.
    public init() {}
}

/// What the arbiter watches and why, for the dump (``Arbiter/watchingSnapshot()``).
public struct WatchingSnapshot: Hashable, Sendable {
    /// A watched directory and how many presenters need it (as the parent of their item, or as their item).
    public struct Directory: Hashable, Sendable {
        /// The directory.
        public var path: ItemPath
        /// The presenters that need it.
        public var presenters: Int
        /// Why it could not be watched, if the watcher said so.
        public var failure: String?
    }

    /// Every directory the arbiter asked to watch, sorted by path.
    public var directories: [Directory]
    /// The counters.
    public var statistics: WatchStatistics
    /// Notifications with an open coalescing window.
    public var openWindows: Int
    /// Paths whose events are echoes of recent coordinated writes.
    public var echoes: Int
}
