import FCProtocol
import FCTestSupport
import Foundation
import Testing

@testable import FileCoordination

/// A live query's result set (issue 44), fed `QueryItems` as the daemon sends them: a gathering in any order comes
/// out in path order, and a changed item takes its place in the results, as an added one takes its own.
@Suite struct MetadataQueryResultsTests {
    static func record(_ path: String, size: Int64) -> Filecoord_V1_QueryItem {
        var record = Filecoord_V1_QueryItem()
        record.path = Data(path.utf8)
        record.size = size
        record.modified = 1_000
        record.created = 1_000
        return record
    }

    static func paths(_ items: some Sequence<NSMetadataItem>) -> [String] {
        items.compactMap { $0.value(forAttribute: NSMetadataItemPathKey) as? String }
    }

    @Test func aGatheringInAnyOrderIsInPathOrderAndAChangeKeepsItsPlace() throws {
        var results = MetadataQueryResults(predicate: { _ in true })
        var gathered = Filecoord_V1_QueryItems()
        gathered.added = [Self.record("/t/c", size: 1), Self.record("/t/a", size: 1), Self.record("/t/b", size: 1)]
        gathered.gathered = true
        gathered.gatheredCount = 3
        guard case .finishedGathering = results.receive(gathered) else {
            Issue.record("the gathering did not finish")
            return
        }
        #expect(Self.paths(results.results) == ["/t/a", "/t/b", "/t/c"])

        var change = Filecoord_V1_QueryItems()
        change.changed = [Self.record("/t/b", size: 7)]
        change.added = [Self.record("/t/aa", size: 2)]
        guard case .changesPending = results.receive(change) else {
            Issue.record("no change pending")
            return
        }
        let (added, changed, removed) = results.applyPending()
        #expect(Self.paths(added) == ["/t/aa"] && Self.paths(changed) == ["/t/b"] && removed.isEmpty)
        #expect(Self.paths(results.results) == ["/t/a", "/t/aa", "/t/b", "/t/c"])
        #expect(results.results[2].value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber == 7)

        // A change alone (no item added or removed) replaces the item in place.
        var alone = Filecoord_V1_QueryItems()
        alone.changed = [Self.record("/t/c", size: 9)]
        _ = results.receive(alone)
        _ = results.applyPending()
        #expect(Self.paths(results.results) == ["/t/a", "/t/aa", "/t/b", "/t/c"])
        #expect(results.results[3].value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber == 9)
    }

    @Test func namesThatDifferOnlyInNormalisationAreTwoResultsInByteOrder() throws {
        var results = MetadataQueryResults(predicate: { _ in true })
        var gathered = Filecoord_V1_QueryItems()
        // The decomposed name ("e" and a combining accent) sorts before the composed one by bytes (0x65 < 0xC3).
        gathered.added = [Self.record("/t/caf\u{E9}", size: 1), Self.record("/t/cafe\u{301}", size: 2)]
        gathered.gathered = true
        gathered.gatheredCount = 2
        guard case .finishedGathering = results.receive(gathered) else {
            Issue.record("the gathering did not finish")
            return
        }
        #expect(results.results.count == 2)
        let sizes = results.results.map { $0.value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber }
        #expect(sizes == [2, 1])
    }

    @Test func aGatheringInPiecesKeepsEachPathsLastStateInPathOrder() throws {
        // Items above size 8 do not match.
        var results = MetadataQueryResults(predicate: {
            (($0.value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber)?.intValue ?? 0) <= 8
        })
        var first = Filecoord_V1_QueryItems()
        first.added = ["/t/c", "/t/a", "/t/x", "/t/big"].map { Self.record($0, size: 1) }
        var second = Filecoord_V1_QueryItems()
        second.added = [Self.record("/t/b", size: 1), Self.record("/t/a", size: 5), Self.record("/t/big", size: 9)]
        second.removed = [Data("/t/x".utf8), Data("/t/c".utf8)]
        var last = Filecoord_V1_QueryItems()
        last.added = [Self.record("/t/x", size: 2), Self.record("/t/0", size: 1)]
        last.gathered = true
        for message in [first, second] {
            guard case .gatheringProgress = results.receive(message) else {
                Issue.record("a piece did not count as progress")
                return
            }
        }
        guard case .finishedGathering = results.receive(last) else {
            Issue.record("the gathering did not finish")
            return
        }
        #expect(Self.paths(results.results) == ["/t/0", "/t/a", "/t/b", "/t/x"])
        let sizes = results.results.map { $0.value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber }
        #expect(sizes == [1, 5, 1, 2])
        // The index by path is made at the first change (from what the gathering received), and the change finds
        // its item in it.
        var change = Filecoord_V1_QueryItems()
        change.changed = [Self.record("/t/b", size: 7)]
        guard case .changesPending = results.receive(change) else {
            Issue.record("no change pending")
            return
        }
        let (added, changed, removed) = results.applyPending()
        #expect(added.isEmpty && Self.paths(changed) == ["/t/b"] && removed.isEmpty)
        #expect(results.current.count == 4)
        let after = results.results.map { $0.value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber }
        #expect(after == [1, 5, 7, 2])
    }

    @Test func aGatheredCountPastIntMaxIsProgressNotATrap() {
        var results = MetadataQueryResults(predicate: { _ in true })
        var piece = Filecoord_V1_QueryItems()
        piece.added = [Self.record("/t/a", size: 1)]
        piece.gatheredCount = .max
        guard case .gatheringProgress(let count) = results.receive(piece) else {
            Issue.record("a piece did not count as progress")
            return
        }
        #expect(count == Int.max)
    }

    /// A batch that adds, removes and changes a few of 10,000 results is placed among them by binary search: before,
    /// any item added or removed sorted every result again (O(n log n) comparisons a batch, for one create).
    @Test func aBatchOfChangesToManyResultsIsPlacedWithoutSortingThemAll() throws {
        var results = MetadataQueryResults(predicate: { _ in true })
        var gathered = Filecoord_V1_QueryItems()
        gathered.added = (0..<10_000).reversed().map { Self.record("/t/f\($0)", size: 1) }
        gathered.gathered = true
        guard case .finishedGathering = results.receive(gathered) else {
            Issue.record("the gathering did not finish")
            return
        }
        var batch = Filecoord_V1_QueryItems()
        batch.added = ["/t/a", "/t/f5000x", "/t/z"].map { Self.record($0, size: 2) }
        batch.changed = [Self.record("/t/f7", size: 3), Self.record("/t/f9999", size: 4)]
        batch.removed = [Data("/t/f0".utf8), Data("/t/f5000".utf8)]
        guard case .changesPending = results.receive(batch) else {
            Issue.record("no change pending")
            return
        }
        let (added, changed, removed) = results.applyPending()
        #expect(added.count == 3 && changed.count == 2 && removed.count == 2)
        #expect(results.fullSorts == 0)
        let expected = (Set((0..<10_000).map { "/t/f\($0)" }).subtracting(["/t/f0", "/t/f5000"]))
            .union(["/t/a", "/t/f5000x", "/t/z"])
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        #expect(Self.paths(results.results) == expected)
        let sizes = Dictionary(
            uniqueKeysWithValues: results.results.map {
                (
                    $0.value(forAttribute: NSMetadataItemPathKey) as! String,
                    ($0.value(forAttribute: NSMetadataItemFSSizeKey) as! NSNumber).intValue
                )
            }
        )
        #expect(sizes["/t/f7"] == 3 && sizes["/t/f9999"] == 4 && sizes["/t/f1"] == 1)
    }

    /// A batch among 10,000 results leaves the copy its readers were given as it was, and shares all but a few of
    /// its nodes with it: before, the results were an array shared with the readers, so each batch that added or
    /// removed an item copied all of them (O(n) for one create, Benchmarks/README.md "Live queries").
    @Test func aBatchSharesTheResultsItDoesNotChangeWithTheReadersCopy() throws {
        var results = MetadataQueryResults(predicate: { _ in true })
        var gathered = Filecoord_V1_QueryItems()
        gathered.added = (0..<10_000).map { Self.record("/t/f\($0)", size: 1) }
        gathered.gathered = true
        _ = results.receive(gathered)
        var first = Filecoord_V1_QueryItems()
        first.added = [Self.record("/t/first", size: 1)]
        _ = results.receive(first)
        _ = results.applyPending()
        let published = results.results
        let before = Self.paths(published)
        let items = Array(published)
        var batch = Filecoord_V1_QueryItems()
        batch.added = [Self.record("/t/f5000x", size: 2)]
        batch.changed = [Self.record("/t/f7", size: 3)]
        batch.removed = [Data("/t/f123".utf8)]
        _ = results.receive(batch)
        _ = results.applyPending()
        #expect(Self.paths(published) == before)
        #expect(zip(published, items).allSatisfy { $0 === $1 }, "the readers' copy changed")
        #expect(results.results.count == 10_001 && published.count == 10_001)
        #expect(results.results.invariantViolation() == nil)
        let shared = published.nodeIdentities()
        let new = results.results.nodeIdentities().subtracting(shared)
        // Three changes, each on one path from the root to a leaf (two levels here), and a neighbour or two.
        #expect(new.count <= 12, "\(new.count) of \(shared.count) nodes copied")
        #expect(results.fullSorts == 0)
    }

    /// A change still waiting for its batch when the connection was lost is compared with the gathering on the new
    /// connection, not told on top of it: before, a file added and gone again meanwhile was told as added.
    @Test func aChangePendingAcrossANewConnectionIsComparedWithTheNewGathering() throws {
        var results = MetadataQueryResults(predicate: { _ in true })
        var gathered = Filecoord_V1_QueryItems()
        gathered.added = [Self.record("/t/a", size: 1)]
        gathered.gathered = true
        _ = results.receive(gathered)
        var change = Filecoord_V1_QueryItems()
        change.added = [Self.record("/t/b", size: 1)]
        guard case .changesPending = results.receive(change) else {
            Issue.record("no change pending")
            return
        }
        // The connection is lost before the batch is told; on the new one, b is gone.
        results.restart()
        guard case .nothing = results.receive(gathered) else {
            Issue.record("the gathering again told a change: \(results.pending)")
            return
        }
        let (added, changed, removed) = results.applyPending()
        #expect(added.isEmpty && changed.isEmpty && removed.isEmpty)
        #expect(Self.paths(results.results) == ["/t/a"])
    }

    /// Random batches, with and without a sort key, each checked against every result sorted from scratch.
    @Test(arguments: [false, true]) func randomBatchesLeaveTheResultsAsASortWould(bySize: Bool) throws {
        var random = SplitMix64(seed: bySize ? 7 : 11)
        var results = MetadataQueryResults(
            predicate: { _ in true },
            sortKeys: bySize ? [(key: NSMetadataItemFSSizeKey, ascending: false)] : []
        )
        var sizes: [String: Int64] = [:]
        var gathered = Filecoord_V1_QueryItems()
        for number in 0..<500 {
            let path = "/t/f\(number)"
            sizes[path] = Int64(random.next() % 20)
            gathered.added.append(Self.record(path, size: sizes[path]!))
        }
        gathered.gathered = true
        _ = results.receive(gathered)
        let sortsAfterGathering = results.fullSorts
        for _ in 0..<200 {
            var batch = Filecoord_V1_QueryItems()
            for _ in 0..<Int(random.next() % 6) {
                let path = "/t/f\(random.next() % 700)"
                switch random.next() % 3 {
                case 0:
                    sizes[path] = nil
                    batch.removed.append(Data(path.utf8))
                default:
                    let size = Int64(random.next() % 20)
                    sizes[path] = size
                    // A path named twice in one batch keeps its last state, as the daemon's would.
                    batch.removed.removeAll { $0 == Data(path.utf8) }
                    batch.changed.removeAll { $0.path == Data(path.utf8) }
                    batch.changed.append(Self.record(path, size: size))
                }
            }
            _ = results.receive(batch)
            _ = results.applyPending()
            let expected = sizes.sorted { a, b in
                if bySize, a.value != b.value { return a.value > b.value }
                return Array(a.key.utf8).lexicographicallyPrecedes(Array(b.key.utf8))
            }.map(\.key)
            #expect(Self.paths(results.results) == expected)
            if Self.paths(results.results) != expected { return }
        }
        #expect(results.fullSorts == sortsAfterGathering)
    }
}

/// Which predicates a live query may evaluate on the connection's reading thread: those made from a format only.
@Suite struct FormatPredicatesTests {
    @Test func aFormatPredicateIsKnownABlockPredicateIsNot() {
        let format = NSPredicate(format: "%K == %@", NSMetadataItemFSNameKey, "a.txt")
        let block = NSPredicate { _, _ in true }
        #expect(FormatPredicates.contains(format))
        #expect(!FormatPredicates.contains(block))
    }

    @Test func predicatesGoneAreDroppedFromTheTable() {
        let kept = NSPredicate(format: "%K == %@", NSMetadataItemFSNameKey, "kept")
        for number in 0..<10_000 {
            _ = NSPredicate(format: "%K == %@", NSMetadataItemFSNameKey, "\(number)")
        }
        #expect(FormatPredicates.contains(kept))
        #expect(FormatPredicates.count < 1_000)
    }
}
