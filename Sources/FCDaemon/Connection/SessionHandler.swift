import FCCore
import FCProtocol
import Foundation
import Logging
import NIOCore

/// The last handler of a connection, added by ``HandshakeHandler`` once the client said hello: dispatches the
/// client's frames. Arbiter events go to the ``ArbiterHost`` in the client's ids; a `DumpRequest` is answered from a
/// copy of the state encoded off the loop; a `VersionStoreRequest` goes to the store's queue
/// (VersionStoreService.swift). A frame the daemon cannot take closes this connection only, with the reason logged
/// and sent first (``ArbiterHost/close(_:because:)``); a claim it cannot take as sent fails alone (issue 11.5).
///
/// - Important: Runs on the host's event loop, like every channel handler of the daemon.
final class SessionHandler: ChannelInboundHandler {
    typealias InboundIn = Filecoord_V1_Frame

    let host: ArbiterHost
    /// The client this connection speaks for.
    let client: ClientID
    /// The peer's pid, as the kernel gave it (for logs).
    let pid: Int32
    /// Version store requests of this connection not yet answered (at most ``maximumVersionRequestsInFlight``).
    var versionRequestsInFlight = 0
    private let limits: ProtocolLimits
    /// `true` while a dump for this connection is being encoded.
    private var dumpInFlight = false
    /// `true` once the daemon closes this connection: later frames are ignored.
    private var closing = false

    init(host: ArbiterHost, client: ClientID, pid: Int32) {
        self.host = host
        self.client = client
        self.pid = pid
        self.limits = host.configuration.protocolLimits
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        do {
            try dispatch(unwrapInboundIn(data), context: context)
        } catch {
            fail(error)
        }
    }

    private func dispatch(_ frame: Filecoord_V1_Frame, context: ChannelHandlerContext) throws(ProtocolError) {
        switch frame.payload {
        case .hello?:
            throw ProtocolError(.unexpectedMessage, "Hello was sent twice")
        case .dumpRequest?:
            try answerDump(context: context)
        case .versionStoreRequest(let request)?:
            try answerVersionStore(request, context: context)
        case .ping(let ping)?:
            // A keepalive (issue 28): answered here on the loop, whatever the arbiter waits for, so that a client
            // tells a daemon that is busy for it from one that stopped answering.
            var pong = Filecoord_V1_Pong()
            pong.nonce = ping.nonce
            host.writeNow(Filecoord_V1_Frame(.pong(pong)), on: context.channel, pid: pid)
            // After the held claims it declared on this connection, which the arbiter has taken already (in order).
            if ping.heldDeclared { host.heldDeclared(by: pid, from: client) }
        case .progressPublish?, .progressUpdate?, .progressUnpublish?, .progressSubscribe?, .progressUnsubscribe?,
            .progressControl?:
            // File progress (issue 44): the host's progress board, not the arbiter.
            try host.receiveProgress(frame.payload!, from: client, limits: limits)
        case .leaseCounterIdle(let idle)?:
            // A client that keeps lease counters (the C preload library): its count in a recalled lease reached 0.
            host.leaseCounterIdle(idle.slot, from: client)
        case .queryStart?, .queryStop?, .queryResults?:
            // Live queries (issue 44): the host's query service, not the arbiter.
            try host.receiveQuery(frame.payload!, from: client, limits: limits)
        default:
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

    /// Errors in a `RequestClaim` that fail the claim instead of closing the connection.
    private static func failsOnlyItsClaim(_ error: ProtocolError) -> Bool {
        [.pathTooLong, .invalidPath, .limitExceeded].contains(error.code)
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
        let bound = NIOLoopBound((handler: self, channel: context.channel), eventLoop: loop)
        let encode: @Sendable () -> Void = {
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
                let (handler, channel) = bound.value
                handler.dumpInFlight = false
                guard channel.isActive else { return }  // fcdump gave up and went away.
                for (index, reply) in replies.enumerated() {
                    let frame = Filecoord_V1_Frame(.dumpReply(reply))
                    handler.host.writeNow(frame, on: channel, pid: handler.pid, checkingReads: index == 0)
                }
            }
        }
        if host.configuration.runsOffLoopWorkInline { encode() } else { Self.dumpQueue.async(execute: encode) }
    }

    /// Where dumps are encoded: one at a time, off the event loop.
    private static let dumpQueue = DispatchQueue(label: "filecoordd.dump", qos: .utility)

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? ProtocolError {
            fail(error)
        } else {
            host.logger.debug("connection error: \(error)", metadata: ["client.id": "\(client.rawValue)"])
            closing = true
            context.close(promise: nil)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { host.becameWritable(context.channel) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // However the connection ended, what it held is released now (docs/SEMANTICS.md §7).
        closing = true
        host.closed(client)
        context.fireChannelInactive()
    }

    /// Sends the reason and closes this connection; nothing else is affected.
    private func fail(_ error: ProtocolError) {
        guard !closing else { return }
        closing = true
        host.close(client, because: error)
    }
}

@available(*, unavailable)
extension SessionHandler: Sendable {}
