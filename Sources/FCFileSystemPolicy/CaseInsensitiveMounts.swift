/// The mounts whose file systems compare names case-insensitively by their type alone, and a path's names folded
/// below them as a Swift client's canonical key folds them (docs/SEMANTICS.md §4): for a client that sends paths
/// with its caller's spelling of the names (the preload library, `Hello.daemon_folds_names`), the daemon folds them.
///
/// A mount counts when ``FileSystemCaseRule`` decides every folder of it by its type, with no look inside: vfat,
/// msdos, exFAT, CIFS and SMB, and a FUSE mount whose device's file system is one of
/// ``DeviceFileSystem/caseInsensitiveTypes`` (exfat-fuse). A folder that the rule decides one by one (a casefold
/// folder of ext4, f2fs or tmpfs; a FUSE mount decided by the probe) is not folded here.
///
/// Only the mounts a path can reach count: the later of two at one place hides the other, and a mount whose folder
/// another mount came to cover (a FAT volume mounted over the folder that held it) is hidden too.
///
/// - Important: A value; thread-safe. ``read(fuseType:)`` reads `/proc/self/mountinfo` (and what `fuseType` reads for
///   a `fuseblk` mount: its device's boot sector); the rest is pure.
public struct CaseInsensitiveMounts: Sendable {
    /// Each visible mount point (its names, those in a case-insensitive folder folded: a mount on a FAT folder is
    /// reached whatever the case of its name) and whether its file system is case-insensitive by type; the later of
    /// two mounts at one place, which hides the other.
    private var rules: [[[UInt8]]: Bool] = [:]
    /// The depths (name counts) of the mount points: a path's folders are looked up only at these.
    private var depths: Set<Int> = []

    /// Whether any mount is case-insensitive: when none is, ``folded(_:)`` has nothing to do.
    public private(set) var foldsAny = false

    /// The mounts of `table`, with `fuseType` telling a `fuseblk` mount's file system (from its device, `st_dev`).
    public init(table: MountTable, fuseType: (MountTable.Entry) -> String?) {
        // Shallower mount points first (in the table's order among equals), so that each point's names are folded by
        // the mounts above it, and each mount is judged reachable by those above it.
        let entries = table.entries.enumerated().sorted {
            (Self.names($0.element.mountPoint).count, $0.offset) < (Self.names($1.element.mountPoint).count, $1.offset)
        }
        var visible: [[[UInt8]]: UInt64] = [:]
        for (_, entry) in entries {
            var point = Self.names(entry.mountPoint)
            if let folded = folded(point) { point = folded }
            // Reachable when mounted on what a path finds there: stacked on the mount at its own place, or on a folder
            // of the deepest mount above it, or with no mount above it at all (the first root mount, whose parent is
            // not in the table; every mount of a chroot, whose root the table leaves out).
            let reachable: Bool
            if let below = visible[point] {
                reachable = below == entry.parent
            } else if point.isEmpty {
                reachable = true
            } else {
                let above = (0..<point.count).reversed().lazy.compactMap { visible[Array(point[0..<$0])] }.first
                reachable = above == nil || above == entry.parent
            }
            guard reachable else { continue }
            visible[point] = entry.id
            let insensitive = Self.isCaseInsensitive(entry, fuseType: fuseType)
            rules[point] = insensitive
            depths.insert(point.count)
            // Kept once set, also when a later mount hides this one: then only some work is done for nothing.
            if insensitive { foldsAny = true }
        }
    }

    /// No mount: nothing folded.
    public init() {}

    /// The mount points (their folded names) whose rule differs from `old`'s: mounted, unmounted, or of another
    /// case rule. Keys made under them before the change may not be the keys made now.
    public func changedPoints(since old: CaseInsensitiveMounts) -> [[[UInt8]]] {
        let points = Set(rules.keys).union(old.rules.keys)
        return points.filter { rules[$0] != old.rules[$0] }.sorted {
            $0.lexicographicallyPrecedes($1) { $0.lexicographicallyPrecedes($1) }
        }
    }

    /// This process's mounts now (an empty table when `/proc/self/mountinfo` cannot be read). `fuseType`: a
    /// `fuseblk` mount's file system (by default ``DeviceFileSystem/type(ofFUSEDevice:)``, which reads the table
    /// again and the device's boot sector; the daemon keeps its answers by mount).
    public static func read(
        fuseType: (MountTable.Entry) -> String? = { DeviceFileSystem.type(ofFUSEDevice: $0.device) }
    ) -> CaseInsensitiveMounts {
        guard let table = MountTable.read() else { return CaseInsensitiveMounts() }
        return CaseInsensitiveMounts(table: table, fuseType: fuseType)
    }

    /// Whether a mount of this type compares names case-insensitively in every folder, by type alone.
    static func isCaseInsensitive(_ entry: MountTable.Entry, fuseType: (MountTable.Entry) -> String?) -> Bool {
        switch entry.type {
        case "vfat", "msdos", "exfat", "cifs", "smb3", "smbfs":
            return true
        case "fuseblk", "fuse.fuseblk":
            return fuseType(entry).map { DeviceFileSystem.caseInsensitiveTypes.contains($0) } ?? false
        case let type where type.hasPrefix("fuse."):
            // The type names the file system, as ``DeviceFileSystem/type(ofFUSEDevice:)`` reads it.
            return DeviceFileSystem.caseInsensitiveTypes.contains(String(type.dropFirst("fuse.".count)))
        default:
            return false
        }
    }

    /// A path's names (`components`, from the root) with each name that lies in a folder of a case-insensitive mount
    /// folded (``CaseFolding``; a name that is not UTF-8 kept); `nil` when no name changes.
    public func folded(_ components: [[UInt8]]) -> [[UInt8]]? {
        var result: [[UInt8]]?
        forEachFoldedName(of: components) { index, name in
            if result == nil { result = components }
            result?[index] = name
            return true
        }
        return result
    }

    /// Whether ``folded(_:)`` changes the path (what it does, without building the new path).
    public func folds(_ components: [[UInt8]]) -> Bool {
        var changes = false
        forEachFoldedName(of: components) { _, _ in
            changes = true
            return false
        }
        return changes
    }

    /// Calls `body` with each name of `components` that folds to another (its index, the folded name) while it
    /// returns `true`.
    private func forEachFoldedName(of components: [[UInt8]], _ body: (Int, [UInt8]) -> Bool) {
        guard foldsAny else { return }
        var insensitive = rules[[]] ?? false
        // The folder that holds name `index`: the path's first `index` names, as folded so far.
        var folder: [[UInt8]] = []
        folder.reserveCapacity(components.count)
        for index in components.indices {
            // A mount at the folder decides its names.
            if index > 0, depths.contains(index), let rule = rules[folder] { insensitive = rule }
            guard insensitive, let name = Self.fold(components[index]), name != components[index] else {
                folder.append(components[index])
                continue
            }
            guard body(index, name) else { return }
            folder.append(name)
        }
    }

    private static func fold(_ name: [UInt8]) -> [UInt8]? {
        // ASCII without upper case: the common name, unchanged, without a String.
        if name.allSatisfy({ $0 < 0x80 && !($0 >= 0x41 && $0 <= 0x5A) }) { return nil }
        guard let text = String(validating: name, as: UTF8.self) else { return nil }
        return Array(CaseFolding.fold(text).utf8)
    }

    private static func names(_ path: String) -> [[UInt8]] {
        path.utf8.split(separator: UInt8(ascii: "/")).map(Array.init)
    }
}
