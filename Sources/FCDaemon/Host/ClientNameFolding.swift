import FCCore
import FCFileSystemPolicy
import FCSystem

/// The case folding the daemon does for clients that leave it to the daemon (`Hello.daemon_folds_names`: the preload
/// library, which has no Unicode tables and no folder probes): each path such a client sends has its names folded
/// below a mount that is case-insensitive by its file system's type (``CaseInsensitiveMounts``), as a Swift client's
/// key has them, so that a program under the preload and a Swift client that spell one item in two cases on a FAT,
/// exFAT or SMB folder meet (docs/SEMANTICS.md §4 and §15).
///
/// The mount table is read at the first look, and again only after the kernel marked it changed (``MountTableWatch``,
/// one `poll` that does not wait, per event that carries a path, from any client, while such a client is connected):
/// a USB stick mounted while the daemon runs is folded from the first claim after it, and the leases around a mount
/// point whose rule changed are recalled at once (``refresh()``): a holder under the library compares its own
/// spellings with its lease's folder, keyed before the change.
///
/// A `fuseblk` mount's file system is told by its device's boot sector (``DeviceFileSystem/type(ofFUSEDevice:)``),
/// which this type never reads: a table with a `fuseblk` mount whose type is not known yet is not taken, and
/// ``refresh()`` names the mounts whose types the host must read off the loop (``MountTypeGate``) and give back to
/// ``record(_:unanswered:)``, the events waiting meanwhile. A type is kept by mount while the mount is in the table. A
/// device that could not be told counts as not case-insensitive until the table changes (then it is asked again: a
/// mount being let go can hide a new one's device for a moment); one that did not answer in time, while it stays
/// mounted (it is not asked again: a hung device would take a reader for each).
///
/// - Important: Confined to the arbiter's event loop (``ArbiterHost`` owns it and calls it there); not `Sendable`.
final class ClientNameFolding {
    /// A `fuseblk` mount, as its type is kept: mount ids and loop devices are reused at once by new mounts, so the
    /// key holds where it is mounted too.
    struct FUSEMount: Hashable, Sendable {
        var id: UInt64
        var device: UInt64
        var source: String
        var mountPoint: String

        init(_ entry: MountTable.Entry) {
            id = entry.id
            device = entry.device
            source = entry.source
            mountPoint = entry.mountPoint
        }
    }

    /// What a look at the mount table found.
    enum Refresh: Equatable {
        /// The table as the keys use it now: the mount points whose rule changed (empty when none did).
        case changed([ItemPath])
        /// `fuseblk` mounts whose types must be read first (``record(_:unanswered:)``); the keys use the table read
        /// before.
        case needsTypes([FUSEMount])
    }

    /// Whether the table changed since the last look (tests give a closure of their own).
    private let tableChanged: () -> Bool
    /// The table now (an empty one when it cannot be read).
    private let table: () -> MountTable?
    private var mounts = CaseInsensitiveMounts()
    /// The table is to be read at the next look (at first, and after the kernel said it changed); one was taken.
    private var stale = true
    private var taken = false
    /// Types asked for and not recorded yet: nothing is read again until they are.
    private var awaitingTypes = false
    /// The `fuseblk` types told, by mount; the mounts whose type could not be told since the table last changed; and
    /// those whose device did not answer in time.
    private var types: [FUSEMount: String] = [:]
    private var untold: Set<FUSEMount> = []
    private var unanswered: Set<FUSEMount> = []

    /// `table` and `changed`: this process's mount table and its ``MountTableWatch`` (tests give their own).
    init(table: (() -> MountTable?)? = nil, changed: (() -> Bool)? = nil) {
        // Opened before the first read: a change after it is told by the first look.
        let watch = try? MountTableWatch()
        self.table = table ?? { MountTable.read() }
        // Without the watch (no /proc) the table read first is kept: it cannot be told changed.
        self.tableChanged = changed ?? { watch?.changed() ?? false }
    }

    /// Looks at the table: reads it again when the kernel marked it changed (or not yet read).
    func refresh() -> Refresh {
        if tableChanged() {
            stale = true
            untold = []
        }
        guard stale, !awaitingTypes else { return .changed([]) }
        return take()
    }

    /// Records the types read for ``Refresh/needsTypes(_:)`` (`nil`: could not be told) and the mounts whose device did
    /// not answer in time, and reads the table again: it may ask for more (mounts made meanwhile).
    func record(_ read: [(FUSEMount, String?)], unanswered late: [FUSEMount] = []) -> Refresh {
        awaitingTypes = false
        for (mount, type) in read {
            if let type { types[mount] = type } else { untold.insert(mount) }
        }
        unanswered.formUnion(late)
        return take()
    }

    /// The table now, taken when every `fuseblk` type in it is known or untold.
    private func take() -> Refresh {
        let table = self.table() ?? MountTable(parsing: [])
        var unknown: [FUSEMount] = []
        let next = CaseInsensitiveMounts(table: table) { entry in
            let mount = FUSEMount(entry)
            if let type = types[mount] { return type }
            if !untold.contains(mount), !unanswered.contains(mount) { unknown.append(mount) }
            return nil
        }
        if !unknown.isEmpty {
            awaitingTypes = true
            return .needsTypes(unknown)
        }
        stale = false
        // Bounded by the table: what is kept is of mounts in it.
        let present = Set(table.entries.map(FUSEMount.init))
        types = types.filter { present.contains($0.key) }
        untold = untold.filter { present.contains($0) }
        unanswered = unanswered.filter { present.contains($0) }
        let old = mounts
        mounts = next
        // The first table changes no key made before: none was made under a table.
        guard taken else {
            taken = true
            return .changed([])
        }
        return .changed(mounts.changedPoints(since: old).map(ItemPath.init(components:)))
    }

    /// `event`, from a client that leaves folding to the daemon, with its paths' names folded below case-insensitive
    /// mounts as last taken (``refresh()`` comes first).
    func inbound(_ event: ArbiterEvent) -> ArbiterEvent {
        let mounts = mounts
        guard mounts.foldsAny, event.containsPath(where: { mounts.folds($0.components) }) else { return event }
        return event.mappingPaths(sameItems: true) { path, _ in
            mounts.folded(path.components).map(ItemPath.init(components:)) ?? path
        }
    }

    /// Reads the type of `mount` (off the loop: the table and a boot sector); `nil` when it cannot be told.
    static func readType(of mount: FUSEMount) -> String? {
        DeviceFileSystem.type(ofFUSEDevice: mount.device)
    }
}
