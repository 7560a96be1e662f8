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
    /// The results in order, made when they change (not at each read).
    private(set) var results: [NSMetadataItem] = []
    /// The paths of ``results``, in the same order (made with the index after the first gathering,
    /// ``indexIfPending()``): a batch's changes are found and placed in the results by binary search on them
    /// (``place(leaving:arriving:inPlace:)``), not by sorting all the results again.
    private var resultPaths: [Path] = []
    /// How many times every result was sorted again (for the tests: a batch of changes never needs it).
    private(set) var fullSorts = 0
    /// A gathering in progress (the first, or again after a new connection).
    private var gathering: [Path: NSMetadataItem]? = [:]
    private var firstGatheringDone = false
    /// The first gathering's arrivals, for its order (sorted a message at a time), and then for ``current``.
    private var arrivals = GatheringArrivals()
    /// ``current`` is still to be made from ``arrivals`` (``indexIfPending()``).
    private var indexPending = false
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
        results = order.map { entries[$0].value }
        resultPaths = order.map { entries[$0].key }
        fullSorts += 1
    }

    /// Whether `a` (at `aPath`) comes before `b` (at `bPath`) in ``results``: ``order()``'s order.
    private func precedes(_ a: NSMetadataItem, _ aPath: Path, _ b: NSMetadataItem, _ bPath: Path) -> Bool {
        for (key, ascending) in sortKeys {
            let result = Self.compare(a.value(forAttribute: key), b.value(forAttribute: key))
            if result != .orderedSame { return (result == .orderedAscending) == ascending }
        }
        return aPath < bPath
    }

    /// The first place in ``results`` whose item does not come before `item` at `path`: where it is, or would go.
    private func place(of item: NSMetadataItem, at path: Path) -> Int {
        var low = 0
        var high = results.count
        while low < high {
            let middle = low + (high - low) / 2
            if precedes(results[middle], resultPaths[middle], item, path) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }

    /// Applies one batch to the ordered results: `leaving` (items to take out, as the results hold them), `arriving`
    /// (items to put in) and `inPlace` (items that replace the one of their path where it stands). O(k log n)
    /// comparisons for k changes of n results, and one copy of the results when items come or go. `false` if an
    /// item to take out or replace is not where the order puts it (never expected): the caller sorts them all.
    private mutating func place(
        leaving: [(Path, NSMetadataItem)],
        arriving: [(Path, NSMetadataItem)],
        inPlace: [(Path, NSMetadataItem)]
    ) -> Bool {
        guard resultPaths.count == results.count else { return false }
        for (path, item) in inPlace {
            // The same path, so the same place (no sort keys: the order is the paths').
            let index = place(of: item, at: path)
            guard index < results.count, resultPaths[index] == path else { return false }
            results[index] = item
        }
        guard !leaving.isEmpty || !arriving.isEmpty else { return true }
        var out: [Int] = []
        out.reserveCapacity(leaving.count)
        for (path, item) in leaving {
            let index = place(of: item, at: path)
            guard index < results.count, resultPaths[index] == path else { return false }
            out.append(index)
        }
        out.sort()
        // Each arriving item's place among the results as they were, in the results' order (two at one place in
        // their own order; a changed item's old self, which leaves, never comes before its new self).
        let sorted = sortKeys.isEmpty ? arriving : arriving.sorted { precedes($0.1, $0.0, $1.1, $1.0) }
        let places = sorted.map { place(of: $0.1, at: $0.0) }
        var items: [NSMetadataItem] = []
        var paths: [Path] = []
        let count = results.count - out.count + sorted.count
        items.reserveCapacity(count)
        paths.reserveCapacity(count)
        var next = 0
        var nextOut = 0
        for index in 0...results.count {
            while next < sorted.count, places[next] == index {
                paths.append(sorted[next].0)
                items.append(sorted[next].1)
                next += 1
            }
            guard index < results.count else { break }
            if nextOut < out.count, out[nextOut] == index {
                nextOut += 1
                continue
            }
            items.append(results[index])
            paths.append(resultPaths[index])
        }
        results = items
        resultPaths = paths
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
            created: Date(timeIntervalSince1970: record.created)
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
        (current, resultPaths) = arrivals.index()
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
                    results = arrivals.merge()
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
        var leaving: [(Path, NSMetadataItem)] = []
        var arriving: [(Path, NSMetadataItem)] = []
        var inPlace: [(Path, NSMetadataItem)] = []
        for (path, change) in pending.sorted(by: { $0.key < $1.key }) {
            switch (current[path], change) {
            case (nil, let item?):
                current[path] = item
                added.append(item)
                arriving.append((path, item))
            case (let old?, let item?):
                current[path] = item
                changed.append(item)
                if sortKeys.isEmpty {
                    inPlace.append((path, item))
                } else {
                    leaving.append((path, old))
                    arriving.append((path, item))
                }
            case (let old?, nil):
                current[path] = nil
                removed.append(old)
                leaving.append((path, old))
            case (nil, nil):
                continue
            }
        }
        pending = [:]
        if !place(leaving: leaving, arriving: arriving, inPlace: inPlace) { order() }
        return (added, changed, removed)
    }
}
