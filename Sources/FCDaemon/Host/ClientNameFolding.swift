import FCCore
import FCFileSystemPolicy
import FCSystem

/// The case folding the daemon does for clients that leave it to the daemon (`Hello.daemon_folds_names`: the preload
/// library, which has no Unicode tables and no folder probes): each path such a client sends has its names folded
/// below a mount that is case-insensitive by its file system's type (``CaseInsensitiveMounts``), as a Swift client's
/// key has them, so that a program under the preload and a Swift client that spell one item in two cases on a FAT,
/// exFAT or SMB folder meet (docs/SEMANTICS.md §4 and §15).
///
/// The mount table is read once, and again only after the kernel marked it changed (``MountTableWatch``, one `poll`
/// that does not wait, per event that carries a path, from any client, while such a client is connected): a USB stick
/// mounted while the daemon runs is folded from the first claim after it, and the leases around a mount point whose
/// rule changed are recalled at once (``refresh()``): a holder under the library compares its own spellings with
/// its lease's folder, keyed before the change.
///
/// - Important: Confined to the arbiter's event loop (``ArbiterHost`` owns it and calls it there); not `Sendable`.
final class ClientNameFolding {
    private let watch: MountTableWatch?
    private var mounts: CaseInsensitiveMounts
    /// How the mounts are read (tests give a table of their own).
    private let read: () -> CaseInsensitiveMounts

    init(reading read: (() -> CaseInsensitiveMounts)? = nil) {
        // Opened before the first read: a change after it is told by the first look.
        watch = try? MountTableWatch()
        // A `fuseblk` mount's type, read once per mount (a boot sector), not at every change of the table. On the
        // loop, as every read: no lock.
        let fuseTypes = FUSETypes()
        self.read =
            read ?? {
                CaseInsensitiveMounts.read { entry in
                    let mount = FUSEMount(
                        id: entry.id,
                        device: entry.device,
                        source: entry.source,
                        mountPoint: entry.mountPoint
                    )
                    if let known = fuseTypes.byMount[mount] { return known }
                    // Not kept when it could not be told: a device read while another mount of it was being let go
                    // (its id, loop device and source reused at once by a new mount) would stand for the new one.
                    guard let type = DeviceFileSystem.type(ofFUSEDevice: entry.device) else { return nil }
                    // Bounded: a table holds so many mounts; forgotten whole past 1,024 (mounts come and go).
                    if fuseTypes.byMount.count >= 1_024 { fuseTypes.byMount = [:] }
                    fuseTypes.byMount[mount] = type
                    return type
                }
            }
        mounts = self.read()
    }

    /// The `fuseblk` types told so far, by ``FUSEMount``.
    private final class FUSETypes {
        var byMount: [FUSEMount: String] = [:]
    }

    /// A `fuseblk` mount, as its type is kept: mount ids and loop devices are reused at once by new mounts, so the
    /// key holds where it is mounted too.
    private struct FUSEMount: Hashable {
        var id: UInt64
        var device: UInt64
        var source: String
        var mountPoint: String
    }

    /// Reads the table again when the kernel marked it changed: the mount points whose rule changed (empty when
    /// nothing did). Without the watch (no /proc), the table read at start is kept: it cannot be told changed.
    func refresh() -> [ItemPath] {
        guard watch?.changed() == true else { return [] }
        let old = mounts
        mounts = read()
        return mounts.changedPoints(since: old).map(ItemPath.init(components:))
    }

    /// `event`, from a client that leaves folding to the daemon, with its paths' names folded below case-insensitive
    /// mounts as last read (``refresh()`` comes first).
    func inbound(_ event: ArbiterEvent) -> ArbiterEvent {
        let mounts = mounts
        guard mounts.foldsAny, event.containsPath(where: { mounts.folds($0.components) }) else { return event }
        return event.mappingPaths(sameItems: true) { path, _ in
            mounts.folded(path.components).map(ItemPath.init(components:)) ?? path
        }
    }
}
