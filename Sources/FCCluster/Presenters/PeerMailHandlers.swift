import Foundation
import NIOCore

// The channel handlers of the direct mail between daemons (ClusterHost+PeerMail.swift; docs/PROTOCOL.md §11). Each
// runs on the adapter's loop, where every channel of the mail runs, and reaches the adapter through its
// `NIOLoopBound`.

/// The sending end of a connection to another host's mailbox: hands the receiver's acceptance to the adapter, tells
/// it when the connection takes more (after a full socket buffer) or has taken nothing for a while, when it was idle
/// and when it closed. Runs on the adapter's loop.
final class PeerSender: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let host: NIOLoopBound<ClusterHost>
    private let receiver: String
    private let attempt: Int
    private var accepted = false
    private var stallCheck: Scheduled<Void>?

    init(_ host: NIOLoopBound<ClusterHost>, receiver: String, attempt: Int) {
        self.host = host
        self.receiver = receiver
        self.attempt = attempt
    }

    /// The receiver's one frame: its ``PeerWelcome``. Anything else closes the connection.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard !accepted, let welcome = try? JSONDecoder().decode(PeerWelcome.self, from: Data(bytes.readableBytesView)),
            welcome.version == 1
        else { return context.close(promise: nil) }
        accepted = true
        host.value.linkAccepted(receiver, attempt: attempt, channel: context.channel)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let channel = context.channel
        if channel.isWritable {
            stallCheck?.cancel()
            stallCheck = nil
            _ = host.value.sendDirect(to: receiver)
        } else if stallCheck == nil {
            let (host, receiver) = (self.host, self.receiver)
            stallCheck = context.eventLoop.assumeIsolated().scheduleTask(in: PresenterExchange.stalledLink) {
                host.value.linkStalled(receiver, channel)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { host.value.linkIdle(receiver, context.channel) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        stallCheck?.cancel()
        host.value.linkClosed(receiver, attempt: attempt, context.channel)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Before a connection to this host's mailbox showed the token, at most ``PresenterExchange/maximumHello`` bytes may
/// come (a sender writes nothing but its hello until it is accepted): a connection that sends more is closed before
/// its frame is buffered. Runs on the adapter's loop.
final class PeerHelloGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var received = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        guard received <= PresenterExchange.maximumHello else { return context.close(promise: nil) }
        context.fireChannelRead(data)
    }
}

/// The receiving end of a connection from another host's daemon: the hello (answered with a ``PeerWelcome``), then
/// batches of letters. Runs on the adapter's loop.
final class PeerReceiver: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let host: NIOLoopBound<ClusterHost>
    private let helloGuard: PeerHelloGuard
    private var sender: String?
    private var helloTimer: Scheduled<Void>?

    init(_ host: NIOLoopBound<ClusterHost>, guard helloGuard: PeerHelloGuard) {
        self.host = host
        self.helloGuard = helloGuard
    }

    func channelActive(context: ChannelHandlerContext) {
        let adapter = host.value
        guard adapter.exchange.peers.count < PresenterExchange.maximumPeers else {
            adapter.noteError(
                "more than \(PresenterExchange.maximumPeers) connections to this host's mailbox: one closed"
            )
            context.close(promise: nil)
            return
        }
        adapter.exchange.peers[ObjectIdentifier(context.channel)] = context.channel
        let channel = context.channel
        helloTimer = context.eventLoop.assumeIsolated().scheduleTask(in: PresenterExchange.helloTimeout) {
            channel.close(promise: nil)
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard let sender else {
            helloTimer?.cancel()
            guard let hello = host.value.peerHello(bytes),
                let welcome = try? JSONEncoder().encode(PeerWelcome(version: 1))
            else { return context.close(promise: nil) }
            sender = hello.sender
            context.pipeline.syncOperations.removeHandler(helloGuard, promise: nil)
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: welcome)), promise: nil)
            return
        }
        if !host.value.peerFrame(bytes, from: sender) { context.close(promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Nothing read for a while: a sender closes its idle connections itself, so its host is gone.
        if event is IdleStateHandler.IdleStateEvent { return context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        helloTimer?.cancel()
        host.value.exchange.peers[ObjectIdentifier(context.channel)] = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        host.value.noteError("a connection to this host's mailbox failed: \(error)")
        context.close(promise: nil)
    }
}
