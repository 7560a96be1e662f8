import FCCore
import FCProtocol
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import FCDaemon

/// The daemon writes every frame of a loop pass without flushing, and flushes each connection once at the end of the
/// pass (issue 12), whether the frames came from a client's event or from a timer. Observed on embedded channels
/// with a handler that counts the flushes that reach the socket's end of the pipeline.
@Suite struct WriteBatchingTests {
    /// Counts writes and flushes on their way to the socket.
    final class FlushCounter: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        var writes = 0
        var flushes = 0

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            writes += 1
            context.write(data, promise: promise)
        }

        func flush(context: ChannelHandlerContext) {
            flushes += 1
            context.flush()
        }
    }

    private static func path(_ string: String) -> ItemPath {
        do { return try ItemPath(absolute: string) } catch { preconditionFailure("\(error)") }
    }

    /// The frames a channel was sent, decoded.
    private static func frames(_ channel: EmbeddedChannel) throws -> [Filecoord_V1_Frame] {
        var decoder = FrameDecoder(accepting: .toClient)
        var frames: [Filecoord_V1_Frame] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            frames += try decoder.feed(buffer.readableBytesView)
        }
        return frames
    }

    @Test func framesOfOnePassAreFlushedOncePerConnectionTimersIncluded() throws {
        let loop = EmbeddedEventLoop()
        var configuration = DaemonConfiguration(
            socketPath: NSTemporaryDirectory() + "fc-batching-\(UUID().uuidString)",
            presenterTimeout: .milliseconds(200),
            deadlockDetectionDelay: .seconds(3600)
        )
        configuration.watchesFileSystem = false
        configuration.mapsDocumentPortalPaths = false
        configuration.versionStoreDirectory = NSTemporaryDirectory() + "fc-batching-versions-\(UUID().uuidString)"
        let host = ArbiterHost(loop: loop, configuration: configuration, logger: Logger(label: "test"))
        let presenterCounter = FlushCounter()
        let writerCounter = FlushCounter()
        let presenterChannel = EmbeddedChannel(handler: presenterCounter, loop: loop)
        let writerChannel = EmbeddedChannel(handler: writerCounter, loop: loop)
        let presenters = host.accept(presenterChannel, pid: 1, name: "presenters")
        let writer = host.accept(writerChannel, pid: 2, name: "writer")

        // Three presenters of /d/f, then a write of /d/f: three requests for one client in one event.
        for index in 1...3 {
            host.receive(
                .presenterAdded(
                    PresenterRegistration(id: PresenterID(UInt64(index)), client: presenters, path: Self.path("/d/f"))
                ),
                from: presenters
            )
        }
        host.receive(
            .claimRequested(
                ClaimRequest(
                    id: ClaimID(1),
                    client: writer,
                    coordinator: CoordinatorID(1),
                    purpose: PurposeID("writer"),
                    items: [ClaimItem(path: Self.path("/d/f"), access: .write([]))]
                )
            ),
            from: writer
        )
        loop.run()
        let requests = try Self.frames(presenterChannel)
        let early = try Self.frames(writerChannel)
        #expect(early.isEmpty, "\(early)")
        #expect(requests.count == 3)
        #expect(requests.allSatisfy { if case .presenterMessage = $0.payload { true } else { false } })
        #expect(presenterCounter.writes == 3)
        #expect(presenterCounter.flushes == 1)  // One per frame before issue 12.
        #expect(writerCounter.writes == 0)
        // The three presenter timeouts and the claim's deadlock check, in the host's heap (one NIO timer).
        #expect(host.scheduledTimerCount == 4)

        // Nobody answers: the three timeouts fall due together; the grant they allow is flushed by the same pass.
        loop.advanceTime(to: .now() + .seconds(1))  // The embedded loop's clock, moved to the real clock's time.
        loop.run()
        let grants = try Self.frames(writerChannel)
        #expect(grants.count == 1)
        if case .granted? = grants.first?.payload {} else { Issue.record("expected a grant, got \(grants)") }
        #expect(writerCounter.flushes == 1)
        #expect(host.scheduledTimerCount == 0)
        #expect(host.flushStatistics.frames >= 4)
        _ = try presenterChannel.finish(acceptAlreadyClosed: true)
        _ = try writerChannel.finish(acceptAlreadyClosed: true)
    }
}
