import FCCore
import FCProtocol
import FCSystem
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import FCDaemon

/// An ``ArbiterHost`` on an `EmbeddedEventLoop`, for tests that drive it with events and read what it wrote to
/// embedded channels.
enum EmbeddedHost {
    /// A host without watcher, document portal or cluster, its version store in a folder of its own; `adjust` sets
    /// what a test needs more.
    static func make(_ loop: EmbeddedEventLoop, _ adjust: (inout DaemonConfiguration) -> Void = { _ in }) -> ArbiterHost
    {
        var configuration = DaemonConfiguration(
            socketPath: NSTemporaryDirectory() + "fc-embedded-\(UUID().uuidString)",
            presenterTimeout: .seconds(30),
            deadlockDetectionDelay: .seconds(3600)
        )
        configuration.watchesFileSystem = false
        configuration.mapsDocumentPortalPaths = false
        configuration.versionStoreDirectory = NSTemporaryDirectory() + "fc-embedded-versions-\(UUID().uuidString)"
        adjust(&configuration)
        return ArbiterHost(loop: loop, configuration: configuration, logger: Logger(label: "test"))
    }

    /// The frames `channel` was sent since the last read.
    static func frames(_ channel: EmbeddedChannel) throws -> [Filecoord_V1_Frame] {
        var decoder = FrameDecoder(accepting: .toClient)
        var frames: [Filecoord_V1_Frame] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            frames += try decoder.feed(buffer.readableBytesView)
        }
        return frames
    }

    /// The ids of the claims `channel` was told granted since the last read.
    static func grants(_ channel: EmbeddedChannel) throws -> [UInt64] {
        DocumentPortalLookupTests.grantedIDs(try frames(channel))
    }

    /// `host` takes over from a stopped daemon that handed on this test's process holding a write of `path`: a
    /// stand-in holds it until the process declares or exits. Returns the process id.
    @discardableResult
    static func handOnWrite(of path: ItemPath, to host: ArbiterHost) throws -> Int32 {
        let me = getpid()
        let holder = HandedOnHolders.Holder(
            pid: me,
            startTime: try #require(ProcessLiveness.startTime(of: me)),
            name: "holder",
            items: [HandedOnHolders.Item(path: path, access: .write([]))],
            maximumHoldMilliseconds: nil
        )
        host.takeOver(
            HandedOnHolders(holders: [holder]),
            marker: NSTemporaryDirectory() + "fc-embedded-marker-\(UUID().uuidString)"
        )
        return me
    }
}
