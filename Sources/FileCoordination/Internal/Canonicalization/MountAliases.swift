import FCFileSystemPolicy
import FCSystem
import FCToolkit

/// The bind mounts of this process's mount namespace, for the canonicaliser (issue 26, docs/ARCHITECTURE.md §8.3):
/// a path under a mount that shows a directory another mount shows from higher up is keyed by its path under that
/// other mount (``MountTable/aliases()``), so that a folder and a file not yet created meet under either path.
///
/// Kept by mount id (`stx_mnt_id`, which every `stat` of the canonicaliser reads at no cost): an id not seen before
/// reads `/proc/self/mountinfo` again (a new mount), so a path on a known plain mount costs a dictionary lookup, and
/// the canonicaliser's parent cache remembers even that. An alias is checked before use, since the kernel reuses
/// the ids of unmounted mounts: its mount point must still be that mount, showing the same directory (one `lstat`,
/// only for paths under an alias); else the table is read again.
///
/// - Important: Thread-safe; the table is read on the calling thread, outside the lock.
final class MountAliases: Sendable {
    /// A mount whose root has a first path elsewhere.
    struct Alias: Sendable, Equatable {
        /// Where the mount is.
        var mountPoint: String
        /// Its root's path under the mount that shows it from higher up.
        var target: String
        /// Its root as `lstat` of the mount point saw it when the table was read.
        var root: FileIdentity?
    }

    /// The process's mount namespace.
    static let shared = MountAliases()

    /// By mount id: the alias, or `nil` for a mount that has none. Replaced whole at each read (bounded by the
    /// table's size).
    private let mounts = Locked<[UInt64: Alias?]>([:])

    /// The alias of the mount `id`, checked, or `nil` when it has none.
    func alias(ofMount id: UInt64) -> Alias? {
        if let known = mounts.withLock({ $0[id] }) {
            guard let alias = known else { return nil }
            if isCurrent(alias, id) { return alias }
        }
        reload(including: id)
        guard let alias = mounts.withLock({ $0[id] ?? nil }), isCurrent(alias, id) else { return nil }
        return alias
    }

    /// Forgets the table (tests).
    func removeAll() {
        mounts.withLock { $0.removeAll() }
    }

    private func isCurrent(_ alias: Alias, _ id: UInt64) -> Bool {
        guard let status = try? FileSystemCalls.status(alias.mountPoint, followingLinks: false) else { return false }
        return status.mountID == id && status.identity == alias.root
    }

    /// Reads the table; `id`, seen by a `stat` just now, counts as a plain mount if the table does not list it.
    private func reload(including id: UInt64) {
        guard let table = MountTable.read() else { return }
        let targets = table.aliases()
        var fresh: [UInt64: Alias?] = [:]
        fresh[id] = .some(nil)
        for entry in table.entries {
            guard let target = targets[entry.id] else {
                fresh[entry.id] = .some(nil)
                continue
            }
            let root = try? FileSystemCalls.status(entry.mountPoint, followingLinks: false).identity
            fresh[entry.id] = Alias(mountPoint: entry.mountPoint, target: target, root: root)
        }
        mounts.withLock { $0 = fresh }
    }
}
