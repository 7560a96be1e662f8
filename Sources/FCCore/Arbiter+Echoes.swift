// Echoes of coordinated writes (docs/SEMANTICS.md §3): what the watcher reports about a write the arbiter
// coordinated is dropped, a change made after it is reported.

/// An item a coordinated write that ended recently wrote, created or moved (``WatchState/echoes``).
struct EchoRecord {
    /// The tick after which its events are no longer echoes, once the watcher has read past ``drainUntil``.
    var expiry: Int
    /// The tick after which they are no longer echoes however far behind the watcher is
    /// (``ArbiterConfiguration/echoWaitForWatcher``).
    var lastExpiry: Int
    /// Its state as the writer's client saw it right after the accessor, if it said.
    var stamp: ItemStamp?
    /// The writer's clock when the accessor returned (``WriteOutcome/endedAt``), if its client said.
    var endedAt: Int64?
    /// The latest end of the writes of the item that said when they ended, this one's or an earlier one's whose record
    /// this replaced: what the watcher must have read past before the record goes (``Arbiter/waitsForWatcher(_:)``).
    var drainUntil: Int64?
}

/// What an event on an item is, as far as coordinated writes go (``Arbiter/echoVerdict(_:observed:)``).
enum EchoVerdict {
    /// Not caused by a coordinated write, or made after one: reported.
    case foreign
    /// Caused by a coordinated write, whose own notifications told the presenters: dropped.
    case echo
    /// Under a granted write claim: held until it ends, then judged again (``ClaimRecord/held``).
    case held(ClaimRecord)
}

/// The file-system events a granted write claim holds (``ClaimRecord/held``), each with the state of its items
/// when it was read. Bounded by ``limit`` events: past it, the older half goes, taken for echoes of the write as
/// every event under a running write once was (a change made after the accessor returned comes after them).
///
/// Not thread-safe: owned by one ``Arbiter``.
struct HeldEvents {
    /// The most events kept.
    static let limit = 256

    /// Events in the order read; a rename's two halves together; `readAt`: when their states were read.
    private(set) var groups: [(events: [FileSystemEvent], observed: [ItemPath: ItemStamp], readAt: Int64?)] = []
    private var count = 0
    /// Events let go past the limit.
    private(set) var dropped = 0

    var isEmpty: Bool { groups.isEmpty }

    /// Keeps `events` (one, or a rename's two halves), with the stamps of their items (and of their folders).
    mutating func hold(_ events: [FileSystemEvent], observed stamps: [ItemPath: ItemStamp], readAt: Int64?) {
        var observed: [ItemPath: ItemStamp] = [:]
        for path in events.flatMap(\.items) {
            for key in [path, path.parent].compactMap({ $0 }) where observed[key] == nil {
                observed[key] = stamps[key]
            }
        }
        groups.append((events, observed, readAt))
        count += events.count
        guard count > Self.limit else { return }
        var gone = 0
        var removed = 0
        while count - removed > Self.limit / 2, gone < groups.count {
            removed += groups[gone].events.count
            gone += 1
        }
        groups.removeFirst(gone)
        count -= removed
        dropped += removed
    }
}

extension Arbiter {
    // MARK: Echoes of coordinated writes

    /// What an event on `path` is (docs/SEMANTICS.md §3, echoes), given the state of its item when it was read:
    ///
    /// - under a granted write claim: held until the claim ends (``HeldEvents``); an event without a stamp, or under
    ///   a lease, is an echo, as is every event while a lease's holder may write;
    /// - under an item a coordinated write that ended within the echo retention (longer while the watcher has not read
    ///   past its end, ``waitsForWatcher(_:)``) wrote, created or moved: an echo if
    ///   the item is as the writer's client left it (same stamp) or in a state from before (an older change time),
    ///   or, below a written folder, if its change time (its folder's, once it is gone) is not later than the moment
    ///   the accessor returned; foreign when it changed after every such write. Without a stamp or a time from the
    ///   client, or from the watcher, an echo. A state the watcher read (`readAt`) before the accessor returned is
    ///   the write's (or older), whatever it shows: an event held while a second write ran, read before that write
    ///   ended, was reported once more when the two writes ended within one clock tick (issue 37's tie rule;
    ///   ConcurrencyTests under load);
    /// - anything else: foreign.
    func echoVerdict(_ path: ItemPath, observed: [ItemPath: ItemStamp], readAt: Int64? = nil) -> EchoVerdict {
        if let claim = grantedWriteClaim(over: path) {
            // A preparation's batch runs writes of its own, whose finishes record their echoes: its events are not
            // held until the batch ends (their records would be gone by then).
            if !claim.id.isLease, !claim.request.isPreparation, observed[path] != nil { return .held(claim) }
            return countEcho()
        }
        guard !watching.echoes.isEmpty else { return .foreign }
        // The echo of any write that covers the item (its own, or a folder's): a later change is later than all.
        var prefix = path
        var covered = false
        while true {
            if let record = watching.echoes[prefix] {
                if !isLaterChange(path, record, recorded: prefix, observed: observed, readAt: readAt) {
                    return countEcho()
                }
                covered = true
            }
            guard let parent = prefix.parent else { break }
            prefix = parent
        }
        return covered ? countLaterChange() : .foreign
    }

    /// `true` when the state `observed` for `path` shows a change made after the write `record` remembers (on
    /// `recorded`, `path` or a folder enclosing it).
    private func isLaterChange(
        _ path: ItemPath,
        _ record: EchoRecord,
        recorded: ItemPath,
        observed: [ItemPath: ItemStamp],
        readAt: Int64?
    ) -> Bool {
        guard let now = observed[path] else { return false }
        // Read before the accessor returned: a state of the write, or of before it.
        if let readAt, let endedAt = record.endedAt, readAt < endedAt { return false }
        if path == recorded, let stamp = record.stamp, now != stamp {
            // Not as the write left it: a state from before its end (read while it ran), or a later change. A later
            // change has a change time not older than the one the writer's client read; in the same clock tick the
            // two cannot be told apart, and the change is reported (at worst once more).
            switch (now, stamp) {
            case (.present(_, _, let time), .present(_, _, let written)):
                return time >= written
            case (.absent, .present(_, _, let written)):
                // Gone: its folder's change time says when.
                return path.parent.flatMap { observed[$0]?.changeTime }.map { $0 >= written } ?? false
            default:
                break  // The write removed it and something is there: by time, below.
            }
        }
        // An entry of a written folder whose folder is no longer as the write left it (an entry came, went or was
        // renamed after): told apart even within the clock tick the write ended in.
        if path.parent == recorded, let written = record.stamp, let folder = observed[recorded], folder != written,
            let time = folder.changeTime, let writtenTime = written.changeTime, time >= writtenTime
        {
            return true
        }
        guard let endedAt = record.endedAt,
            let changed = now.changeTime ?? path.parent.flatMap({ observed[$0]?.changeTime })
        else { return false }
        return changed > endedAt
    }

    /// The granted write claim whose items enclose `path` (or that writes a package enclosing it), if any.
    private func grantedWriteClaim(over path: ItemPath) -> ClaimRecord? {
        var node: AccessNode? = tree.root
        var depth = 0
        while let current = node {
            if current.subtreeEntries == 0 { return nil }
            for ref in current.entries {
                // A host gate is no write: it only keeps this host's claims out while another host decides there.
                guard let claim = claims[ref.claim], claim.phase == .granted, ref.index < claim.entries.count,
                    !claim.id.isHostGate
                else {
                    continue
                }
                let entry = claim.entries[ref.index]
                if case .write = entry.access, path.isEqualOrDescendant(of: entry.path) || tree.isPackage(current) {
                    return claim
                }
            }
            guard depth < path.depth else { return nil }
            node = current.children[path.components[depth]]
            depth += 1
        }
        return nil
    }

    private func countEcho() -> EchoVerdict {
        watching.statistics.echoesSuppressed += 1
        return .echo
    }

    private func countLaterChange() -> EchoVerdict {
        watching.statistics.changesAfterWrites += 1
        return .foreign
    }

    /// Remembers what a coordinated write that just ended touched: the inotify events it caused may still be on
    /// their way to the arbiter, and its own notifications already told the presenters. `outcome`: the state its
    /// client saw after the accessor, which tells those echoes from changes made after the write.
    func recordEchoes(of claim: ClaimRecord, created: [ItemPath], outcome: WriteOutcome?) {
        guard configuration.watchesFileSystem else { return }
        let expiry = watching.tick + echoTicks
        let lastExpiry = expiry + ticks(configuration.echoWaitForWatcher)
        watching.echoScanDue = min(watching.echoScanDue, expiry)
        var any = false
        func record(_ path: ItemPath) {
            // A write that says nothing of its end after one that did: the earlier one's echo may still be to come.
            let earlier = watching.echoes[path]
            watching.echoes[path] = EchoRecord(
                expiry: expiry,
                lastExpiry: lastExpiry,
                stamp: outcome?.items[path],
                endedAt: outcome?.endedAt,
                drainUntil: Self.later(outcome?.endedAt, earlier?.drainUntil)
            )
            any = true
        }
        for entry in claim.entries {
            guard case .write = entry.access else { continue }
            record(entry.path)
        }
        for path in created + claim.moves.flatMap({ [$0.from, $0.to] }) { record(path) }
        if any { startWatchTimerIfNeeded() }
    }

    /// The events a claim held while it was granted, judged now that it has ended (its echo records are in place):
    /// what the write caused is dropped, a change made after its accessor returned is reported.
    func releaseHeldEvents(of claim: ClaimRecord) {
        guard !claim.held.isEmpty else { return }
        let held = claim.held
        claim.held = HeldEvents()
        watching.statistics.echoesSuppressed += held.dropped
        for group in held.groups {
            fileSystemChanged(group.events, observed: group.observed, readAt: group.readAt, replayed: true)
        }
    }

    /// The later of two moments, either of which may be unknown.
    private static func later(_ a: Int64?, _ b: Int64?) -> Int64? {
        guard let a else { return b }
        guard let b else { return a }
        return max(a, b)
    }

    private var echoTicks: Int { max(2, ticks(configuration.echoRetention) + 2) }

    /// Whole coalescing windows in `duration` (no libm: FCCore is stdlib only).
    private func ticks(_ duration: Duration) -> Int {
        let window = configuration.coalescingWindow
        guard window > .zero else { return 0 }
        let ratio = duration / window
        return ratio < Double(Int.max / 4) ? max(0, Int(ratio)) : Int.max / 4
    }

    // MARK: A watcher behind the writes

    /// Whether the arbiter asked the watcher to say how far it has read and has not heard yet
    /// (``ArbiterEffect/drainWatcher``): the host passes it an empty report only then (each event costs a pass over
    /// the waiting claims).
    public var asksWatcherToDrain: Bool { watching.drainAsked }

    /// The watcher has read every event caused before `moment` (``ArbiterEvent/fileSystemChanged(_:observed:readAt:
    /// drainedAt:)``): echo records of writes that ended before it may expire.
    func watcherDrained(through moment: Int64) {
        // The latest, not the greatest: reports come in order from one thread, and after the wall clock was set back
        // the greatest would keep records from waiting until the clock caught up.
        watching.drainedThrough = moment
        watching.drainAsked = false
        watching.echoScanDue = min(watching.echoScanDue, watching.tick + 1)
    }

    /// Whether `record`, past its ``EchoRecord/expiry``, still waits for the watcher: its write (or one it replaced)
    /// said when it ended, the watcher says how far it has read (``ArbiterConfiguration/watcherSaysHowFarItRead``), not
    /// yet past that end (``EchoRecord/drainUntil``), and the record's ``EchoRecord/lastExpiry`` has not come. A write's events are
    /// in the kernel's queue before its accessor returns, so once the watcher has found the queue empty after that
    /// moment none is still to come.
    func waitsForWatcher(_ record: EchoRecord) -> Bool {
        guard configuration.watcherSaysHowFarItRead, let until = record.drainUntil else { return false }
        return (watching.drainedThrough ?? .min) < until && watching.tick < record.lastExpiry
    }

    /// Drops the echo records whose time has come; asks the watcher, once until it next reports, to say how far it
    /// has read when a record waits for it (``ArbiterEffect/drainWatcher``): a watcher with nothing to read would
    /// otherwise say nothing, and the record would wait its whole ``EchoRecord/lastExpiry``.
    ///
    /// O(records), at most once per window; while records wait for a lagging watcher, only when it reports or a
    /// record's time comes (``WatchState/echoScanDue``).
    func expireEchoes() {
        let tick = watching.tick
        var waiting = false
        var due = Int.max
        watching.echoes = watching.echoes.filter { _, record in
            if record.expiry > tick {
                due = min(due, record.expiry)
                return true
            }
            guard waitsForWatcher(record) else { return false }
            waiting = true
            due = min(due, record.lastExpiry)
            return true
        }
        watching.echoScanDue = due
        if waiting, !watching.drainAsked {
            watching.drainAsked = true
            effects.append(.drainWatcher)
        }
    }
}
