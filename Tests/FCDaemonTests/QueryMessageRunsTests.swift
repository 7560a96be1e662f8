import FCCore
import FCSystem
import Testing

@testable import FCDaemon

/// How a live query's items are packed into messages (issue 44): one message for a small batch, added and changed
/// items before removals; cut by count, and by bytes whatever the paths' lengths, so that no message nears the frame
/// size limit.
@Suite struct QueryMessageRunsTests {
    private func path(_ index: Int, length: Int = 8) -> ItemPath {
        let name = String(index) + String(repeating: "x", count: max(0, length - String(index).count - 3))
        return try! ItemPath(absolute: "/t/" + name)
    }
    private let metadata = ItemMetadata(size: 1, isDirectory: false, modified: 1, changed: 1)

    @Test func aSmallBatchIsOneMessage() {
        let messages = QueryMessageRuns.pack(
            added: [(path(1), metadata)],
            changed: [(path(2), metadata)],
            removed: [path(3)]
        )
        #expect(messages.count == 1)
        #expect(
            messages.first.map { ($0.added.count, $0.changed.count, $0.removed) } ?? (0, 0, []) == (1, 1, [path(3)])
        )
        #expect(QueryMessageRuns.pack(added: [], removed: []).isEmpty)
    }

    @Test func bigBatchesAreCutByCountAndByBytesWithRemovalsLast() {
        let small = QueryMessageRuns.pack(added: (0..<4_500).map { (path($0), metadata) }, removed: [path(9_999)])
        #expect(small.map { $0.added.count + $0.removed.count } == [2_000, 2_000, 501])
        #expect(small.dropLast().allSatisfy { $0.removed.isEmpty } && small.last?.removed == [path(9_999)])
        // 500-byte paths: about 929 to a message (512 KiB at 564 bytes each), removals cut the same way.
        let removed = (0..<3_000).map { path($0, length: 500) }
        let long = QueryMessageRuns.pack(added: [], removed: removed)
        let perMessage = QueryMessageRuns.bytesPerMessage / (500 + QueryMessageRuns.bytesPerItem)
        #expect(long.dropLast().allSatisfy { $0.removed.count == perMessage }, "\(long.map(\.removed.count))")
        #expect(long.flatMap(\.removed) == removed)
    }
}
