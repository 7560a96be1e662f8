import Testing

@testable import FCDaemon

/// How a live query's items are cut into messages (issue 44): by count, and by bytes whatever the paths' lengths, so
/// that no message nears the frame size limit.
@Suite struct QueryMessageRunsTests {
    @Test func runsAreCutByCountAndByBytes() {
        let small = QueryMessageRuns.runs(Array(repeating: 10, count: 5_000)) { $0 }
        #expect(small.map(\.count) == [2_000, 2_000, 1_000])
        // 500-byte paths: about 929 to a message (512 KiB at 564 bytes each).
        let long = QueryMessageRuns.runs(Array(repeating: 500, count: 3_000)) { $0 }
        let perMessage = QueryMessageRuns.bytesPerMessage / (500 + QueryMessageRuns.bytesPerItem)
        #expect(long.dropLast().allSatisfy { $0.count == perMessage }, "\(long.map(\.count))")
        #expect(long.map(\.count).reduce(0, +) == 3_000)
        for run in long {
            #expect(run.reduce(0) { $0 + $1 + QueryMessageRuns.bytesPerItem } <= QueryMessageRuns.bytesPerMessage)
        }
        // An item bigger than a message goes alone; nothing makes no run.
        #expect(QueryMessageRuns.runs([10, 1_000_000, 10]) { $0 }.map(\.count) == [1, 1, 1])
        #expect(QueryMessageRuns.runs([Int]()) { $0 }.isEmpty)
    }
}
