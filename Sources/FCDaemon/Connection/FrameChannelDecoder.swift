import FCProtocol
import NIOCore

/// The framing of one connection, first in its pipeline: turns the bytes NIO reads into `Frame`s
/// (docs/PROTOCOL.md §1), decoding each body in place from NIO's buffer (no copy), and times out a frame left
/// incomplete (issue 11.4).
///
/// Wrapped in a `ByteToMessageHandler`, which keeps the bytes of an incomplete frame. A length prefix that is 0 or
/// over the limit is refused as soon as it arrives, so at most one frame and the last read are buffered. Errors
/// (``ProtocolError``) go down the pipeline as `errorCaught`: to ``HandshakeHandler`` and ``SessionHandler``, which
/// answer and close. A frame that stays incomplete for ``partialFrameTimeout`` (counted from when it began, or from
/// the last complete frame) fails the connection the same way, with `.malformedFrame`.
///
/// - Important: Runs on the connection's event loop, like every handler of the daemon; `decode` is called by NIO
///   only, and the timer it arms runs on the same loop.
final class FrameChannelDecoder: ByteToMessageDecoder {
    typealias InboundOut = Filecoord_V1_Frame

    let maximumFrameSize: Int
    let partialFrameTimeout: Duration
    /// Since when part of a frame waits (`nil`: nothing buffered).
    private var partialSince: NIODeadline?
    /// Bytes of the incomplete frame received so far, for the error's message.
    private var partialBytes = 0
    /// `true` when a frame completed since the partial-frame clock last started.
    private var completedSinceClockStarted = false
    /// The one timer that checks the partial-frame deadline.
    private var timer: Scheduled<Void>?

    init(maximumFrameSize: Int, partialFrameTimeout: Duration) {
        self.maximumFrameSize = maximumFrameSize
        self.partialFrameTimeout = partialFrameTimeout
    }

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let prefix = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else {
            return waitForMore(buffered: buffer.readableBytes, context: context)
        }
        let length = Int(prefix)
        try FrameDecoder.checkLength(length, maximumFrameSize: maximumFrameSize)
        guard buffer.readableBytes - frameLengthPrefixSize >= length else {
            return waitForMore(buffered: buffer.readableBytes, context: context)
        }
        let frame = try FrameDecoder.frame(
            fromBody: buffer.readableBytesSpan.extracting(frameLengthPrefixSize..<(frameLengthPrefixSize + length)),
            accepting: .toDaemon
        )
        buffer.moveReaderIndex(forwardBy: frameLengthPrefixSize + length)
        // NIO calls `decode` again only while bytes remain: the clock stops here when none do.
        if buffer.readableBytes == 0 { stopClock() } else { completedSinceClockStarted = true }
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // The connection is ending: complete frames still go through; an incomplete one is dropped with it.
        while try decode(context: context, buffer: &buffer) == .continue {}
        stopClock()
        return .needMoreData
    }

    func decoderRemoved(context: ChannelHandlerContext) {
        stopClock()
    }

    /// Starts the partial-frame clock when part of a frame begins (or the rest of one waits after a complete
    /// frame), and stops it when nothing is buffered.
    private func waitForMore(buffered: Int, context: ChannelHandlerContext) -> DecodingState {
        partialBytes = buffered
        if buffered == 0 {
            stopClock()
        } else if partialSince == nil || completedSinceClockStarted {
            partialSince = context.eventLoop.now
            completedSinceClockStarted = false
            if timer == nil { arm(at: partialSince! + TimeAmount(partialFrameTimeout), context: context) }
        }
        return .needMoreData
    }

    private func stopClock() {
        partialSince = nil
        completedSinceClockStarted = false
        timer?.cancel()
        timer = nil
    }

    private func arm(at deadline: NIODeadline, context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            let (decoder, context) = bound.value
            decoder.timer = nil
            decoder.checkDeadline(context: context)
        }
    }

    /// Fails the connection if the frame waiting now began at least ``partialFrameTimeout`` ago; else waits for
    /// its deadline.
    private func checkDeadline(context: ChannelHandlerContext) {
        guard let since = partialSince, context.channel.isActive else { return }
        let deadline = since + TimeAmount(partialFrameTimeout)
        guard deadline <= context.eventLoop.now else {
            arm(at: deadline, context: context)
            return
        }
        stopClock()
        context.fireErrorCaught(
            ProtocolError(
                .malformedFrame,
                "a frame stayed incomplete for \(partialFrameTimeout) "
                    + "(\(partialBytes) bytes received of it)"
            )
        )
    }
}

@available(*, unavailable)
extension FrameChannelDecoder: Sendable {}
