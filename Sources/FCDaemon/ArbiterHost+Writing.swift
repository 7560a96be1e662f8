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
        // A client that does not read (11.3) cannot be reached, so it is treated like a presenter that does not
        // answer, at once and for all its presenters: disconnected. Its claims are released, its presenters removed,
        // its pending replies count as answered; its queue is freed.
        if !channel.isWritable {
            judgeReading(on: channel) { [self] waited in
                close(
                    client,
                    because: ProtocolError(
                        .limitExceeded,
                        "the client does not read: \(waited) to be sent to it, so it is disconnected and its "
                            + "presenters count as gone"
                    )
                )
            }
        }
    }

    /// How long a connection's queue may stay past ``DaemonConfiguration/maximumQueuedBytes`` before its peer counts
    /// as one that does not read. One event can pass the bound in a single loop pass, before anything is flushed (a
    /// write of a folder asks each of a client's 60,000 presenters inside it at once): until stop 70 that closed a
    /// client that reads, as one that did not. A peer that reads brings the queue under half the bound within this.
    static let readingGrace: TimeAmount = .seconds(2)
    /// The most a connection's queue may hold, whatever the time, as a multiple of the bound.
    static let burstFactor = 8

    /// `channel`'s queue is past the bound (not writable): its peer is closed by `close` (with what waited) once the
    /// queue holds more than ``burstFactor`` times the bound, or stays past the bound for ``readingGrace`` after this
    /// pass's flush without coming back under half of it (``becameWritable(_:)``) or shrinking.
    func judgeReading(on channel: any Channel, close: @escaping (_ waited: String) -> Void) {
        let limit = configuration.maximumQueuedBytes
        let most = limit.multipliedReportingOverflow(by: Self.burstFactor)
        let buffered = Self.queuedBytes(of: channel)
        if !most.overflow, buffered > most.partialValue {
            readingChecks[ObjectIdentifier(channel)] = nil
            close("\(buffered) bytes of messages wait (more than \(most.partialValue))")
            return
        }
        let key = ObjectIdentifier(channel)
        guard readingChecks[key] == nil else { return }  // Its check is on its way.
        readingCheckCount &+= 1
        let check = readingCheckCount
        readingChecks[key] = check
        let bound = NIOLoopBound((host: self, channel: channel, close: close), eventLoop: loop)
        // Timed from after this pass's flush (queued before this task): a pass that took longer than the grace
        // (60,000 presenters asked) gave its client no time at all (found by a read-only review).
        loop.assumeIsolated().execute {
            let (host, channel, close) = bound.value
            host.scheduleReadingCheck(check, of: channel, close: close)
        }
    }

    /// Looks at `channel` after ``readingGrace``: closed by `close` if it has stayed past the bound and its queue has
    /// not shrunk meanwhile (a peer that reads a large burst slowly is given another grace each time it made some
    /// way; the queue stays under ``burstFactor`` times the bound).
    private func scheduleReadingCheck(
        _ check: UInt64,
        of channel: any Channel,
        close: @escaping (_ waited: String) -> Void
    ) {
        let key = ObjectIdentifier(channel)
        guard readingChecks[key] == check else { return }
        let before = Self.queuedBytes(of: channel)
        let limit = configuration.maximumQueuedBytes
        let bound = NIOLoopBound((host: self, channel: channel, close: close), eventLoop: loop)
        loop.assumeIsolated().scheduleTask(in: Self.readingGrace) {
            let (host, channel, close) = bound.value
            // Came under half the bound since (``becameWritable(_:)``), or closed: nothing to do.
            guard host.readingChecks[key] == check else { return }
            guard channel.isActive, !channel.isWritable else {
                host.readingChecks[key] = nil
                return
            }
            let now = Self.queuedBytes(of: channel)
            if now < before {
                host.scheduleReadingCheck(check, of: channel, close: close)
                return
            }
            host.readingChecks[key] = nil
            let seconds = Self.readingGrace.nanoseconds / 1_000_000_000
            close("more than \(limit) bytes of messages have waited for \(seconds) s")
        }
    }

    /// The bytes written to `channel` and not yet taken by its peer (0 for a channel that does not say).
    private static func queuedBytes(of channel: any Channel) -> Int {
        (try? channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0
    }

    /// `channel`'s queue came back under half the bound: its peer reads.
    func becameWritable(_ channel: any Channel) {
        readingChecks[ObjectIdentifier(channel)] = nil
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
    /// A peer that has not read what was written to it before (a Pong, a version store or dump reply while more than
    /// `maximumQueuedBytes` wait) is judged as ``send(_:to:)`` judges a client (``judgeReading(on:close:)``, 11.3):
    /// disconnected once it has not read for ``readingGrace``, or at once when its queue is past ``burstFactor``
    /// times the bound (the reply is not written then). Until stop 68 a client that sent Pings and read nothing grew the daemon's
    /// memory without bound.
    /// `checkingReads: false` for the later frames of one reply (a dump's chunks): the reply is judged once, at its
    /// first frame.
    func writeNow(_ frame: Filecoord_V1_Frame, on channel: any Channel, pid: Int32, checkingReads: Bool = true) {
        if checkingReads, !channel.isWritable {
            var closed = false
            judgeReading(on: channel) { [logger] waited in
                closed = true
                logger.warning(
                    "closing a connection that does not read: \(waited) to be sent to it",
                    metadata: ["client.pid": "\(pid)"]
                )
                channel.close(promise: nil)
            }
            if closed { return }
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
