import FCCore
import NIOCore

/// The connections written to since the last flush, in the order they were first written to: each is flushed once
/// at the end of the loop pass (issue 12), however many frames it got, whether they came from a read, a timer or the
/// watcher.
///
/// - Important: Everything runs on the arbiter's event loop, ``loop`` (``flushPending()`` asserts it); not `Sendable`.
final class FlushBatcher {
    let loop: any EventLoop
    private var unflushed: [any Channel] = []
    private var unflushedClients: Set<ClientID> = []
    /// `true` while a task that flushes ``unflushed`` waits on the loop.
    private var flushScheduled = false
    /// Frames flushed and flushes made (for tests and dumps: frames per flush is the batching).
    private(set) var statistics = (frames: 0, flushes: 0)

    init(loop: any EventLoop) {
        self.loop = loop
    }

    /// Notes a frame written, not flushed, on `client`'s `channel`: it is flushed at the end of this loop pass.
    func wrote(on channel: any Channel, for client: ClientID) {
        statistics.frames += 1
        if unflushedClients.insert(client).inserted { unflushed.append(channel) }
        if !flushScheduled {
            flushScheduled = true
            // Runs after the I/O events and tasks of this pass: every effect of the pass, whether it came from a
            // read, a timer or the watcher, is flushed by it.
            loop.assumeIsolated().execute { [weak self] in self?.flushPending() }
        }
    }

    /// Flushes every connection written to since the last flush, once each.
    func flushPending() {
        loop.preconditionInEventLoop()
        flushScheduled = false
        let channels = unflushed
        unflushed.removeAll(keepingCapacity: true)
        unflushedClients.removeAll(keepingCapacity: true)
        for channel in channels {
            statistics.flushes += 1
            channel.flush()
        }
    }
}
