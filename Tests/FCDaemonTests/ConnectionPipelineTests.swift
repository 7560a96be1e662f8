import FCCore
import FCProtocol
import FCSystem
import FCTestSupport
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@_spi(Fuzzing) @testable import FCDaemon

/// One daemon connection's pipeline on an `EmbeddedChannel` and an `EmbeddedEventLoop` whose clock the test moves:
/// ``FrameChannelDecoder``, ``HandshakeHandler`` and ``SessionHandler`` with a real ``ArbiterHost``, the peer's
/// credentials injected (an embedded channel has no socket).
struct EmbeddedConnection {
    let loop: EmbeddedEventLoop
    let host: ArbiterHost
    let channel: EmbeddedChannel
    private var decoder = FrameDecoder(accepting: .toClient)

    /// The credentials of a process of this user.
    static let ownCredentials = PeerCredentials(pid: ProcessIdentity.processID, uid: ProcessIdentity.userID, gid: 0)

    static func configuration(_ adjust: (inout DaemonConfiguration) -> Void = { _ in }) -> DaemonConfiguration {
        var configuration = DaemonConfiguration(
            socketPath: NSTemporaryDirectory() + "fc-pipeline-\(UUID().uuidString)",
            presenterTimeout: nil,
            deadlockDetectionDelay: .seconds(3600)
        )
        configuration.watchesFileSystem = false
        // No session bus's portal: a test that wants one gives its own (DocumentPortalLookupTests).
        configuration.mapsDocumentPortalPaths = false
        configuration.versionStoreDirectory = NSTemporaryDirectory() + "fc-pipeline-versions-\(UUID().uuidString)"
        adjust(&configuration)
        return configuration
    }

    /// A connection to a new host, made active (which runs the peer check).
    init(
        configuration: DaemonConfiguration = Self.configuration(),
        credentials: PeerCredentials = Self.ownCredentials
    ) throws {
        let loop = EmbeddedEventLoop()
        try self.init(
            host: ArbiterHost(loop: loop, configuration: configuration, logger: Logger(label: "test")),
            credentials: credentials
        )
    }

    /// Another connection to `host`, made active.
    init(host: ArbiterHost, credentials: PeerCredentials = Self.ownCredentials) throws {
        guard let loop = host.loop as? EmbeddedEventLoop else { preconditionFailure("an embedded host") }
        self.loop = loop
        self.host = host
        channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addConnectionHandlers(host: host) { channel in
            channel.eventLoop.makeSucceededFuture(credentials)
        }
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/filecoordd-test")).wait()
    }

    /// Sends raw bytes, as one read.
    func send(bytes: [UInt8]) throws {
        try channel.writeInbound(ByteBuffer(bytes: bytes))
        loop.run()
    }

    /// Sends a frame, as one read.
    func send(_ frame: Filecoord_V1_Frame) throws {
        try send(bytes: FrameEncoder().encode(frame))
    }

    /// Says hello with the current protocol version.
    func hello(name: String = "test") throws {
        try send(Filecoord_V1_Frame(.hello(Filecoord_V1_Hello(clientName: name, pid: ProcessIdentity.processID))))
    }

    /// The frames the daemon sent since the last call.
    mutating func received() throws -> [Filecoord_V1_Frame] {
        loop.run()
        var frames: [Filecoord_V1_Frame] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            frames += try decoder.feed(buffer.readableBytesView)
        }
        return frames
    }

    /// The reasons of the `ProtocolError` frames among `frames`.
    static func protocolErrors(_ frames: [Filecoord_V1_Frame]) -> [String] {
        frames.compactMap { frame in
            if case .protocolError(let error)? = frame.payload { return error.reason }
            return nil
        }
    }

    /// A write claim on `path`, as a client sends it.
    static func writeClaim(_ id: UInt64, path: String) -> Filecoord_V1_Frame {
        WireFrames.writeClaim(id, path: path, purpose: "test \(id)")
    }

    /// A presenter registration of `path`, as a client sends it.
    static func presenter(_ id: UInt64, path: String) -> Filecoord_V1_Frame {
        var registration = Filecoord_V1_RegisterPresenter()
        registration.presenterID = id
        registration.path = Data(path.utf8)
        return Filecoord_V1_Frame(.registerPresenter(registration))
    }
}

/// ``FrameChannelDecoder`` alone: bytes in, frames or a ``ProtocolError`` out (docs/PROTOCOL.md §1, §6).
@Suite struct FrameChannelDecoderTests {
    static let timeout = Duration.milliseconds(300)

    /// A connected channel with the decoder alone.
    private static func channel(maximumFrameSize: Int = 1024) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(
            handler: ByteToMessageHandler(
                FrameChannelDecoder(maximumFrameSize: maximumFrameSize, partialFrameTimeout: timeout)
            )
        )
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/filecoordd-test")).wait()
        return channel
    }

    private static let hello = Filecoord_V1_Frame(.hello(Filecoord_V1_Hello(clientName: "a", pid: 1)))

    private static func frames(_ channel: EmbeddedChannel) throws -> [Filecoord_V1_Frame] {
        var frames: [Filecoord_V1_Frame] = []
        while let frame = try channel.readInbound(as: Filecoord_V1_Frame.self) { frames.append(frame) }
        return frames
    }

    private static func protocolError(_ body: () throws -> Void) -> ProtocolError? {
        do {
            try body()
            return nil
        } catch {
            return error as? ProtocolError
        }
    }

    @Test func framesSplitAnywhereAndSeveralPerReadAreDecodedInOrder() throws {
        let channel = try Self.channel()
        let bytes =
            try FrameEncoder().encode(Self.hello) + FrameEncoder().encode(EmbeddedConnection.presenter(7, path: "/a"))
        // Byte by byte, then both frames in one read.
        for byte in bytes { try channel.writeInbound(ByteBuffer(bytes: [byte])) }
        try channel.writeInbound(ByteBuffer(bytes: bytes + bytes))
        let frames = try Self.frames(channel)
        #expect(
            frames.map { $0.payload?.messageName }
                == Array(repeating: ["Hello", "RegisterPresenter"], count: 3).flatMap { $0 }
        )
        _ = try channel.finish()
    }

    @Test func oversizedEmptyMalformedAndWrongWayFramesAreProtocolErrors() throws {
        // The length prefix alone is enough to refuse an oversized frame: nothing of its body is waited for.
        let oversized = Self.protocolError { try Self.channel().writeInbound(ByteBuffer(bytes: [0, 0, 4, 1])) }
        #expect(oversized?.code == .frameTooLarge)
        let empty = Self.protocolError { try Self.channel().writeInbound(ByteBuffer(bytes: [0, 0, 0, 0])) }
        #expect(empty?.code == .emptyFrame)
        let garbage = Self.protocolError {
            try Self.channel().writeInbound(ByteBuffer(bytes: [0, 0, 0, 3, 0xFF, 0xFF, 0xFF]))
        }
        #expect(garbage?.code == .malformedFrame)
        var granted = Filecoord_V1_Granted()
        granted.claimID = 1
        let wrongWay = try FrameEncoder().encode(Filecoord_V1_Frame(.granted(granted)))
        let unexpected = Self.protocolError { try Self.channel().writeInbound(ByteBuffer(bytes: wrongWay)) }
        #expect(unexpected?.code == .unexpectedMessage)
    }

    @Test func aFrameLeftIncompleteFailsAfterThePartialFrameTimeout() throws {
        let channel = try Self.channel()
        let loop = channel.embeddedEventLoop
        let bytes = try FrameEncoder().encode(Self.hello)
        try channel.writeInbound(ByteBuffer(bytes: Array(bytes.prefix(5))))
        loop.advanceTime(by: TimeAmount(Self.timeout) - .milliseconds(1))
        try channel.throwIfErrorCaught()  // Not yet.
        loop.advanceTime(by: .milliseconds(1))
        let error = Self.protocolError { try channel.throwIfErrorCaught() }
        #expect(error?.code == .malformedFrame)
        #expect(
            error.map { "\($0)".contains("stayed incomplete") && "\($0)".contains("5 bytes") } == true,
            "\(String(describing: error))"
        )
    }

    @Test func theClockRestartsWithEachCompleteFrameAndStopsWhenNothingWaits() throws {
        let channel = try Self.channel()
        let loop = channel.embeddedEventLoop
        let bytes = try FrameEncoder().encode(Self.hello)
        let step = TimeAmount.milliseconds(200)  // Two thirds of the timeout.
        // A frame and the start of the next, then the rest of it and the start of a third: each part waits less
        // than the timeout, though the connection has had part of a frame buffered for longer.
        try channel.writeInbound(ByteBuffer(bytes: bytes + bytes.prefix(3)))
        loop.advanceTime(by: step)
        try channel.writeInbound(ByteBuffer(bytes: Array(bytes.dropFirst(3)) + bytes.prefix(2)))
        loop.advanceTime(by: step)
        try channel.throwIfErrorCaught()
        try channel.writeInbound(ByteBuffer(bytes: Array(bytes.dropFirst(2))))
        // Nothing waits now: no deadline, however long the connection stays idle.
        loop.advanceTime(by: .seconds(3))
        try channel.throwIfErrorCaught()
        #expect(try Self.frames(channel).count == 3)
        _ = try channel.finish()
    }
}

/// ``HandshakeHandler``: who is admitted, `Hello`, versions, the handshake timeout and the connection cap
/// (docs/PROTOCOL.md §2, §5).
@Suite struct HandshakeHandlerTests {
    @Test func helloIsAnsweredAndTheSessionTakesOver() throws {
        var connection = try EmbeddedConnection()
        try connection.hello()
        let frames = try connection.received()
        guard case .helloReply(let reply)? = frames.first?.payload else {
            Issue.record("expected HelloReply, got \(frames)")
            return
        }
        #expect(reply.protocolVersion == ProtocolVersion.current)
        #expect(reply.daemonPid == ProcessIdentity.processID)
        // The limits it enforces, announced (left out until stop 69).
        let configuration = connection.host.configuration
        #expect(reply.hasLimits)
        #expect(reply.limits.maximumFrameSize == UInt32(configuration.maximumFrameSize))
        #expect(reply.limits.maximumClaimsPerClient == UInt32(configuration.maximumClaimsPerClient))
        #expect(reply.limits.maximumPresentersPerClient == UInt32(configuration.maximumPresentersPerClient))
        #expect(reply.limits.maximumItemsPerClaim == UInt32(ProtocolLimits.defaultMaximumItemsPerClaim))
        #expect(reply.limits.maximumPathLength == UInt32(ProtocolLimits.defaultMaximumPathLength))
        #expect(
            try connection.channel.pipeline.syncOperations.handler(type: SessionHandler.self).pid
                == ProcessIdentity.processID
        )
        // A claim now reaches the arbiter and is granted.
        try connection.send(EmbeddedConnection.writeClaim(1, path: "/d/f"))
        #expect(try connection.received().map { $0.payload?.messageName } == ["Granted"])
        #expect(connection.host.openConnections == 1)
        _ = try connection.channel.finish(acceptAlreadyClosed: true)
        #expect(connection.host.openConnections == 0)
    }

    @Test(arguments: [UInt32(0), ProtocolVersion.supported.upperBound + 1])
    func anotherProtocolVersionIsRefusedNamingBoth(version: UInt32) throws {
        var connection = try EmbeddedConnection()
        var hello = Filecoord_V1_Hello(clientName: "old", pid: 1)
        hello.protocolVersion = version
        try connection.send(Filecoord_V1_Frame(.hello(hello)))
        let frames = try connection.received()
        guard case .refused(let refused)? = frames.first?.payload else {
            Issue.record("expected Refused, got \(frames)")
            return
        }
        #expect(refused.daemonProtocolVersion == ProtocolVersion.current)
        #expect(refused.reason.contains("version \(version)"))
        #expect(!connection.channel.isActive)
        #expect(connection.host.openConnections == 0)
    }

    @Test func garbageBeforeHelloIsAnsweredWithTheReasonAndClosed() throws {
        var connection = try EmbeddedConnection()
        try connection.send(bytes: [0, 0, 0, 4, 0xDE, 0xAD, 0xBE, 0xEF])
        #expect(
            EmbeddedConnection.protocolErrors(try connection.received()).contains { $0.contains("not a valid Frame") }
        )
        #expect(!connection.channel.isActive)
    }

    @Test func aFirstFrameOtherThanHelloIsAProtocolError() throws {
        var connection = try EmbeddedConnection()
        try connection.send(EmbeddedConnection.presenter(1, path: "/a"))
        #expect(
            EmbeddedConnection.protocolErrors(try connection.received()).contains {
                $0.contains("first frame must be Hello, not RegisterPresenter")
            }
        )
        #expect(!connection.channel.isActive)
    }

    @Test func helloTwiceClosesTheConnection() throws {
        var connection = try EmbeddedConnection()
        try connection.hello()
        try connection.hello()
        #expect(
            EmbeddedConnection.protocolErrors(try connection.received()).contains {
                $0.contains("Hello was sent twice")
            }
        )
        #expect(!connection.channel.isActive)
    }

    @Test func anotherUsersProcessIsRefusedWithoutAnAnswer() throws {
        var credentials = EmbeddedConnection.ownCredentials
        credentials.uid &+= 1
        var connection = try EmbeddedConnection(credentials: credentials)
        #expect(!connection.channel.isActive)
        #expect(try connection.received().isEmpty)
        #expect(connection.host.openConnections == 0)
    }

    @Test func noHelloWithinTheHandshakeTimeoutClosesTheConnection() throws {
        var connection = try EmbeddedConnection(
            configuration: EmbeddedConnection.configuration { $0.handshakeTimeout = .seconds(2) }
        )
        connection.loop.advanceTime(by: .milliseconds(1999))
        #expect(connection.channel.isActive)
        connection.loop.advanceTime(by: .milliseconds(1))
        #expect(
            EmbeddedConnection.protocolErrors(try connection.received()).contains {
                $0.contains("no Hello within 2.0 seconds")
            }
        )
        #expect(!connection.channel.isActive)
    }

    @Test func pastTheConnectionCapAConnectionIsRefusedAndAFreedSlotServesAgain() throws {
        var first = try EmbeddedConnection(
            configuration: EmbeddedConnection.configuration { $0.maximumConnections = 1 }
        )
        try first.hello()
        _ = try first.received()
        var second = try EmbeddedConnection(host: first.host)
        #expect(
            EmbeddedConnection.protocolErrors(try second.received()).contains { $0.contains("at most 1 connections") }
        )
        #expect(!second.channel.isActive)
        _ = try first.channel.finish(acceptAlreadyClosed: true)
        var third = try EmbeddedConnection(host: first.host)
        try third.hello()
        #expect(try third.received().first.map { $0.payload?.messageName } == "HelloReply")
    }
}

/// ``SessionHandler``: a client's frames after the handshake, and what fails a claim against what closes the
/// connection (issue 11.5).
@Suite struct SessionHandlerTests {
    @Test func aClaimTheDaemonCannotTakeFailsAloneAndTheConnectionGoesOn() throws {
        var connection = try EmbeddedConnection()
        try connection.hello()
        _ = try connection.received()
        try connection.send(EmbeddedConnection.writeClaim(1, path: "relative/path"))
        let failed = try connection.received()
        guard case .claimFailed(let failure)? = failed.first?.payload else {
            Issue.record("expected ClaimFailed, got \(failed)")
            return
        }
        #expect(failure.claimID == 1)
        #expect(connection.channel.isActive)
        try connection.send(EmbeddedConnection.writeClaim(2, path: "/d/f"))
        #expect(try connection.received().map { $0.payload?.messageName } == ["Granted"])
    }

    @Test func pastTheClaimLimitAClaimFailsAndThePresenterLimitClosesTheConnection() throws {
        var connection = try EmbeddedConnection(
            configuration: EmbeddedConnection.configuration {
                $0.maximumClaimsPerClient = 1
                $0.maximumPresentersPerClient = 1
            }
        )
        try connection.hello()
        _ = try connection.received()
        try connection.send(EmbeddedConnection.writeClaim(1, path: "/d/a"))
        try connection.send(EmbeddedConnection.writeClaim(2, path: "/d/b"))
        let frames = try connection.received()
        #expect(frames.map { $0.payload?.messageName } == ["Granted", "ClaimFailed"])
        #expect(connection.channel.isActive)
        try connection.send(EmbeddedConnection.presenter(1, path: "/d/p"))
        try connection.send(EmbeddedConnection.presenter(2, path: "/d/q"))
        #expect(!EmbeddedConnection.protocolErrors(try connection.received()).isEmpty)
        #expect(!connection.channel.isActive)
        // What it held is released: another client is granted the file the first one held.
        var other = try EmbeddedConnection(host: connection.host)
        try other.hello()
        _ = try other.received()
        try other.send(EmbeddedConnection.writeClaim(1, path: "/d/a"))
        #expect(try other.received().map { $0.payload?.messageName } == ["Granted"])
    }

    @Test func aMalformedFrameAfterTheHandshakeClosesOnlyThatConnection() throws {
        var connection = try EmbeddedConnection()
        try connection.hello()
        _ = try connection.received()
        var other = try EmbeddedConnection(host: connection.host)
        try other.hello()
        _ = try other.received()
        try connection.send(bytes: [0, 0, 0, 2, 0xFF, 0xFF])
        #expect(
            EmbeddedConnection.protocolErrors(try connection.received()).contains { $0.contains("not a valid Frame") }
        )
        #expect(!connection.channel.isActive)
        try other.send(EmbeddedConnection.writeClaim(1, path: "/d/f"))
        #expect(try other.received().map { $0.payload?.messageName } == ["Granted"])
        #expect(other.channel.isActive)
    }
}

/// ``HandshakeProbe``, the fuzz target's way into the real pipeline: the same answers as a connection gets.
@Suite struct HandshakeProbeTests {
    @Test func aHelloIsAnsweredAClaimFirstIsAProtocolErrorAndAPartialFrameWaits() throws {
        let hello = Filecoord_V1_Frame(.hello(Filecoord_V1_Hello(clientName: "probe", pid: 1)))
        let greeted = try HandshakeProbe.feed(try FrameEncoder().encode(hello))
        #expect(greeted.frames.first?.payload?.messageName == "HelloReply")
        #expect(!greeted.closed)

        let claimFirst = try HandshakeProbe.feed(
            try FrameEncoder().encode(EmbeddedConnection.writeClaim(1, path: "/a"))
        )
        #expect(claimFirst.frames.map { $0.payload?.messageName } == ["ProtocolError"])
        #expect(claimFirst.closed)

        let partial = try HandshakeProbe.feed(try FrameEncoder().encode(hello).dropLast())
        #expect(partial.frames.isEmpty)
        #expect(!partial.closed)
    }
}
