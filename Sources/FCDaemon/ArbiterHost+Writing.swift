import FCCore
import FCProtocol
import Logging
import NIOCore

// How the daemon writes to its clients (ArbiterHost.swift has the rest): the arbiter's messages, batched and flushed
// once per loop pass, and the replies written at once (handshake, pongs, dumps, version store replies); a client that
// does not read is disconnected on either way (README, "Bounded memory"; issue 11, item 3).
//
// - Important: Every method runs on the host's loop, as ArbiterHost's.

extension ArbiterHost {
    func send(_ frame: Filecoord_V1_Frame, to client: ClientID) {
        guard let channel = connections.reachable(client) else { return }
        if case .claimFailed(let failed)? = frame.payload, failed.kind == .timedOut {
            connections.countTimedOutClaim(of: client)
        }
        write(frame, on: channel, for: client)
        // More than maximumQueuedBytes wait for a client that does not read (11.3): it cannot be reached, so it is
        // treated like a presenter that does not answer, at once and for all its presenters: disconnected. Its
        // claims are released, its presenters removed, its pending replies count as answered; its queue is freed.
        if !channel.isWritable {
            close(
                client,
                because: ProtocolError(
                    .limitExceeded,
                    "the client does not read: more than \(configuration.maximumQueuedBytes) bytes of messages wait to "
                        + "be sent to it, so it is disconnected and its presenters count as gone"
                )
            )
        }
    }

    /// Writes a frame without flushing; the connection is flushed once at the end of this loop pass, however many
    /// frames it got (``flushPending()``).
    func write(_ frame: Filecoord_V1_Frame, on channel: any Channel, for client: ClientID) {
        do {
            let buffer = try encoder.encode(frame, allocator: channel.allocator)
            channel.write(buffer, promise: nil)
        } catch {
            logger.error("could not encode a frame: \(error)", metadata: ["client.id": "\(client.rawValue)"])
            return
        }
        flushes.wrote(on: channel, for: client)
    }

    /// Writes and flushes at once, outside the batching: for the handshake, dumps and version store replies, which
    /// are not on the hot path. `pid` names the peer in the log if the frame cannot be encoded.
    ///
    /// A peer that has not read what was written to it before (a Pong, a version store or dump reply: more than
    /// `maximumQueuedBytes` wait) is disconnected instead, as ``send(_:to:)`` disconnects a client that does not read
    /// (11.3); the reply would only queue. Until stop 68 a client that sent Pings and read nothing grew the daemon's
    /// memory without bound.
    /// `checkingReads: false` for the later frames of one reply (a dump's chunks): the reply is judged once, at its
    /// first frame.
    func writeNow(_ frame: Filecoord_V1_Frame, on channel: any Channel, pid: Int32, checkingReads: Bool = true) {
        guard channel.isWritable || !checkingReads else {
            let limit = configuration.maximumQueuedBytes
            logger.warning(
                "closing a connection that does not read: more than \(limit) bytes of replies wait to be sent to it",
                metadata: ["client.pid": "\(pid)"]
            )
            channel.close(promise: nil)
            return
        }
        let buffer: ByteBuffer
        do {
            buffer = try encoder.encode(frame, allocator: channel.allocator)
        } catch {
            // Never silent: the peer would wait for an answer that does not come.
            logger.error("could not encode a frame: \(error)", metadata: ["client.pid": "\(pid)"])
            return
        }
        channel.writeAndFlush(buffer, promise: nil)
    }

    /// Flushes every connection written to since the last flush, once each.
    func flushPending() {
        flushes.flushPending()
    }
}
