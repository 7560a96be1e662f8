import FCCore

/// The writes through a watched directory's name of a file that also has its own watch (``LinkedFileWatches``),
/// whose echo on the file's watch is still to come: so that such a write is reported once.
///
/// The kernel queues one finished write to the directory's watch first and then to the file's (`fsnotify` hands the
/// parent's mark the event before the inode's), and wakes the reader at each. A reader that runs between the two
/// reads them in two batches, so a check within one batch reports the write twice. Here the directory's event is
/// remembered and the file's next event drops that name, whichever batch it comes in.
///
/// An echo that never comes (the file's watch was added after the write was queued) is forgotten at the end of
/// the batch after the one that awaited it; until then a write through another name would lose that name's report.
/// Bounded by the events of two batches.
///
/// - Important: Not thread-safe: owned by the watcher's thread.
struct LinkedWriteEchoes {
    private struct Awaited: Equatable {
        var descriptor: Int32
        var name: ItemPath
        var batch: UInt64
    }

    private var awaited: [Awaited] = []
    private var batch: UInt64 = 0

    /// Echoes awaited.
    var count: Int { awaited.count }

    /// The directory's watch reported a finished write of `name`, a name of the file watched by `descriptor`.
    mutating func directWrite(of name: ItemPath, watchedBy descriptor: Int32) {
        awaited.append(Awaited(descriptor: descriptor, name: name, batch: batch))
    }

    /// Whether the finished write the file's watch `descriptor` reported is, for `name`, the echo of a write already
    /// reported through that name (then it is consumed).
    mutating func isEcho(of name: ItemPath, watchedBy descriptor: Int32) -> Bool {
        guard let index = awaited.firstIndex(where: { $0.descriptor == descriptor && $0.name == name }) else {
            return false
        }
        awaited.remove(at: index)
        return true
    }

    /// The watch `descriptor` is gone: no echo of it will come.
    mutating func forget(_ descriptor: Int32) {
        awaited.removeAll { $0.descriptor == descriptor }
    }

    /// A batch was delivered: echoes awaited since the batch before it are given up.
    mutating func endBatch() {
        awaited.removeAll { $0.batch < batch }
        batch += 1
    }
}
