import FCCore
import FCProtocol
import FCSystem
import Foundation
import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// One client connection: checks the peer's uid, runs the handshake, decodes frames and hands them to the
/// ``ArbiterHost``. A malformed, oversized or out-of-order frame closes this connection only, with the reason logged
/// and sent to the client first.
///
/// - Important: Runs on the host's event loop, like every channel handler of the daemon.
final class ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private enum State {
        case awaitingHello
        case ready(ClientID)
        case closed
    }

    let host: ArbiterHost
    /// Version store requests of this connection not yet answered (at most ``maximumVersionRequestsInFlight``).
    var versionRequestsInFlight = 0
    private var decoder: FrameDecoder
    private var state = State.awaitingHello
    private var peerPID: Int32 = 0
    /// `true` while a dump for this connection is being encoded.
    private var dumpInFlight = false
    /// The client this connection speaks for, from the handshake until the connection is gone.
    private var client: ClientID?
    private let limits: ProtocolLimits
    /// `true` once ``ArbiterHost/connectionOpened()`` counted this connection.
    private var counted = false
    /// Since when the decoder holds part of a frame (`nil`: nothing buffered, or a frame just completed).
    private var partialSince: NIODeadline?
    /// The one timer that checks the handshake and partial-frame deadlines of this connection.
    private var deadlineTimer: Scheduled<Void>?

    init(host: ArbiterHost) {
        self.host = host
        self.limits = ProtocolLimits(
            maximumFrameSize: host.configuration.maximumFrameSize,
            maximumClaimsPerClient: host.configuration.maximumClaimsPerClient,
            maximumPresentersPerClient: host.configuration.maximumPresentersPerClient
        )
        self.decoder = FrameDecoder(maximumFrameSize: host.configuration.maximumFrameSize, accepting: .toDaemon)
    }

    func channelActive(context: ChannelHandlerContext) {
        // Only this user's processes may coordinate through this daemon (SO_PEERCRED). On the channel's own loop
        // the option is read at once, so the callback below runs before this method returns.
        guard let provider = context.channel as? any SocketOptionProvider else {
            refuse("peer credentials unavailable", context: context)
            return
        }
        // NIO owns the descriptor, so NIO reads the option, into `struct ucred` as FCSystem names it.
        let option = PeerCredentials.socketOption
        let future: EventLoopFuture<PeerCredentials.KernelValue> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(option.level),
            name: SocketOptionName(option.name)
        )
        future.assumeIsolated().whenComplete { kernelResult in
            switch kernelResult.map({ PeerCredentials($0) }) {
            case .failure(let error):
                self.refuse("peer credentials unavailable: \(error)", context: context)
            case .success(let credentials) where credentials.uid != getuid():
                self.refuse(
                    "peer uid \(credentials.uid) (pid \(credentials.pid)) is not this daemon's uid \(getuid())",
                    context: context
                )
            case .success(let credentials):
                self.peerPID = credentials.pid
                guard self.host.connectionOpened() else {
                    let cap = self.host.configuration.maximumConnections
                    // Before the handshake: fail(_:context:) logs it, sends the reason and closes.
                    self.fail(
                        ProtocolError(
                            .limitExceeded,
                            "filecoordd serves at most \(cap) connections at once and has that many; close idle "
                                + "clients, or start filecoordd with a higher --max-connections"
                        ),
                        context: context
                    )
                    return
                }
                self.counted = true
                // A connection that never says Hello must not hold a descriptor for ever.
                self.armDeadline(at: .now() + TimeAmount(self.host.configuration.handshakeTimeout), context: context)
                context.fireChannelActive()
            }
        }
    }

    /// Schedules the deadline check (one timer per connection; a later call replaces it).
    private func armDeadline(at deadline: NIODeadline, context: ChannelHandlerContext) {
        deadlineTimer?.cancel()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        deadlineTimer = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.checkDeadlines(context: context)
        }
    }

    /// Closes the connection if it is still in its handshake after the handshake timeout, or if a frame has stayed
    /// incomplete for the partial-frame timeout (issues 11.4, 11.6); otherwise waits for the next deadline.
    private func checkDeadlines(context: ChannelHandlerContext) {
        deadlineTimer = nil
        let configuration = host.configuration
        switch state {
        case .closed:
            return
        case .awaitingHello:
            fail(
                ProtocolError(.unexpectedMessage, "no Hello within \(configuration.handshakeTimeout) of connecting"),
                context: context
            )
        case .ready:
            guard let since = partialSince else { return }
            let deadline = since + TimeAmount(configuration.partialFrameTimeout)
            if deadline <= .now() {
                fail(
                    ProtocolError(
                        .malformedFrame,
                        "a frame stayed incomplete for \(configuration.partialFrameTimeout) "
                            + "(\(decoder.bufferedByteCount) bytes received of it)"
                    ),
                    context: context
                )
            } else {
                armDeadline(at: deadline, context: context)
            }
        }
    }

    private func refuse(_ reason: String, context: ChannelHandlerContext) {
        host.logger.warning("connection refused: \(reason)")
        state = .closed
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        decoder.append(buffer.readableBytesView)
        var completed = false
        do {
            while case .some(let frame) = try decoder.next() {
                completed = true
                try handle(frame, context: context)
                if case .closed = state { return }
            }
        } catch {
            fail(error, context: context)
            return
        }
        // Part of a frame is buffered: it must be completed within the partial-frame timeout, counted from when it
        // began (or from the last complete frame).
        if decoder.bufferedByteCount == 0 {
            partialSince = nil
        } else if completed || partialSince == nil {
            partialSince = .now()
            if case .ready = state, deadlineTimer == nil {
                armDeadline(at: partialSince! + TimeAmount(host.configuration.partialFrameTimeout), context: context)
            }
        }
    }

    private func handle(_ frame: Filecoord_V1_Frame, context: ChannelHandlerContext) throws(ProtocolError) {
        switch state {
        case .closed:
            return
        case .awaitingHello:
            guard case .hello(let hello)? = frame.payload else {
                throw ProtocolError(
                    .unexpectedMessage,
                    "the first frame must be Hello, not \(frame.payload?.messageName ?? "empty")"
                )
            }
            switch ProtocolVersion.check(hello) {
            case .refuse(let refused):
                host.logger.warning("client refused: \(refused.reason)", metadata: ["client.pid": "\(peerPID)"])
                write(Filecoord_V1_Frame(.refused(refused)), context: context)
                state = .closed
                context.close(promise: nil)
            case .accept(let version):
                // The pid is the kernel's (SO_PEERCRED), not what the client says.
                // The name is for people (dumps, logs): kept to a bounded length (issue 11.6).
                let client = host.accept(context.channel, pid: peerPID, name: Self.bounded(hello.clientName))
                self.client = client
                state = .ready(client)
                // The handshake deadline is met; a partial-frame deadline is armed when part of a frame waits.
                deadlineTimer?.cancel()
                deadlineTimer = nil
                var reply = Filecoord_V1_HelloReply()
                reply.protocolVersion = version
                reply.daemonPid = getpid()
                reply.revision = ProtocolVersion.revision
                write(Filecoord_V1_Frame(.helloReply(reply)), context: context)
            }
        case .ready(let client):
            if case .hello? = frame.payload {
                throw ProtocolError(.unexpectedMessage, "Hello was sent twice")
            }
            if case .dumpRequest? = frame.payload {
                try answerDump(context: context)
                return
            }
            if case .versionStoreRequest(let request)? = frame.payload {
                try answerVersionStore(request, context: context)
                return
            }
            let event: ArbiterEvent?
            do {
                event = try ArbiterEvent(wire: frame, client: client, limits: limits)
            } catch  where Self.failsOnlyItsClaim(error) {
                // An item over a limit, or a path that is no absolute path, is the claim's fault, not the
                // connection's: that claim fails, and the client's other calls go on (issue 11.5).
                guard case .requestClaim(let request)? = frame.payload else { throw error }
                host.refuse(ClaimID(request.claimID), because: error, from: client)
                return
            }
            guard let event else { return }
            host.receive(event, from: client)
        }
    }

    /// Answers a `DumpRequest`: the state is copied on the loop, then encoded on ``dumpQueue`` and sent back from
    /// the loop, so that a big dump keeps other clients waiting only for the copy. One dump at a time per
    /// connection: another request before the answer is a protocol error.
    private func answerDump(context: ChannelHandlerContext) throws(ProtocolError) {
        guard !dumpInFlight else {
            throw ProtocolError(.unexpectedMessage, "DumpRequest sent before the previous dump was answered")
        }
        dumpInFlight = true
        let state = host.dumpState()
        let logger = host.logger
        let maximumFrameSize = host.configuration.maximumFrameSize
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
        Self.dumpQueue.async {
            let start = ContinuousClock.now
            let json = state.json(logger: logger)
            let replies = Filecoord_V1_DumpReply.chunks(of: json, maximumFrameSize: maximumFrameSize)
            logger.debug(
                "dump encoded",
                metadata: [
                    "dump.bytes": "\(json.count)",
                    "dump.milliseconds": "\((ContinuousClock.now - start) / .milliseconds(1))",
                ]
            )
            loop.execute {
                let (handler, context) = bound.value
                handler.dumpInFlight = false
                guard context.channel.isActive else { return }  // fcdump gave up and went away.
                for reply in replies { handler.write(Filecoord_V1_Frame(.dumpReply(reply)), context: context) }
            }
        }
    }

    /// The longest client name kept, in bytes; a longer one is cut (at a character boundary) and marked with "…".
    static let maximumClientNameLength = 256

    static func bounded(_ name: String) -> String {
        guard name.utf8.count > maximumClientNameLength else { return name }
        var kept = ""
        for character in name {
            if kept.utf8.count + character.utf8.count > maximumClientNameLength - 3 { break }
            kept.append(character)
        }
        return kept + "…"
    }

    /// Errors in a `RequestClaim` that fail the claim instead of closing the connection.
    private static func failsOnlyItsClaim(_ error: ProtocolError) -> Bool {
        [.pathTooLong, .invalidPath, .limitExceeded].contains(error.code)
    }

    /// Where dumps are encoded: one at a time, off the event loop.
    private static let dumpQueue = DispatchQueue(label: "filecoordd.dump", qos: .utility)

    private func fail(_ error: ProtocolError, context: ChannelHandlerContext) {
        switch state {
        case .ready(let client):
            state = .closed
            host.close(client, because: error)
        case .awaitingHello:
            state = .closed
            host.logger.warning(
                "closing a connection before its handshake: \(error)",
                metadata: ["client.pid": "\(peerPID)"]
            )
            write(Filecoord_V1_Frame(error), context: context)
            context.close(promise: nil)
        case .closed:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // However the connection ended, what it held is released now.
        deadlineTimer?.cancel()
        deadlineTimer = nil
        if counted {
            counted = false
            host.connectionClosed()
        }
        if let client { host.closed(client) }
        client = nil
        state = .closed
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        host.logger.debug("connection error: \(error)")
        context.close(promise: nil)
    }

    /// Writes and flushes at once: for the handshake and dumps, not the hot path (``ArbiterHost`` batches those).
    func write(_ frame: Filecoord_V1_Frame, context: ChannelHandlerContext) {
        let buffer: ByteBuffer
        do {
            buffer = try host.encoder.encode(frame, allocator: context.channel.allocator)
        } catch {
            // Never silent: the peer would wait for an answer that does not come.
            host.logger.error("could not encode a frame: \(error)", metadata: ["client.pid": "\(peerPID)"])
            return
        }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    typealias OutboundOut = ByteBuffer

}

@available(*, unavailable)
extension ConnectionHandler: Sendable {}
