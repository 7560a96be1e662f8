import FCCore
import FCFileSystemPolicy
import FCProtocol
import FCSystem
import Logging
import NIOCore

/// The second handler of a connection (after ``FrameChannelDecoder``): admits the peer, runs the handshake and
/// enforces the connection's limits before it speaks for a client (docs/PROTOCOL.md §2, §5).
///
/// - The peer must be this user's process (`SO_PEERCRED`, ``PeerCredentialSource``); otherwise the connection is
///   closed at once, without an answer.
/// - At most ``DaemonConfiguration/maximumConnections`` connections are open at once; one more is answered with a
///   `ProtocolError` and closed.
/// - The first frame must be `Hello` within ``DaemonConfiguration/handshakeTimeout``; a version the daemon does not
///   speak is answered `Refused`, a good one `HelloReply`. Then a ``SessionHandler`` for the new client is added
///   after this handler, and every later frame goes to it (a second `Hello` is a protocol error).
/// - A ``ProtocolError`` before the handshake (from the decoder, or the timeout) is logged, sent, and closes the
///   connection; after it, errors go on to the ``SessionHandler``.
///
/// - Important: Runs on the host's event loop, like every channel handler of the daemon.
final class HandshakeHandler: ChannelInboundHandler {
    typealias InboundIn = Filecoord_V1_Frame
    typealias InboundOut = Filecoord_V1_Frame

    /// Where the peer's credentials come from: the kernel's (``kernel``), or a test's.
    typealias PeerCredentialSource = (any Channel) -> EventLoopFuture<PeerCredentials>

    private enum State {
        case admitting
        case awaitingHello
        case ready
        case closed
    }

    private let host: ArbiterHost
    private let peerCredentials: PeerCredentialSource
    private var state = State.admitting
    private var peerPID: Int32 = 0
    /// `true` once ``ArbiterHost/connectionOpened()`` counted this connection.
    private var counted = false
    private var handshakeTimer: Scheduled<Void>?

    init(host: ArbiterHost, peerCredentials: @escaping PeerCredentialSource = HandshakeHandler.kernel) {
        self.host = host
        self.peerCredentials = peerCredentials
    }

    /// The kernel's `SO_PEERCRED` of a socket channel. NIO owns the descriptor, so NIO reads the option, into
    /// `struct ucred` as FCSystem names it; a channel that is no socket fails.
    static func kernel(_ channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(PeerCredentialsUnavailable())
        }
        let option = PeerCredentials.socketOption
        let future: EventLoopFuture<PeerCredentials.KernelValue> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(option.level),
            name: SocketOptionName(option.name)
        )
        return future.map { PeerCredentials($0) }
    }

    /// The channel offers no socket options.
    struct PeerCredentialsUnavailable: Error, CustomStringConvertible {
        var description: String { "the channel is not a socket" }
    }

    func channelActive(context: ChannelHandlerContext) {
        // Only this user's processes may coordinate through this daemon. On the channel's own loop the kernel's
        // answer is read at once, so the callback runs before this method returns.
        peerCredentials(context.channel).assumeIsolated().whenComplete { result in
            self.admit(result, context: context)
        }
    }

    private func admit(_ result: Result<PeerCredentials, any Error>, context: ChannelHandlerContext) {
        guard case .admitting = state else { return }
        let uid = ProcessIdentity.userID
        switch result {
        case .failure(let error):
            refuse("peer credentials unavailable: \(error)", context: context)
        case .success(let credentials) where credentials.uid != uid:
            refuse(
                "peer uid \(credentials.uid) (pid \(credentials.pid)) is not this daemon's uid \(uid)",
                context: context
            )
        case .success(let credentials):
            peerPID = credentials.pid
            state = .awaitingHello
            guard host.connectionOpened() else {
                let cap = host.configuration.maximumConnections
                failBeforeHandshake(
                    ProtocolError(
                        .limitExceeded,
                        "filecoordd serves at most \(cap) connections at once and has that many; close idle "
                            + "clients, or start filecoordd with a higher --max-connections"
                    ),
                    context: context
                )
                return
            }
            counted = true
            // A connection that never says Hello must not hold a descriptor for ever.
            let timeout = host.configuration.handshakeTimeout
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            handshakeTimer = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
                let (handler, context) = bound.value
                handler.handshakeTimer = nil
                guard case .awaitingHello = handler.state else { return }
                handler.failBeforeHandshake(
                    ProtocolError(.unexpectedMessage, "no Hello within \(timeout) of connecting"),
                    context: context
                )
            }
            context.fireChannelActive()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .admitting, .closed:
            return
        case .ready:
            // Passed on as it came: unwrapping it here too was a dynamic cast per frame (the `SessionHandler`
            // refuses a second `Hello`).
            context.fireChannelRead(data)
        case .awaitingHello:
            let frame = unwrapInboundIn(data)
            guard case .hello(let hello)? = frame.payload else {
                failBeforeHandshake(
                    ProtocolError(
                        .unexpectedMessage,
                        "the first frame must be Hello, not \(frame.payload?.messageName ?? "empty")"
                    ),
                    context: context
                )
                return
            }
            greet(hello, context: context)
        }
    }

    private func greet(_ hello: Filecoord_V1_Hello, context: ChannelHandlerContext) {
        handshakeTimer?.cancel()
        handshakeTimer = nil
        switch ProtocolVersion.check(hello, pathRules: PathRules.revision) {
        case .refuse(let refused):
            host.logger.warning("client refused: \(refused.reason)", metadata: ["client.pid": "\(peerPID)"])
            host.writeNow(Filecoord_V1_Frame(.refused(refused)), on: context.channel, pid: peerPID)
            state = .closed
            context.close(promise: nil)
        case .accept(let version):
            // The pid is the kernel's (SO_PEERCRED), not what the client says. The name is for people (dumps,
            // logs): kept to a bounded length (issue 11.6).
            let client = host.accept(
                context.channel,
                pid: peerPID,
                name: Self.bounded(hello.clientName),
                answersRecalls: hello.answersRecalls,
                leaseCounterHold: hello.hasLeaseCounters
                    ? Self.leaseCounterHold(hello.leaseCounters, presenterTimeout: host.configuration.presenterTimeout)
                    : nil,
                foldsNames: hello.daemonFoldsNames
            )
            state = .ready
            do {
                try context.pipeline.syncOperations.addHandler(
                    SessionHandler(host: host, client: client, pid: peerPID),
                    position: .after(self)
                )
            } catch {
                // The pipeline is closing: the client is released when its channel goes inactive.
                host.logger.debug(
                    "no session for a closing connection: \(error)",
                    metadata: ["client.pid": "\(peerPID)"]
                )
                host.closed(client)
                return
            }
            var reply = Filecoord_V1_HelloReply()
            reply.protocolVersion = version
            reply.daemonPid = ProcessIdentity.processID
            reply.revision = ProtocolVersion.revision
            // What this daemon enforces (docs/PROTOCOL.md §2): until stop 69 the reply left them out, and a client
            // took the defaults for them whatever the daemon's options said.
            reply.limits = Filecoord_V1_Limits(host.configuration.protocolLimits)
            host.writeNow(Filecoord_V1_Frame(.helloReply(reply)), on: context.channel, pid: peerPID)
        }
    }

    /// The longest client name kept, in bytes; a longer one is cut (at a character boundary) and marked with "…".
    static let maximumClientNameLength = 256

    /// The longest a counting client's recalled lease holds others back (`LeaseCounters.maximum_hold_milliseconds`;
    /// 0 or absent: the presenter timeout, else 30 s), capped at an hour.
    static func leaseCounterHold(_ counters: Filecoord_V1_LeaseCounters, presenterTimeout: Duration?) -> Duration {
        let asked = counters.maximumHoldMilliseconds
        guard asked > 0 else { return presenterTimeout ?? .seconds(30) }
        return .milliseconds(Int64(min(asked, 3_600_000)))
    }

    static func bounded(_ name: String) -> String {
        guard name.utf8.count > maximumClientNameLength else { return name }
        var kept = ""
        for character in name {
            if kept.utf8.count + character.utf8.count > maximumClientNameLength - 3 { break }
            kept.append(character)
        }
        return kept + "…"
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch state {
        case .ready:
            context.fireErrorCaught(error)
        case .awaitingHello, .admitting:
            if let error = error as? ProtocolError {
                failBeforeHandshake(error, context: context)
            } else {
                host.logger.debug("connection error: \(error)", metadata: ["client.pid": "\(peerPID)"])
                state = .closed
                context.close(promise: nil)
            }
        case .closed:
            return
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        handshakeTimer?.cancel()
        handshakeTimer = nil
        if counted {
            counted = false
            host.connectionClosed()
        }
        state = .closed
        context.fireChannelInactive()
    }

    private func refuse(_ reason: String, context: ChannelHandlerContext) {
        host.logger.warning("connection refused: \(reason)")
        state = .closed
        context.close(promise: nil)
    }

    /// Logs the reason, sends it as a `ProtocolError` and closes: the connection never spoke for a client.
    private func failBeforeHandshake(_ error: ProtocolError, context: ChannelHandlerContext) {
        guard state != .closed else { return }
        state = .closed
        host.logger.warning(
            "closing a connection before its handshake: \(error)",
            metadata: ["client.pid": "\(peerPID)"]
        )
        host.writeNow(Filecoord_V1_Frame(error), on: context.channel, pid: peerPID)
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension HandshakeHandler: Sendable {}
