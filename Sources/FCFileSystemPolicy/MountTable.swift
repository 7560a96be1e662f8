import FCSystem

/// A mount namespace's mount table, as `/proc/PID/mountinfo` gives it, and the second paths it makes (issue 26):
/// a bind mount shows a directory of a file system at another place, and every path under it has a first spelling
/// under the mount that shows that file system from higher up.
///
/// - Important: A value; thread-safe. Reading the table (``read(_:)``) is the only I/O.
public struct MountTable: Sendable {
    /// One line of the table: `id parent major:minor root mountpoint options [optional…] - type source super`.
    public struct Entry: Hashable, Sendable {
        /// The mount's id (`stx_mnt_id` of the files under it).
        public var id: UInt64
        /// The id of the mount it is mounted on.
        public var parent: UInt64
        /// The file system's device, as `st_dev` encodes it.
        public var device: UInt64
        /// The directory of the file system shown at the mount point (`/` for a whole file system).
        public var root: String
        /// Where it is shown, in the namespace whose table this is.
        public var mountPoint: String
        /// The file system's type (`ext4`, `vfat`, `fuseblk`, `fuse.sshfs`...); empty when the line names none.
        public var type: String = ""
        /// The mount's source (a device, a share, any text for FUSE); empty when the line names none.
        public var source: String = ""
    }

    /// The lines, in the table's order.
    public var entries: [Entry]

    /// Parses a table; lines it cannot read are left out.
    public init(parsing text: [UInt8]) {
        entries = []
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "))
            guard fields.count >= 5, let id = UInt64(String(decoding: fields[0], as: UTF8.self)),
                let parent = UInt64(String(decoding: fields[1], as: UTF8.self))
            else { continue }
            let numbers = fields[2].split(separator: UInt8(ascii: ":"))
            guard numbers.count == 2, let major = UInt64(String(decoding: numbers[0], as: UTF8.self)),
                let minor = UInt64(String(decoding: numbers[1], as: UTF8.self))
            else { continue }
            var entry = Entry(
                id: id,
                parent: parent,
                device: Self.device(major: major, minor: minor),
                root: MountInfo.unescape(fields[3]),
                mountPoint: MountInfo.unescape(fields[4])
            )
            // The optional fields end at a lone `-`; the type and the source follow it.
            if fields.count > 6, let dash = fields[6...].firstIndex(where: { $0.elementsEqual([UInt8(ascii: "-")]) }) {
                if dash + 1 < fields.count { entry.type = MountInfo.unescape(fields[dash + 1]) }
                if dash + 2 < fields.count { entry.source = MountInfo.unescape(fields[dash + 2]) }
            }
            entries.append(entry)
        }
    }

    /// The table of the process `pid` (`/proc/PID/mountinfo`), or of this process (`nil`); `nil` when it cannot
    /// be read.
    public static func read(process pid: Int32? = nil) -> MountTable? {
        let path = pid.map { "/proc/\($0)/mountinfo" } ?? "/proc/self/mountinfo"
        guard let text = try? FileSystemCalls.contents(of: path, limit: 16 << 20) else { return nil }
        return MountTable(parsing: text)
    }

    /// Where a mount's root is reached from higher up in the same file system: for each mount that shows a directory
    /// (``Entry/root``) that another visible mount of the same device shows from an ancestor, that directory's path
    /// under the other mount, by the mount's id. The other mount is the one with the shortest root (the whole file
    /// system, usually), the earliest of those; a mount hidden under a later one at the same place is not visible.
    /// A mount that is its device's first one, or whose root no other visible mount shows, has none.
    public func aliases() -> [UInt64: String] {
        var hidden: Set<UInt64> = []
        var latest: [String: Entry] = [:]
        for entry in entries {
            if let earlier = latest[entry.mountPoint] { hidden.insert(earlier.id) }
            latest[entry.mountPoint] = entry
        }
        var byDevice: [UInt64: [Entry]] = [:]
        for entry in entries where !hidden.contains(entry.id) { byDevice[entry.device, default: []].append(entry) }
        var aliases: [UInt64: String] = [:]
        for (_, mounts) in byDevice where mounts.count > 1 {
            for entry in mounts {
                let shown = Self.components(entry.root)
                let candidates = mounts.filter { other in
                    other.id != entry.id && shown.starts(with: Self.components(other.root))
                }
                guard
                    let primary = candidates.min(by: {
                        (Self.components($0.root).count, $0.id) < (Self.components($1.root).count, $1.id)
                    }),
                    (Self.components(primary.root).count, primary.id) < (shown.count, entry.id)
                else { continue }
                let rest = shown.dropFirst(Self.components(primary.root).count)
                let base = Self.components(primary.mountPoint)
                let target = "/" + (base + rest).joined(separator: "/")
                if target != entry.mountPoint { aliases[entry.id] = target }
            }
        }
        return aliases
    }

    /// A path's names (`/a/b` → `["a", "b"]`; `/` → `[]`).
    static func components(_ path: String) -> [Substring] {
        path.split(separator: "/")
    }

    /// `gnu_dev_makedev`: `st_dev`'s encoding of `major:minor`.
    static func device(major: UInt64, minor: UInt64) -> UInt64 {
        (minor & 0xff) | ((major & 0xfff) << 8) | ((minor & ~0xff) << 12) | ((major & ~0xfff) << 32)
    }
}
