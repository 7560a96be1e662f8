import FCCore
import NIOCore
import NIOEmbedded
import Testing

@testable import FCDaemon

/// ``FlushBatcher``'s rule, on embedded channels of one `EmbeddedEventLoop`: each connection written to in a loop
/// tick is flushed once, at the end of the tick, however many frames it got; a later tick flushes again.
@Suite struct FlushBatcherTests {
    @Test func eachConnectionIsFlushedOncePerLoopTick() throws {
        let loop = EmbeddedEventLoop()
        let firstCounter = WriteBatchingTests.FlushCounter()
        let secondCounter = WriteBatchingTests.FlushCounter()
        let first = EmbeddedChannel(handler: firstCounter, loop: loop)
        let second = EmbeddedChannel(handler: secondCounter, loop: loop)
        let batcher = FlushBatcher(loop: loop)
        func write(_ channel: EmbeddedChannel, for client: UInt64) {
            channel.write(ByteBuffer(bytes: [1]), promise: nil)
            batcher.wrote(on: channel, for: ClientID(client))
        }

        for _ in 0..<3 { write(first, for: 1) }
        write(second, for: 2)
        write(first, for: 1)
        #expect(firstCounter.flushes == 0)  // Not before the end of the tick.
        loop.run()
        #expect(firstCounter.writes == 4)
        #expect(firstCounter.flushes == 1)
        #expect(secondCounter.flushes == 1)
        #expect(batcher.statistics.frames == 5)
        #expect(batcher.statistics.flushes == 2)

        write(second, for: 2)
        loop.run()
        #expect(firstCounter.flushes == 1)
        #expect(secondCounter.flushes == 2)
        loop.run()  // Nothing written: nothing flushed.
        #expect(batcher.statistics.flushes == 3)
        _ = try first.finish(acceptAlreadyClosed: true)
        _ = try second.finish(acceptAlreadyClosed: true)
    }
}
