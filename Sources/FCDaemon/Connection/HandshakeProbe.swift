import FCFileSystemPolicy
public import FCProtocol
import FCSystem
import Foundation
import Logging
import NIOCore
import NIOEmbedded

/// A new connection's first bytes through the daemon's real pipeline (``FrameChannelDecoder``,
/// ``HandshakeHandler``, then ``SessionHandler``) on an `EmbeddedChannel`, with what the daemon answered: for the
/// handshake's fuzz target (Fuzz/Sources/fuzz-handshake), which judges the daemon's own code, not a restatement of its
/// rule.
///
/// Each probe is a new connection from a process of this user to a new host on a new event loop (no watcher, no
/// portal, no deadlock timer worth running), closed at the end: nothing of one input reaches the next.
///
/// - Important: Thread-safe (no shared state); each call runs on the caller's thread.
@_spi(Fuzzing) public enum HandshakeProbe {
    /// What the daemon did with a connection's first bytes.
    public struct Outcome: Sendable {
        /// The frames it wrote back, in order.
        public var frames: [Filecoord_V1_Frame]
        /// Whether it closed the connection.
        public var closed: Bool
    }

    /// The largest frame the probe's daemon accepts.
    public static var maximumFrameSize: Int { configuration.maximumFrameSize }

    /// The path rules the probe's daemon makes canonical paths by (a `Hello` stating others is refused).
    public static var pathRules: UInt32 { PathRules.revision }

    /// Feeds `bytes` to a new connection as one read and returns what the daemon answered.
    ///
    /// - Throws: if the pipeline cannot be set up, or the daemon wrote bytes that are not frames to a client.
    public static func feed(_ bytes: some Collection<UInt8>) throws -> Outcome {
        let loop = EmbeddedEventLoop()
        // Nothing on the fuzzer's output: every refused client would log a warning.
        let silent = Logger(label: "probe") { _ in SwiftLogNoOpLogHandler() }
        let host = ArbiterHost(loop: loop, configuration: configuration, logger: silent)
        defer { try? loop.syncShutdownGracefully() }
        let channel = EmbeddedChannel(loop: loop)
        let credentials = PeerCredentials(pid: ProcessIdentity.processID, uid: ProcessIdentity.userID, gid: 0)
        try channel.pipeline.syncOperations.addConnectionHandlers(host: host) { channel in
            channel.eventLoop.makeSucceededFuture(credentials)
        }
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/filecoordd-probe")).wait()
        var buffer = channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        // A frame the pipeline rejects closes the channel from inside: the error is the outcome, not the probe's.
        _ = try? channel.writeInbound(buffer)
        loop.run()
        var frames: [Filecoord_V1_Frame] = []
        var decoder = FrameDecoder(accepting: .toClient)
        while let written = try channel.readOutbound(as: ByteBuffer.self) {
            frames += try decoder.feed(written.readableBytesView)
        }
        let closed = !channel.isActive
        if !closed { _ = try? channel.close().wait() }
        loop.run()
        return Outcome(frames: frames, closed: closed)
    }

    /// The probe's daemon: no watcher, no portal, a deadlock check an hour away, nothing done off the probe's thread.
    private static var configuration: DaemonConfiguration {
        var configuration = DaemonConfiguration(
            socketPath: NSTemporaryDirectory() + "fc-handshake-probe-\(ProcessIdentity.processID)",
            presenterTimeout: nil,
            deadlockDetectionDelay: .seconds(3600)
        )
        configuration.watchesFileSystem = false
        configuration.mapsDocumentPortalPaths = false
        configuration.runsOffLoopWorkInline = true
        // No mount of the machine's: the fuzzer's results must not depend on them, nor wait for a device.
        configuration.mountTable = { MountTable(parsing: []) }
        configuration.mountTableChanged = { false }
        configuration.versionStoreDirectory =
            NSTemporaryDirectory() + "fc-handshake-probe-versions-\(ProcessIdentity.processID)"
        return configuration
    }
}
