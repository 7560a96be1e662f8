import FCCore
import FCProtocol
import FCToolkit
import FCVersionStore
import Foundation
import Logging

/// The one seam between `NSFileVersion` and the version store (issue 15): what the library asks of the store.
///
/// ``LocalVersionStoreAccess`` calls the store's code in this process (the in-process mode, and today the daemon
/// mode too: the store is built for several processes at once, SQLite serialising their transactions). A daemon
/// implementation sends each call as a request frame over the process's daemon connection and waits for the reply
/// (docs/PROTOCOL.md, "Version store requests"); it is to be wired onto the rebuilt client transport.
///
/// - Important: Implementations are thread-safe; every call may block on disk or on the daemon.
protocol VersionStoreAccess: Sendable {
    func versions(of itemPath: String) throws -> [StoredVersion]
    func version(id: String) throws -> StoredVersion?
    func add(item: String, contentsOf: String, byMoving: Bool, conflict: ConflictOrigin?) throws -> StoredVersion
    func remove(id: String) throws -> StoredVersion?
    func removeAll(of itemPath: String) throws -> [StoredVersion]
    func markResolved(id: String) throws -> StoredVersion?
    func markDiscardable(id: String) throws -> Bool
    func replaceItem(at itemPath: String, with id: String, byMoving: Bool) throws -> String
    func itemMoved(from: String, to: String) throws
    func makeTemporaryDirectory() throws -> String
}

/// The store's code, in this process, at the store directory of the environment.
///
/// - Important: Thread-safe: the store is opened once (the first call that succeeds), under a lock.
final class LocalVersionStoreAccess: VersionStoreAccess, Sendable {
    private let directory: String
    private let opened = Locked<VersionStore?>(nil)
    /// Where the store logs (the process client's logger: the store is the process's).
    private let logger: @Sendable () -> Logger

    init(directory: String, logger: @escaping @Sendable () -> Logger) {
        self.directory = directory
        self.logger = logger
    }

    /// The store, opened (and repaired) at the first use; a failure to open is thrown, and tried again next call.
    private func store() throws -> VersionStore {
        try opened.withLock { opened in
            if let opened { return opened }
            let store = try VersionStore(directory: directory, logger: logger())
            // Versions of items deleted long ago go when the store is first used (a daemon also purges on a timer).
            _ = try? store.purgeDeletedItems()
            opened = store
            return store
        }
    }

    func versions(of itemPath: String) throws -> [StoredVersion] { try store().versions(of: itemPath) }
    func version(id: String) throws -> StoredVersion? { try store().version(id: id) }
    func add(item: String, contentsOf: String, byMoving: Bool, conflict: ConflictOrigin?) throws -> StoredVersion {
        try store().add(item: item, contentsOf: contentsOf, byMoving: byMoving, conflict: conflict)
    }
    func remove(id: String) throws -> StoredVersion? { try store().remove(id: id) }
    func removeAll(of itemPath: String) throws -> [StoredVersion] { try store().removeAll(of: itemPath) }
    func markResolved(id: String) throws -> StoredVersion? { try store().markResolved(id: id) }
    func markDiscardable(id: String) throws -> Bool { try store().markDiscardable(id: id) }
    func replaceItem(at itemPath: String, with id: String, byMoving: Bool) throws -> String {
        try store().replaceItem(at: itemPath, with: id, byMoving: byMoving)
    }
    func itemMoved(from: String, to: String) throws {
        // A process that never used versions makes no store for a move.
        let exists =
            opened.withLock { $0 != nil } || FileManager.default.fileExists(atPath: directory + "/index.sqlite")
        guard exists else { return }
        _ = try store().itemMoved(from: from, to: to)
    }
    func makeTemporaryDirectory() throws -> String { try store().makeTemporaryDirectory() }
}

/// Which ``VersionStoreAccess`` the process uses: the daemon's store through the connection
/// (``DaemonVersionStoreAccess``) while a daemon arbitrates, the store's code in this process
/// (``LocalVersionStoreAccess``, at `FILECOORD_VERSIONS_DIR` or `$XDG_DATA_HOME/filecoordd/versions`) while the
/// process coordinates in process. Chosen per call, as the process moves between the two.
enum VersionStoreAccessPoint {
    static let local: LocalVersionStoreAccess = {
        let environment = ProcessInfo.processInfo.environment
        let directory = environment["FILECOORD_VERSIONS_DIR"] ?? VersionStore.defaultDirectory(environment: environment)
        return LocalVersionStoreAccess(directory: directory) { CoordinationClient.shared.logger() }
    }()

    /// The access to use now for `client`'s calls; throws when no arbiter can be had (the call then fails, as a
    /// claim would).
    static func access(client: CoordinationClient = .shared) throws -> any VersionStoreAccess {
        switch client.versionStoreAccess() {
        case .success(let daemon?): daemon
        case .success(nil): local
        case .failure(let error): throw error
        }
    }
}

/// Tells the arbiter of a version change made inside the accessor of a coordinated call on this thread, so that
/// the item's presenters (the writer's own too) and those of enclosing directories hear it (docs/SEMANTICS.md §3).
/// Outside an accessor nobody is told, as on Apple platforms.
///
/// - Important: Call it on the thread that made the change (the accessor's).
enum VersionNotifier {
    static func changed(_ itemPath: String, _ change: VersionChange) {
        guard let access = ThreadContext.accesses.last, let path = try? ItemPath(absolute: itemPath) else { return }
        access.client.send(.versionChanged(access.claim, path, change))
    }
}

/// Makes versions follow their items through coordinated moves (``NSFileCoordinator/item(at:didMoveTo:)``); the
/// daemon's watcher calls the store's `itemMoved(from:to:)` for moves it sees (issue 13).
enum VersionStoreFollower {
    static func itemMoved(from: ItemPath, to: ItemPath, client: CoordinationClient) {
        do {
            try VersionStoreAccessPoint.access(client: client).itemMoved(from: from.description, to: to.description)
        } catch {
            client.logger().error(
                "versions did not follow a moved item: \(error)",
                metadata: ["item.path": "\(from)", "item.new.path": "\(to)"]
            )
        }
    }
}
