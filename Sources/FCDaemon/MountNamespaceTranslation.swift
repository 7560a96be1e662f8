import FCCore
import FCFileSystemPolicy
import FCSystem

/// The paths of a client whose mount namespace is not the daemon's (issue 26): a process in a container, a systemd
/// unit or a build sandbox that sees a folder at another path. Each path the client sends is taken to the file system
/// it is on (through the client's own mount table, `/proc/PID/mountinfo`, with the pid from `SO_PEERCRED`) and then
/// to where the daemon sees that file system; each path sent to the client takes the way back, so callbacks reach
/// it in its own spelling. A path whose file system the other side does not see is left as it is (it then meets by
/// path, or by identity for an existing file).
///
/// Read once, when the client connects: a mount made later in the client's namespace is seen when it connects again.
///
/// - Important: A value; thread-safe. ``of(pid:)`` reads `/proc` (small files, on the caller's thread).
struct MountNamespaceTranslation: Sendable {
    /// A visible mount: the directory of its file system it shows (`root`) and where (`point`).
    struct Mount: Sendable {
        var id: UInt64
        var device: UInt64
        var root: ItemPath
        var point: ItemPath
    }

    let client: [Mount]
    let daemon: [Mount]

    /// The translation for the process `pid`, or `nil` when it shares the daemon's mount namespace (nothing to do)
    /// or its namespace cannot be read.
    static func of(pid: Int32) -> MountNamespaceTranslation? {
        guard pid > 0, let own = try? FileSystemCalls.symbolicLinkTarget("/proc/self/ns/mnt"),
            let theirs = try? FileSystemCalls.symbolicLinkTarget("/proc/\(pid)/ns/mnt"), own != theirs,
            let clientTable = MountTable.read(process: pid), let daemonTable = MountTable.read()
        else { return nil }
        return MountNamespaceTranslation(client: visible(clientTable), daemon: visible(daemonTable))
    }

    /// The translation between two mount tables given as `mountinfo` text (tests).
    static func parsing(client: [UInt8], daemon: [UInt8]) -> MountNamespaceTranslation {
        MountNamespaceTranslation(
            client: visible(MountTable(parsing: client)),
            daemon: visible(MountTable(parsing: daemon))
        )
    }

    /// The mounts of `table` that are not hidden under a later mount at the same place.
    static func visible(_ table: MountTable) -> [Mount] {
        var latest: [String: MountTable.Entry] = [:]
        var order: [String] = []
        for entry in table.entries {
            if latest[entry.mountPoint] == nil { order.append(entry.mountPoint) }
            latest[entry.mountPoint] = entry
        }
        return order.compactMap { point in
            guard let entry = latest[point], let root = try? ItemPath(absolute: entry.root),
                let mounted = try? ItemPath(absolute: entry.mountPoint)
            else { return nil }
            return Mount(id: entry.id, device: entry.device, root: root, point: mounted)
        }
    }

    /// A client's path as the daemon sees it.
    func toDaemon(_ path: ItemPath) -> ItemPath { Self.map(path, from: client, to: daemon) }

    /// A daemon's path as the client sees it.
    func toClient(_ path: ItemPath) -> ItemPath { Self.map(path, from: daemon, to: client) }

    /// `path` through the deepest mount of `from` that holds it, to its file system, to the mount of `to` that shows
    /// that directory from highest up (the earliest of those); unchanged when `to` shows none.
    static func map(_ path: ItemPath, from: [Mount], to: [Mount]) -> ItemPath {
        var source: Mount?
        for mount in from where path.isEqualOrDescendant(of: mount.point) {
            if source.map({ mount.point.depth >= $0.point.depth }) ?? true { source = mount }
        }
        guard let source, let onDevice = path.relocated(from: source.point, to: source.root) else { return path }
        let target = to.filter { $0.device == source.device && onDevice.isEqualOrDescendant(of: $0.root) }
            .min { ($0.root.depth, $0.id) < ($1.root.depth, $1.id) }
        guard let target, let mapped = onDevice.relocated(from: target.root, to: target.point) else { return path }
        return mapped
    }

    /// An event from the client, in the daemon's paths.
    func inbound(_ event: ArbiterEvent) -> ArbiterEvent { event.mappingPaths { path, _ in toDaemon(path) } }

    /// An effect for the client, in its paths.
    func outbound(_ effect: ArbiterEffect) -> ArbiterEffect { effect.mappingPaths(toClient) }
}
