import FCCore

/// Invariant 11 of the simulator: a watcher behind the writes (ArbiterEvent.fileSystemChanged's `drainedAt`).
///
/// Now and then a write's own event is not read at once: it waits in the model watcher's queue, and every batch the
/// watcher reports meanwhile says it has read only up to before that write (its `drainedAt`). The queue is read when
/// the window timer fires, sometimes, and always once the arbiter asked (``ArbiterEffect/drainWatcher``). Checked:
/// - a late echo, read while its item is still as the write left it (the write said so, and left it present) and no
///   write claim holds it, within ``ArbiterConfiguration/echoWaitForWatcher``, is dropped as an echo, however many
///   windows passed;
/// - the arbiter asks the watcher to catch up at most once until the watcher next reports.
struct WatcherLagModel {
    /// A write's event still in the model watcher's queue.
    struct Queued {
        var path: ItemPath
        /// The model clock before the write changed anything: the watcher has read nothing from then on.
        var causedAt: Int64
        /// What the write said it left, if it said.
        var written: ItemStamp?
        /// The window tick the write ended in.
        var tick: Int
    }

    private(set) var queued: [Queued] = []
    /// `true` from the arbiter's ask until the next report.
    private var asked = false
    /// Late echoes read, those of them checked to be dropped, and of those the ones read after the retention alone
    /// would have let their record go (what the rule is for: a run without them checked nothing of it).
    private(set) var counts = (late: 0, checked: 0, pastRetention: 0)

    /// Whether the watcher is to be read now: it was asked, or, when something waits, one window in four.
    func readsNow(chance: Bool) -> Bool { asked || (!queued.isEmpty && chance) }

    /// How far the watcher has read, for a batch reported at `now`: up to before the first write still queued.
    func drainedAt(now: Int64) -> Int64 { queued.map(\.causedAt).min().map { $0 - 1 } ?? now }

    mutating func enqueue(_ path: ItemPath, causedAt: Int64, written: ItemStamp?, tick: Int) {
        queued.append(Queued(path: path, causedAt: causedAt, written: written, tick: tick))
    }

    /// The first echo of the queue, taken off it: the watcher reads it.
    mutating func popFirst() -> Queued? { queued.isEmpty ? nil : queued.removeFirst() }

    /// A batch with a `drainedAt` went to the arbiter.
    mutating func reported() { asked = false }

    /// The arbiter's effects; returns a violation, if any.
    mutating func record(_ effect: ArbiterEffect) -> String? {
        guard case .drainWatcher = effect else { return nil }
        defer { asked = true }
        return asked ? "invariant 11: the watcher asked to catch up again before it reported" : nil
    }

    /// A late echo judged: `dropped` when the arbiter counted it as an echo. `stillWritten`: the item is as `echo`'s
    /// write left it; `held`: a granted write claim holds its events; `ticks`: windows since the write, `retention`
    /// the windows a record lives by itself, `limit` the most it waits. Returns a violation, if any.
    mutating func judged(
        _ echo: Queued,
        dropped: Bool,
        stillWritten: Bool,
        held: Bool,
        ticks: Int,
        retention: Int,
        limit: Int
    ) -> String? {
        counts.late += 1
        // An item the write left absent may have been made and deleted again since: its folder tells, not itself.
        guard case .present = echo.written, stillWritten, !held, ticks < limit else { return nil }
        counts.checked += 1
        if ticks >= retention { counts.pastRetention += 1 }
        return dropped ? nil : "invariant 11: \(echo.path)'s echo read \(ticks) windows late was reported as a change"
    }
}
