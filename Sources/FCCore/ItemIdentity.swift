/// What names one file whatever path reaches it (issue 26): on Linux the file's `(st_dev, st_ino)`, computed by the
/// client where it canonicalises the path. The core never looks inside: two items with equal identities are one
/// file, so that a claim through one name meets the claims and presenters of the file's other names
/// (``Arbiter``'s identity index, Arbiter+Identity.swift).
///
/// An identity is only as good as the moment it was read: inode numbers are reused once a file is gone, so a stale
/// identity can make a claim meet a presenter of another file (a message too many, never two conflicting claims
/// granted at once, since both claims carry the identity they read).
public struct ItemIdentity: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The file system's device number (`st_dev`).
    public var device: UInt64
    /// The file's number on that device (`st_ino`).
    public var inode: UInt64

    /// An identity from its two numbers.
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    public static func < (a: ItemIdentity, b: ItemIdentity) -> Bool {
        (a.device, a.inode) < (b.device, b.inode)
    }

    /// `device:inode`, for logs and dumps.
    public var description: String { "\(device):\(inode)" }
}
