import FCCore

/// Changes of an item that came without a finished write (`IN_MODIFY`: a `write(2)` through a descriptor still
/// open, a `truncate(2)`, `touch -m`; `IN_ATTRIB`: `chmod`, `chown`, `touch`, an extended attribute, a link made or
/// removed), each held until it settles: told as one ``FileSystemEvent/changed(_:)`` once none came for ``quiet``,
/// or at the latest ``longest`` after the first, so that a file written for minutes through one descriptor is told
/// once a second. A finished write of the item (`IN_CLOSE_WRITE`), its deletion or a move away takes the held change
/// with it (the write's own event says it; a name vacated is told as such): `echo x > f` is one change, as before.
/// The finished write of a change already told (a descriptor written, quiet, then closed) is not told again
/// (``closed(_:)``).
///
/// Bounded by ``limit`` items held and as many told: past it, every held change is told at once (``isFull``), and the
/// told are forgotten (at worst, a later close is told once more).
///
/// - Important: Not thread-safe: owned by the watcher's thread, as the rest of ``InotifyWatcher``'s state.
struct SettlingChanges {
    /// How long an item must stay quiet for its change to be told.
    static let quiet: Duration = .milliseconds(100)
    /// How long a change is held at most, however often the item changes meanwhile.
    static let longest: Duration = .seconds(1)
    /// The most items held at once.
    static let limit = 4_096

    private struct Held {
        var first: ContinuousClock.Instant
        var last: ContinuousClock.Instant
        /// How far the watcher had read before this change's first event (``WatcherReport/drainedAt``): the change
        /// was made after it, and is not told yet.
        var drainedBefore: Int64

        var due: ContinuousClock.Instant { min(last + SettlingChanges.quiet, first + SettlingChanges.longest) }
    }

    private var held: [ItemPath: Held] = [:]
    /// Items whose held change was told, with nothing since.
    private var told: Set<ItemPath> = []
    /// The earliest ``Held/drainedBefore`` of the held changes, or lower (a change told since is not looked for until
    /// the next ``takeDue(at:everything:)``); `nil` when none is held: what the watcher may say it has read through, at
    /// most, since a held change is not told yet.
    private(set) var drainedBefore: Int64?
    /// When the earliest held change is due, or earlier (a change held again or told since is not looked for until
    /// the next ``takeDue(at:everything:)``); `nil` when none is held.
    private(set) var nextDue: ContinuousClock.Instant?

    var isEmpty: Bool { held.isEmpty }
    var count: Int { held.count }
    var isFull: Bool { held.count >= Self.limit }

    /// A change of `path` without a finished write, read at `now`; `drainedBefore`: how far the watcher had read
    /// before the batch that held it. O(1).
    mutating func note(_ path: ItemPath, at now: ContinuousClock.Instant, drainedBefore: Int64) {
        if held[path] != nil {
            held[path]?.last = now
            return
        }
        told.remove(path)
        let change = Held(first: now, last: now, drainedBefore: drainedBefore)
        held[path] = change
        self.drainedBefore = min(self.drainedBefore ?? drainedBefore, drainedBefore)
        nextDue = min(nextDue ?? change.due, change.due)
    }

    /// The item's held change, if any, is covered by another event (its deletion, a move away, or a name that now
    /// holds another item). O(1).
    mutating func forget(_ path: ItemPath) {
        held[path] = nil
        told.remove(path)
        if held.isEmpty { (drainedBefore, nextDue) = (nil, nil) }
    }

    /// A finished write of the item (`IN_CLOSE_WRITE`): `false` when it finishes a change already told (nothing was
    /// written since), which is then not told again. Takes its held change with it. O(1).
    mutating func closed(_ path: ItemPath) -> Bool {
        let wasTold = told.remove(path) != nil
        forget(path)
        return !wasTold
    }

    /// Takes the changes due at `now` (all of them when `everything`), in path order. O(held).
    mutating func takeDue(at now: ContinuousClock.Instant, everything: Bool = false) -> [ItemPath] {
        var due: [ItemPath] = []
        var next: ContinuousClock.Instant?
        var earliest: Int64?
        for (path, change) in held {
            if everything || change.due <= now {
                due.append(path)
                continue
            }
            next = min(next ?? change.due, change.due)
            earliest = min(earliest ?? change.drainedBefore, change.drainedBefore)
        }
        if told.count + due.count > Self.limit { told = [] }
        for path in due {
            held[path] = nil
            told.insert(path)
        }
        drainedBefore = earliest
        nextDue = next
        return due.sorted()
    }
}
