import FCProtocol
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

    static func paths(_ items: [NSMetadataItem]) -> [String] {
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
}
