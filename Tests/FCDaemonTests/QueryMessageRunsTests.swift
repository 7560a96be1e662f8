import FCCore
import FCProtocol
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

    /// Under a daemon whose frames are smaller than the usual cut (`DaemonConfiguration.maximumFrameSize`), each
    /// message still encodes as a frame: before, a gathering piece of 512 KiB failed to encode under a 64 KiB
    /// limit, the client's connection was closed, and the client met the same piece again on the next one.
    @Test(arguments: [8_192, 65_536, 1 << 20])
    func eachMessageFitsTheDaemonsFrameLimit(maximumFrameSize: Int) throws {
        let budget = QueryMessageRuns.bytesPerMessage(maximumFrameSize: maximumFrameSize)
        #expect(budget <= QueryMessageRuns.bytesPerMessage && budget <= maximumFrameSize / 2)
        let items = (0..<3_000).map { (path($0, length: $0 % 7 == 0 ? 4_000 : 300), metadata) }
        let messages = QueryMessageRuns.pack(added: items, removed: items.map(\.0), bytesPerMessage: budget)
        #expect(messages.flatMap(\.added).count == 3_000 && messages.flatMap(\.removed).count == 3_000)
        let encoder = FrameEncoder(maximumFrameSize: maximumFrameSize)
        for message in messages {
            let queued = QueuedQueryFrame(
                key: QueryService.QueryKey(client: ClientID(rawValue: 1), local: 1),
                .items(
                    added: message.added,
                    changed: message.changed,
                    removed: message.removed,
                    gathered: false,
                    count: 3_000
                )
            )
            var buffer: [UInt8] = []
            try encoder.encode(queued.frame(namespace: nil), into: &buffer)
        }
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
