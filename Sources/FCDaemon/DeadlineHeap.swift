import HeapModule

/// The daemon's deadlines (presenter reply timeouts, deadlock checks: the arbiter's `startTimer` effects) in one
/// min-heap, so that the loop arms one NIO timer, for the earliest, instead of one per request (issue 12).
///
/// Scheduling an id that is already scheduled moves it; cancelling is lazy: the entry stays in the heap and is
/// skipped when it comes out. The heap is rebuilt from the live entries when the skipped ones outnumber them (and
/// are more than a few), so it never holds more than about twice the live deadlines: nothing grows without bound.
/// `schedule` and `popDue` cost O(log n), `cancel` O(1) (amortised, with the rebuilds).
///
/// A value owned by one thread (the daemon's event loop); not `Sendable`.
struct DeadlineHeap<ID: Hashable, Deadline: Comparable> {
    private struct Entry: Comparable {
        var deadline: Deadline
        /// Arrival order, so that equal deadlines come out in the order they were scheduled, and so that an entry
        /// of an id scheduled again is told from the current one.
        var sequence: UInt64
        var id: ID

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            (lhs.deadline, lhs.sequence) < (rhs.deadline, rhs.sequence)
        }

        static func == (lhs: Entry, rhs: Entry) -> Bool {
            lhs.sequence == rhs.sequence
        }
    }

    private var heap = Heap<Entry>()
    /// The live deadline of each scheduled id, with the sequence of its entry in the heap.
    private var live: [ID: (deadline: Deadline, sequence: UInt64)] = [:]
    private var nextSequence: UInt64 = 0

    /// Skipped (cancelled or moved) entries tolerated before a rebuild, whatever the number of live ones.
    static var slack: Int { 64 }

    /// The number of ids scheduled.
    var count: Int { live.count }

    /// The number of entries in the heap, skipped ones included (for tests of the bound).
    var storedCount: Int { heap.count }

    /// The deadline of `id`, if it is scheduled.
    func deadline(of id: ID) -> Deadline? { live[id]?.deadline }

    /// Schedules `id` for `deadline`, replacing its earlier deadline if it had one.
    mutating func schedule(_ id: ID, at deadline: Deadline) {
        nextSequence += 1
        let replaced = live.updateValue((deadline, nextSequence), forKey: id) != nil
        heap.insert(Entry(deadline: deadline, sequence: nextSequence, id: id))
        if replaced { compactIfWorthIt() }
    }

    /// Cancels `id`; `false` when it was not scheduled.
    @discardableResult
    mutating func cancel(_ id: ID) -> Bool {
        guard live.removeValue(forKey: id) != nil else { return false }
        compactIfWorthIt()
        return true
    }

    /// Cancels everything.
    mutating func removeAll() {
        heap = Heap()
        live = [:]
    }

    /// The earliest live deadline.
    mutating func earliest() -> Deadline? {
        dropSkipped()
        return heap.min?.deadline
    }

    /// Removes and returns the earliest id due at `now` (deadline ≤ `now`), or `nil` when none is due.
    mutating func popDue(at now: Deadline) -> ID? {
        dropSkipped()
        guard let first = heap.min, first.deadline <= now else { return nil }
        _ = heap.popMin()
        live[first.id] = nil
        return first.id
    }

    /// Pops skipped entries off the top.
    private mutating func dropSkipped() {
        while let first = heap.min, live[first.id]?.sequence != first.sequence {
            _ = heap.popMin()
        }
    }

    private mutating func compactIfWorthIt() {
        guard heap.count > 2 * live.count + Self.slack else { return }
        heap = Heap(live.map { Entry(deadline: $0.value.deadline, sequence: $0.value.sequence, id: $0.key) })
    }
}
