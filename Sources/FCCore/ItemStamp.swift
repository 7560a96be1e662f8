/// An item's state at one moment, as `lstat` shows it: enough to tell whether the item changed since (issue 37).
///
/// Two stamps of one path are equal when nothing was written, renamed over, truncated or removed between them, with
/// one exception: a change in the same tick of the kernel's clock that leaves the size and the inode as they were
/// (an overwrite in place of the same length) may keep the change time. Change times are nanoseconds since the Unix
/// epoch; a file's owner cannot set them.
public enum ItemStamp: Hashable, Sendable {
    /// Nothing is at the path.
    case absent
    /// An item is at the path: its inode number, size in bytes and change time (`st_ctim`).
    case present(inode: UInt64, size: Int64, changeTime: Int64)

    /// The change time of an item that exists.
    public var changeTime: Int64? {
        if case .present(_, _, let time) = self { time } else { nil }
    }
}

/// What a coordinated write left behind, as its client saw it right after the accessor returned (issue 37): the
/// arbiter drops the file-system events of the write (its echoes), and reports those of a change that followed it.
public struct WriteOutcome: Hashable, Sendable {
    /// The client's wall clock (`CLOCK_REALTIME`, nanoseconds since the Unix epoch) when the accessor returned:
    /// every change the write made has a change time not later than this.
    public var endedAt: Int64
    /// The written items (the claim's write items and those the accessor created) and their state after the
    /// accessor, taken after ``endedAt``.
    public var items: [ItemPath: ItemStamp]

    /// Creates an outcome.
    public init(endedAt: Int64, items: [ItemPath: ItemStamp]) {
        self.endedAt = endedAt
        self.items = items
    }
}
