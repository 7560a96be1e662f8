public import FCCore

/// A source of file-system events for the arbiter (docs/ARCHITECTURE.md §10): the directories the arbiter asks for are
/// watched, and what happens in them is reported as ``FileSystemEvent``s in batches.
///
/// The daemon uses ``InotifyWatcher``; tests may script events through their own conformance, and other backends
/// (fanotify, polling for file systems without inotify) can be added behind the same protocol.
///
/// - Important: ``watch(_:)``, ``unwatch(_:)`` and ``stop()`` may be called from any thread (the daemon calls them
///   on its event loop, in the order of the arbiter's effects) and must not block on file-system work; the backend
///   calls `deliver` from a thread of its own (once that thread has ended by itself, from the thread that asks a
///   ``barrier(_:)`` or a ``drain()``, which are answered at once), in order, never concurrently with itself. So
///   `deliver` must not call the watcher itself (it would wait for itself), and when those two and ``stop()`` are
///   called from different threads, a report may follow `stop()`'s return (the daemon calls all three on its loop).
public protocol FileSystemWatcher: AnyObject, Sendable {
    /// Starts watching nothing; every batch of events (and every change of status) goes to `deliver`.
    func start(deliver: @escaping @Sendable (WatcherReport) -> Void) throws
    /// Watches the direct entries of a directory (``ArbiterEffect/watch(_:)``). A path that is not a directory uses
    /// no watch; one that does not exist yet is watched when it is asked for again after its creation, and then
    /// scanned, so that what was created in it before the watch existed is reported as created.
    ///
    /// `indexingFiles`: the backend also indexes the directory's files by identity (issue 26: the arbiter's watches,
    /// for presenters, whose files may have other names). A live query's folder (issue 44), which nobody presents
    /// in, needs no index: `false` saves a second listing and an `lstat` per entry. A directory watched without it is
    /// indexed when it is asked for again with it.
    func watch(_ directory: ItemPath, indexingFiles: Bool)
    /// Stops watching a directory (``ArbiterEffect/unwatch(_:)``).
    func unwatch(_ directory: ItemPath)
    /// A coordinated write of the file `identity`, which has other names, ended
    /// (``ArbiterEffect/fileWithOtherNamesWritten(_:)``): its names in watched directories that no watch of the
    /// backend saw written are reported changed, and watched from now on (issue 26).
    func fileWritten(_ identity: ItemIdentity)
    /// A presenter of `path` registered at `since` (wall clock, ns), when the item's change time was
    /// `itemChangeTime` (`nil`: it did not exist), and its watches were asked for just before this call (issue 37):
    /// once they are in place, the item whose change time now differs (or that exists now), and for a directory each
    /// entry whose change time is not older than `since`, is reported as
    /// ``FileSystemEvent/changedBeforeWatch(_:presenter:)``, so that a change made before the watch is not missed.
    func changedSince(_ since: Int64, itemChangeTime: Int64?, path: ItemPath, presenter: PresenterID)
    /// Reports `token` in ``WatcherReport/barriers`` once every ``watch(_:)`` asked before it is in place (or failed,
    /// and said so): a live query lists a folder only after its watch, so that nothing changed in between is missed
    /// (issue 44).
    func barrier(_ token: UInt64)
    /// Reports, once it has read every event queued now, how far it has read (``WatcherReport/drainedAt``), in a batch
    /// of its own if nothing else comes (``ArbiterEffect/drainWatcher``).
    func drain()
    /// Stops the backend's thread and releases its watches. Nothing is delivered after it returns.
    func stop()
}

extension FileSystemWatcher {
    /// Watches `directory` and indexes its files (the arbiter's watches).
    public func watch(_ directory: ItemPath) { watch(directory, indexingFiles: true) }
    /// A backend that follows no file by its identity reports nothing more.
    public func fileWritten(_ identity: ItemIdentity) {}
    /// A backend that does not say how far it has read has nothing to say.
    public func drain() {}
    /// A backend that cannot tell change times reports nothing.
    public func changedSince(_ since: Int64, itemChangeTime: Int64?, path: ItemPath, presenter: PresenterID) {}
}

/// What a watcher reports: events, in order, and its status after them.
public struct WatcherReport: Sendable {
    /// The events, one batch (renames are paired within a batch).
    public var events: [FileSystemEvent]
    /// The watcher's counters after these events.
    public var status: WatcherStatus
    /// Directories whose watch was added since the last report.
    public var watched: [ItemPath] = []
    /// Directories whose watch went away since the last report (unwatched, deleted).
    public var unwatched: [ItemPath] = []
    /// The ``FileSystemWatcher/barrier(_:)`` tokens passed since the last report, in order.
    public var barriers: [UInt64] = []
    /// The state of the events' items when the batch was read, and of their directories (issue 37: tells a
    /// coordinated write's echo from a change made after it).
    public var observed: [ItemPath: ItemStamp] = [:]
    /// The wall clock (`CLOCK_REALTIME`, nanoseconds) once ``observed`` was read: a state read before a write's
    /// accessor returned is that write's (``ArbiterEvent/fileSystemChanged(_:observed:readAt:drainedAt:)``).
    public var readAt: Int64?
    /// The same clock just before the backend found its queue empty: every event caused before it is in this report
    /// or an earlier one (``ArbiterEvent/fileSystemChanged(_:observed:readAt:drainedAt:)``). `nil`: the backend does
    /// not say.
    public var drainedAt: Int64?

    /// Creates a report.
    public init(
        events: [FileSystemEvent],
        status: WatcherStatus,
        watched: [ItemPath] = [],
        unwatched: [ItemPath] = [],
        observed: [ItemPath: ItemStamp] = [:]
    ) {
        self.events = events
        self.status = status
        self.watched = watched
        self.unwatched = unwatched
        self.observed = observed
    }
}

/// A watcher's counters, for the dump (`fcdump watcher`).
public struct WatcherStatus: Hashable, Sendable {
    /// The backend's name (`inotify`).
    public var backend: String
    /// Watches in use: one per watched directory, and one per file with other names (hard links) in them.
    public var watches = 0
    /// Of ``watches``, those on files of watched directories that have other names (issue 26).
    public var linkedFileWatches = 0
    /// The daemon's own cap on watches (`--max-watches`), if set.
    public var watchCap: Int?
    /// The kernel's limit (`fs.inotify.max_user_watches`), shared by every inotify user of this uid.
    public var kernelMaximumWatches: Int?
    /// The kernel's queue limit (`fs.inotify.max_queued_events`).
    public var queueLimit: Int?
    /// Events read.
    public var events = 0
    /// Queue overflows (`IN_Q_OVERFLOW`).
    public var overflows = 0
    /// Rescans: one per overflow (directories wanted but not watched are tried again and scanned), and one per
    /// directory asked for again after its creation (added, then scanned).
    public var rescans = 0
    /// Watches that could not be added (limit reached, permission denied).
    public var failedWatches = 0
    /// Watches the kernel dropped (a directory deleted) that the inotify library still holds, name and all, until
    /// the next renewal.
    public var retiredWatches = 0
    /// Times the inotify library was started again to let go of the watches the kernel dropped (each reported as an
    /// overflow).
    public var renewals = 0
    /// The watches the inotify library held right after the last renewal, by its own count (`nil` before one).
    public var heldAfterRenewal: Int?

    /// Creates the status of a backend that watches nothing yet.
    public init(backend: String) {
        self.backend = backend
    }
}
