import FCCore
import FCProtocol
import Foundation

/// A live query's results and the changes not yet told (issue 44): what the daemon sends is filtered by the
/// query's predicate, gathered, then batched.
///
/// - Important: Not thread-safe: confined to its query's serial queue.
struct MetadataQueryResults {
    /// What one `QueryItems` did, for the query to tell.
    enum Step {
        case nothing
        /// Items of the first gathering arrived: `count` found so far.
        case gatheringProgress(count: Int)
        /// The first gathering ended.
        case finishedGathering
        /// Changes are pending (the batch timer should run).
        case changesPending
    }

    /// An item's path as the daemon sent it: its bytes, hashed and ordered as bytes (``ByteKey``). Linux names are
    /// bytes, so two names that differ only in Unicode normalisation are two files (a `String` key took them for
    /// one), and bytes compare without Unicode's rules (a `String` sort of a gathering's 100,000 paths was half of
    /// the client's work, Benchmarks/README.md "Live queries").
    typealias Path = ByteKey

    let predicate: (NSMetadataItem) -> Bool
    /// The results' order: by these attributes (ascending or not), then by path.
    let sortKeys: [(key: String, ascending: Bool)]
    /// The matching items by path.
    private(set) var current: [Path: NSMetadataItem] = [:]
    /// The results in order (by the sort keys, then by the path's bytes). A tree, so that a batch of k changes
    /// among n results finds and places each by binary search and copies O(k log n) of it, while the copy the
    /// query's readers hold stays as it was (``RankedTree``).
    private(set) var results = RankedTree<NSMetadataItem>()
    /// How many times every result was sorted again (for the tests: a batch of changes never needs it).
    private(set) var fullSorts = 0
    /// A gathering in progress (the first, or again after a new connection).
    private var gathering: [Path: NSMetadataItem]? = [:]
    private var firstGatheringDone = false
    /// The first gathering's arrivals, for its order (sorted a message at a time), and then for ``current``.
    private var arrivals = GatheringArrivals()
    /// ``current`` is still to be made from ``arrivals`` (``indexIfPending()``).
    private var indexPending = false
    /// The first gathering is done and its index by path made: a change costs O(log n) from here on.
    var isIndexed: Bool { firstGatheringDone && !indexPending }
    /// Changes not yet told, by path: the new item, or `nil` for a removal.
    private(set) var pending: [Path: NSMetadataItem?] = [:]

    init(predicate: @escaping (NSMetadataItem) -> Bool, sortKeys: [(key: String, ascending: Bool)] = []) {
        self.predicate = predicate
        self.sortKeys = sortKeys
    }

    /// Orders `current` into ``results``: by the sort keys, then by path.
    private mutating func order() {
        let entries = Array(current)
        var order = Array(entries.indices)
        if sortKeys.isEmpty {
            // The paths' bytes copied into one buffer and compared there: sorting the entries themselves retained and
            // released each path at each comparison (most of the sort's time at the end of a gathering).
            var bytes: [UInt8] = []
            var bounds: [Range<Int>] = []
            bounds.reserveCapacity(entries.count)
            for entry in entries {
                bounds.append(bytes.count..<bytes.count + entry.key.bytes.count)
                bytes += entry.key.bytes
            }
            GatheringArrivals.sortIndices(&order[...], bytes: bytes, bounds: bounds)
        } else {
            let sortKeys = self.sortKeys
            order.sort { a, b in
                for (key, ascending) in sortKeys {
                    let result = Self.compare(
                        entries[a].value.value(forAttribute: key),
                        entries[b].value.value(forAttribute: key)
                    )
                    if result != .orderedSame { return (result == .orderedAscending) == ascending }
                }
                return entries[a].key < entries[b].key
            }
        }
        results = RankedTree(order.lazy.map { entries[$0].value })
        fullSorts += 1
    }

    /// Whether `a` comes before `b` in ``results``: ``order()``'s order.
    private func precedes(_ a: NSMetadataItem, _ b: NSMetadataItem) -> Bool {
        for (key, ascending) in sortKeys {
            let result = Self.compare(a.value(forAttribute: key), b.value(forAttribute: key))
            if result != .orderedSame { return (result == .orderedAscending) == ascending }
        }
        return a.pathBytes.withUnsafeBytes { x in b.pathBytes.withUnsafeBytes { y in ByteComparison.precedes(x, y) } }
    }

    /// The first place in ``results`` whose item does not come before `item`: where it is, or would go.
    private func place(of item: NSMetadataItem) -> Int {
        results.partitioningPosition { precedes($0, item) }
    }

    /// Applies one batch to the ordered results: `leaving` (items to take out, as the results hold them), `arriving`
    /// (items to put in) and `inPlace` (items that replace the one of their path where it stands), each found by
    /// binary search: O(k log² n) node steps for k changes of n results, and O(k log n) nodes copied. `false` if the
    /// batch is a large part of the results (sorting them all again is then cheaper), or if an item to take out or
    /// replace is not where the order puts it (never expected): the caller sorts them all.
    private mutating func place(
        leaving: [NSMetadataItem],
        arriving: [NSMetadataItem],
        inPlace: [NSMetadataItem]
    ) -> Bool {
        guard leaving.count + arriving.count + inPlace.count <= max(64, results.count / 8) else { return false }
        for item in inPlace {
            // The same path, so the same place (no sort keys: the order is the paths').
            let index = place(of: item)
            guard index < results.count, results[index].pathBytes == item.pathBytes else { return false }
            results[index] = item
        }
        for item in leaving {
            let index = place(of: item)
            guard index < results.count, results[index].pathBytes == item.pathBytes else { return false }
            results.remove(at: index)
        }
        for item in arriving { results.insert(item, at: place(of: item)) }
        return true
    }

    /// Attribute values compared as NSSortDescriptor compares them: strings, numbers, dates; a missing value first.
    private static func compare(_ a: Any?, _ b: Any?) -> ComparisonResult {
        switch (a, b) {
        case (nil, nil): return .orderedSame
        case (nil, _): return .orderedAscending
        case (_, nil): return .orderedDescending
        case (let x as String, let y as String): return x.compare(y)
        case (let x as NSNumber, let y as NSNumber): return x.compare(y)
        case (let x as Date, let y as Date): return x.compare(y)
        default: return .orderedSame
        }
    }

    private static func item(_ record: Filecoord_V1_QueryItem) -> NSMetadataItem {
        NSMetadataItem(
            path: String(decoding: record.path, as: UTF8.self),
            size: record.size,
            isDirectory: record.isDirectory,
            modified: Date(timeIntervalSince1970: record.modified),
            created: Date(timeIntervalSince1970: record.created),
            pathBytes: record.path
        )
    }

    /// Whether two items of one path show the same size and content change date.
    private static func same(_ a: NSMetadataItem, _ b: NSMetadataItem) -> Bool {
        (a.value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber)
            == (b.value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber)
            && (a.value(forAttribute: NSMetadataItemFSContentChangeDateKey) as? Date)
                == (b.value(forAttribute: NSMetadataItemFSContentChangeDateKey) as? Date)
    }

    /// A new connection: the query gathers again, and the difference is told as changes.
    mutating func restart() {
        indexIfPending()
        gathering = [:]
        arrivals = GatheringArrivals()
    }

    /// Makes ``current`` from the first gathering's arrivals, if that is still to do: the first gathering orders its
    /// results from its arrivals alone, and its index by path is made when first needed (at the first change), not
    /// while the user waits for the end of the gathering (100,000 hashed inserts were a third of the client's work).
    private mutating func indexIfPending() {
        guard indexPending else { return }
        indexPending = false
        current = arrivals.index()
        arrivals = GatheringArrivals()
    }

    mutating func receive(_ message: Filecoord_V1_QueryItems) -> Step {
        if gathering != nil {
            // The first gathering in path order goes to `arrivals` only (see `indexIfPending`); any other is kept
            // by path, to be compared with what was there.
            let arriving = !firstGatheringDone && sortKeys.isEmpty
            if !arriving { indexIfPending() }
            // Changes of a scope already gathered may come while another scope is (or during a gathering again):
            // they apply to what is being gathered.
            for records in [message.added, message.changed] {
                for record in records {
                    let item = Self.item(record)
                    let kept = predicate(item) ? item : nil
                    if arriving {
                        arrivals.add(record.path, kept)
                    } else {
                        gathering?[Path([UInt8](record.path))] = kept
                    }
                }
            }
            for bytes in message.removed {
                if arriving { arrivals.add(bytes, nil) } else { gathering?[Path([UInt8](bytes))] = nil }
            }
            if arriving { arrivals.sortNewArrivals() }
            guard message.gathered, let gathered = gathering else {
                return firstGatheringDone
                    ? .nothing : .gatheringProgress(count: Int(clamping: message.gatheredCount))
            }
            gathering = nil
            if !firstGatheringDone {
                firstGatheringDone = true
                if arriving {
                    results = RankedTree(arrivals.merge())
                    indexPending = true
                } else {
                    current = gathered
                    order()
                }
                return .finishedGathering
            }
            // What the gathering found is the truth now: changes pending from before it (the connection was lost
            // while a batch waited) are compared again with it, not told on top of it.
            pending = [:]
            for (path, item) in gathered {
                if let old = current[path], Self.same(old, item) { continue }
                pending[path] = .some(item)
            }
            for path in current.keys where gathered[path] == nil { pending[path] = .some(nil) }
            return pending.isEmpty ? .nothing : .changesPending
        }
        indexIfPending()
        for record in message.added + message.changed {
            let path = Path([UInt8](record.path))
            let item = Self.item(record)
            if predicate(item) {
                pending[path] = .some(item)
            } else if current[path] != nil || pending[path] != nil {
                pending[path] = .some(nil)
            }
        }
        for bytes in message.removed {
            let path = Path([UInt8](bytes))
            if current[path] != nil || pending[path] != nil { pending[path] = .some(nil) }
        }
        return pending.isEmpty ? .nothing : .changesPending
    }

    /// Applies the pending changes to the results; returns them as told (added, changed, removed), each in path order.
    mutating func applyPending() -> (added: [NSMetadataItem], changed: [NSMetadataItem], removed: [NSMetadataItem]) {
        indexIfPending()
        var added: [NSMetadataItem] = []
        var changed: [NSMetadataItem] = []
        var removed: [NSMetadataItem] = []
        // What the results lose, gain, and have replaced where it stands (a changed item keeps its place when the
        // order is the paths'; with sort keys it leaves and arrives again).
        var leaving: [NSMetadataItem] = []
        var arriving: [NSMetadataItem] = []
        var inPlace: [NSMetadataItem] = []
        for (path, change) in pending.sorted(by: { $0.key < $1.key }) {
            switch (current[path], change) {
            case (nil, let item?):
                current[path] = item
                added.append(item)
                arriving.append(item)
            case (let old?, let item?):
                current[path] = item
                changed.append(item)
                if sortKeys.isEmpty {
                    inPlace.append(item)
                } else {
                    leaving.append(old)
                    arriving.append(item)
                }
            case (let old?, nil):
                current[path] = nil
                removed.append(old)
                leaving.append(old)
            case (nil, nil):
                continue
            }
        }
        pending = [:]
        if !place(leaving: leaving, arriving: arriving, inPlace: inPlace) { order() }
        return (added, changed, removed)
    }
}
