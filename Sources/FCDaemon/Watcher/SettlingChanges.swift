import FCCore
import FCSystem

/// Changes of an item that came without a finished write (`IN_MODIFY`: a `write(2)` through a descriptor still
/// open, a `truncate(2)`, `touch -m`; `IN_ATTRIB`: `chmod`, `chown`, times set, an extended attribute), each held
/// until it settles: told as one ``FileSystemEvent/changed(_:)`` once none came for ``SettlingTiming/quiet``, or at the
/// latest ``SettlingTiming/longest`` after the first, so that a file written for minutes through one descriptor is told once
/// a second. A finished write of the item (`IN_CLOSE_WRITE`) takes the held change with it (the write's own event
/// says it: `echo x > f` is one change, as before), and is not told itself when it closes a change already told and
/// the item is as it was told (``closed(_:now:)``); a deletion drops it; a move tells it at once (``take(_:)``,
/// ``takeAll(under:)``), before the move; the watcher drops the moved item's own again when the move ends in a
/// watched folder, both halves read together, at a name not known to be free (the rename is told), never those
/// below a folder.
///
/// Bounded by ``limit`` items held and as many told: past it, every held change is told at once (``isFull``), and a
/// change told makes another remembered go (whose close is then told too).
///
/// - Important: Not thread-safe: owned by the watcher's thread, as the rest of ``InotifyWatcher``'s state.
struct SettlingChanges {
    typealias Timing = SettlingTiming

    /// The most items held at once, and remembered as told.
    static let limit = 4_096

    private struct Held {
        var first: ContinuousClock.Instant
        var last: ContinuousClock.Instant
        /// How far the watcher had read before this change's first event (``WatcherReport/drainedAt``): the change
        /// was made after it, and is not told yet.
        var drainedBefore: Int64

        func due(_ timing: Timing) -> ContinuousClock.Instant { min(last + timing.quiet, first + timing.longest) }
    }

    let timing: Timing
    private var held: [ItemPath: Held] = [:]
    /// Items whose held change was told, as they were then (`lstat`), with nothing written since.
    private var told: [ItemPath: ChangeTimes.FileState] = [:]
    /// The earliest ``Held/drainedBefore`` of the held changes, or lower (a change told since is not looked for until
    /// the next ``takeDue(at:everything:)``); `nil` when none is held: what the watcher may say it has read through, at
    /// most, since a held change is not told yet.
    private(set) var drainedBefore: Int64?
    /// When the earliest held change is due, or earlier (a change held again or told since is not looked for until
    /// the next ``takeDue(at:everything:)``); `nil` when none is held.
    private(set) var nextDue: ContinuousClock.Instant?

    init(timing: Timing = .standard) { self.timing = timing }

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
        told[path] = nil
        let change = Held(first: now, last: now, drainedBefore: drainedBefore)
        held[path] = change
        self.drainedBefore = min(self.drainedBefore ?? drainedBefore, drainedBefore)
        nextDue = min(nextDue ?? change.due(timing), change.due(timing))
    }

    /// The item was deleted, or its name now holds another item: its change does not matter any more. O(1).
    mutating func forget(_ path: ItemPath) {
        _ = take(path)
    }

    /// Takes the item's held change, to be told now (it moves away); `false` when none was held. O(1).
    mutating func take(_ path: ItemPath) -> Bool {
        told[path] = nil
        guard held.removeValue(forKey: path) != nil else { return false }
        if held.isEmpty { (drainedBefore, nextDue) = (nil, nil) }
        return true
    }

    /// Takes the held changes of the items below `folder`, in path order, to be told now (the folder moves away).
    /// O(held): folders move seldom, and at most ``limit`` items are held.
    mutating func takeAll(under folder: ItemPath) -> [ItemPath] {
        let below = held.keys.filter { $0.isDescendant(of: folder) }.sorted()
        for path in below { _ = take(path) }
        for path in told.keys where path.isDescendant(of: folder) { told[path] = nil }
        return below
    }

    /// A finished write of the item (`IN_CLOSE_WRITE`): `false` when it closes a change already told and the item is
    /// as it was then (`now`, its `lstat`, read only in that case), which is then not told again. Takes the held
    /// change with it. O(1).
    mutating func closed(_ path: ItemPath, now: () -> ChangeTimes.FileState?) -> Bool {
        let wasTold = told.removeValue(forKey: path)
        _ = take(path)
        guard let wasTold else { return true }
        return now() != wasTold
    }

    /// A change just told, its item as it was then: remembered, room allowing, so that the close that ends it is not
    /// told too.
    mutating func told(_ path: ItemPath, as state: ChangeTimes.FileState) {
        // Full: one remembered goes, any (a change never closed, as a `chmod`'s, would stay for ever otherwise).
        if told.count >= Self.limit, told[path] == nil { told.remove(at: told.startIndex) }
        told[path] = state
    }

    /// Everything held and told is forgotten: every presenter and query was told a change (an overflow, a renewal).
    mutating func clear() {
        (held, told, drainedBefore, nextDue) = ([:], [:], nil, nil)
    }

    /// Takes the changes due at `now` (all of them when `everything`), in path order. O(held).
    mutating func takeDue(at now: ContinuousClock.Instant, everything: Bool = false) -> [ItemPath] {
        var due: [ItemPath] = []
        var next: ContinuousClock.Instant?
        var earliest: Int64?
        for (path, change) in held {
            let time = change.due(timing)
            if everything || time <= now {
                due.append(path)
                continue
            }
            next = min(next ?? time, time)
            earliest = min(earliest ?? change.drainedBefore, change.drainedBefore)
        }
        for path in due { held[path] = nil }
        drainedBefore = earliest
        nextDue = next
        return due.sorted()
    }
}

/// How long ``InotifyWatcher`` holds a change without a finished write (``SettlingChanges``).
public struct SettlingTiming: Sendable {
    /// How long an item must stay quiet for its change to be told.
    public var quiet: Duration
    /// How long a change is held at most, however often the item changes meanwhile.
    public var longest: Duration

    /// A timing of `quiet` and `longest`.
    public init(quiet: Duration, longest: Duration) {
        self.quiet = quiet
        self.longest = longest
    }

    /// 100 ms quiet, a second at most.
    public static let standard = SettlingTiming(quiet: .milliseconds(100), longest: .seconds(1))
}
