import FCSystem
public import Foundation
import GRDB
public import Logging
import SystemPackage

/// The store of `NSFileVersion`'s versions (docs/SEMANTICS.md §8): an index in SQLite (through GRDB, WAL, one
/// transaction per change) and the versions' contents, under one directory (`$XDG_DATA_HOME/filecoordd/versions` for
/// the daemon and for the library's in-process mode alike).
///
/// Layout: `index.sqlite` (with its WAL; `open.lock` serialises opening it), `contents/<id>/<name>` (a version's contents under the item's name when it
/// was added), `staging/<pid>-<id>/<name>` (contents being added; with `staging/<pid>-<id>.origin` for an add by
/// moving), `tmp/<pid>-<uuid>/` (directories handed out by ``makeTemporaryDirectory(owner:)``), `recovered/<id>/`
/// (contents of an add by moving cut short that could not go back where they came from).
///
/// Crash-safe ordering (docs/ARCHITECTURE.md, "Version store"):
/// - adding: the contents are copied (reflinked where the file system can) or moved into `staging/` and flushed; then,
///   inside one write transaction, renamed to `contents/<id>` (the directory flushed) and the row inserted. A crash
///   before the commit leaves contents without a row, which ``repair()`` removes: a version is either whole or absent.
///   Contents moved in are given back first, to where they came from (VersionStore+ByMoving.swift).
/// - removing: the row is deleted (committed) before the contents, so no row ever names missing contents except after
///   a crash in the middle of a removal, which ``repair()`` finishes.
///
/// Several processes may open one store (SQLite's locking serialises their transactions).
///
/// - Important: Thread-safe. Every call blocks its thread on disk I/O: the daemon calls it off its event loop.
public final class VersionStore: Sendable {
    /// The store's directory.
    public let directory: String
    /// How long versions of a deleted item are kept (``purgeDeletedItems()``).
    public let retention: Duration
    private let database: DatabasePool
    let logger: Logger
    private let now: @Sendable () -> Date

    /// The store's directory for `environment`: `$XDG_DATA_HOME/filecoordd/versions`, else
    /// `$HOME/.local/share/filecoordd/versions`.
    public static func defaultDirectory(environment: [String: String]) -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return data + "/filecoordd/versions"
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/share/filecoordd/versions"
    }

    /// Opens (creating it if needed) the store at `directory`, and checks and repairs it (``repair()``).
    public init(
        directory: String,
        retention: Duration = .seconds(30 * 24 * 3600),
        logger: Logger = Logger(label: "filecoord.versions"),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.directory = directory
        self.retention = retention
        self.logger = logger
        self.now = now
        do {
            for sub in ["", "/contents", "/staging", "/tmp"] {
                try FileManager.default.createDirectory(
                    atPath: directory + sub,
                    withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700]
                )
            }
            var configuration = Configuration()
            configuration.busyMode = .timeout(30)
            configuration.prepareDatabase { db in
                // Durable commits: a version the caller was told is added survives a power loss too.
                try db.execute(sql: "PRAGMA synchronous = FULL")
            }
            // One process at a time opens the pool and creates the schema: GRDB switches a fresh database to WAL on
            // opening, SQLite refuses that switch with "database is locked" while another process opens it too, and
            // the busy timeout does not cover it (VersionStoreTests, 1 run in 2 with six stores opened at once). The
            // lock is held for milliseconds, by a live process (flock ends with it); a file system without flock
            // opens without it, as before.
            let opening = try? FileLock.acquire(directory + "/open.lock")
            database = try DatabasePool(path: directory + "/index.sqlite", configuration: configuration)
            // Again once the pool is open: GRDB sets `synchronous = NORMAL` on its writer when it turns WAL on, after
            // prepareDatabase ran (until stop 68 every commit ran so: a power loss could take the last rows while
            // their contents stayed, and the next repair deleted those as orphans).
            try database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
            try Self.createSchema(in: database)
            withExtendedLifetime(opening) {}
        } catch {
            throw VersionStoreError(
                .storeUnavailable,
                "The version store at \(directory) could not be opened (\(error)); check that the directory is "
                    + "writable and not on a full disk."
            )
        }
        try repair()
    }

    /// The writer connection's `PRAGMA synchronous` (2: FULL), for tests.
    @_spi(Testing) public func writerSynchronous() throws -> Int {
        try database.write { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// The schema this code reads and writes, as `PRAGMA user_version` records it.
    static let schemaVersion = 1

    /// Creates the index's schema where it is missing. The check and the creation are one IMMEDIATE transaction:
    /// a daemon and clients that store in process may open a fresh store at the same moment, and GRDB's
    /// `DatabaseMigrator` decides which migrations to run before it takes the write lock, so two processes both ran
    /// `CREATE TABLE` and one add failed with "table version already exists" (issue 28). A later schema change goes
    /// here too, keyed by `user_version`, inside the same transaction. Stores made by earlier builds (which recorded
    /// the migration "v1" in `grdb_migrations`) have this schema and are left as they are.
    private static func createSchema(in database: DatabasePool) throws {
        try database.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                guard version < schemaVersion else { return .commit }
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS version (
                          id TEXT PRIMARY KEY NOT NULL,
                          itemPath TEXT NOT NULL,
                          name TEXT NOT NULL,
                          savingComputer TEXT,
                          originator TEXT,
                          modificationDate DOUBLE NOT NULL,
                          addedDate DOUBLE NOT NULL,
                          isConflict BOOLEAN NOT NULL,
                          isResolved BOOLEAN NOT NULL,
                          isDiscardable BOOLEAN NOT NULL,
                          itemGoneSince DOUBLE
                        );
                        CREATE INDEX IF NOT EXISTS versionItem ON version(itemPath);
                        PRAGMA user_version = \(schemaVersion);
                        """
                )
                return .commit
            }
        }
    }

    // MARK: Reading

    /// The versions of the item at `itemPath`, oldest first.
    public func versions(of itemPath: String) throws -> [StoredVersion] {
        try reading { db in
            try VersionRow.fetchAll(
                db,
                sql: "SELECT * FROM version WHERE itemPath = ? ORDER BY addedDate, id",
                arguments: [itemPath]
            ).map(stored)
        }
    }

    /// The version named `id`, or `nil` if there is none (removed, or purged).
    public func version(id: String) throws -> StoredVersion? {
        try reading { db in try VersionRow.fetchOne(db, key: id).map(stored) }
    }

    /// Every version in the store (for tests and `fcdump`): O(versions).
    public func allVersions() throws -> [StoredVersion] {
        try reading { db in try VersionRow.fetchAll(db, sql: "SELECT * FROM version ORDER BY addedDate, id").map(stored)
        }
    }

    // MARK: Changing

    /// Adds a version of the item at `itemPath` with the contents at `contentsPath` (a file, or a directory such as
    /// a package), copied (reflinked where possible) or, with `byMoving`, moved into the store. With `conflict`, the
    /// version is an unresolved conflict version naming where it came from.
    public func add(
        item itemPath: String,
        contentsOf contentsPath: String,
        byMoving: Bool = false,
        conflict: ConflictOrigin? = nil
    ) throws -> StoredVersion {
        let manager = FileManager.default
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try manager.attributesOfItem(atPath: contentsPath)
        } catch {
            throw VersionStoreError(
                .noSuchFile,
                "No version was added: the contents \(contentsPath) cannot be read (\(error))."
            )
        }
        let id = UUID().uuidString.lowercased()
        let name = (itemPath as NSString).lastPathComponent
        let staged = "\(directory)/staging/\(ProcessIdentity.processID)-\(id)"
        do {
            try manager.createDirectory(atPath: staged, withIntermediateDirectories: false)
            if byMoving {
                try recordOrigin(of: contentsPath, for: staged)
                try manager.moveItem(atPath: contentsPath, toPath: staged + "/" + name)
                try Self.syncTree(staged + "/" + name)
            } else {
                try Self.copyTree(from: contentsPath, to: staged + "/" + name)
            }
            try FileSystemCalls.sync(FilePath(staged))
            try FileSystemCalls.sync(FilePath(directory + "/staging"))
        } catch {
            // Contents moved in go back where they were, by a rename that replaces nothing; else they are kept in
            // `recovered/`, and the error says where (until stop 68 a failure after the move deleted them).
            var elsewhere: String?
            if byMoving {
                elsewhere = undoAdd(byMoving: contentsPath, from: [staged], staged: staged, id: id)
            } else {
                try? manager.removeItem(atPath: staged)
            }
            throw VersionStoreError(
                .ioFailure,
                "No version was added: staging the contents failed (\(error))." + Self.keptNote(elsewhere, contentsPath)
            )
        }
        TestFaults.pause(at: "staged", in: directory)
        let row = VersionRow(
            id: id,
            itemPath: itemPath,
            name: name,
            savingComputer: conflict?.computer,
            originator: conflict?.originator,
            modificationDate: ((attributes[.modificationDate] as? Date) ?? now()).timeIntervalSince1970,
            addedDate: now().timeIntervalSince1970,
            isConflict: conflict != nil,
            isResolved: conflict == nil,
            isDiscardable: false,
            itemGoneSince: nil
        )
        let final = "\(directory)/contents/\(id)"
        do {
            // The rename and the row are one step for every other process: both happen under the index's write lock
            // (an IMMEDIATE transaction), which repair() takes too, so no repair sees these contents without the
            // row while this process lives; a crash releases the lock and rolls the row back (issue 36).
            try exclusively { db in
                try FileManager.default.moveItem(atPath: staged, toPath: final)
                try FileSystemCalls.sync(FilePath(directory + "/contents"))
                TestFaults.pause(at: "renamed", in: directory)
                try row.insert(db)
            }
        } catch {
            // Not added: whatever was renamed goes (repair() would remove it too), contents moved in back first.
            var elsewhere: String?
            if byMoving {
                elsewhere = undoAdd(byMoving: contentsPath, from: [final, staged], staged: staged, id: id)
            } else {
                try? manager.removeItem(atPath: final)
                try? manager.removeItem(atPath: staged)
            }
            throw VersionStoreError(
                .storeUnavailable,
                "No version was added: the index could not be written (\(error))."
                    + Self.keptNote(elsewhere, contentsPath)
            )
        }
        // Committed: the record of where moved contents came from has done its work (a repair removes one left).
        if byMoving { try? manager.removeItem(atPath: Self.originRecordPath(of: staged)) }
        return stored(row)
    }

    /// Removes the version named `id` (its row, then its contents); returns it, or `nil` if there was none.
    @discardableResult
    public func remove(id: String) throws -> StoredVersion? {
        let removed = try writing { db -> VersionRow? in
            guard let row = try VersionRow.fetchOne(db, key: id) else { return nil }
            try removeOriginRecords(of: [row.id])
            try row.delete(db)
            return row
        }
        if let removed { removeContents(removed.id) }
        return removed.map(stored)
    }

    /// Removes every version of the item at `itemPath` (one transaction); returns them.
    @discardableResult
    public func removeAll(of itemPath: String) throws -> [StoredVersion] {
        let removed = try writing { db -> [VersionRow] in
            let rows = try VersionRow.fetchAll(
                db,
                sql: "SELECT * FROM version WHERE itemPath = ?",
                arguments: [itemPath]
            )
            try removeOriginRecords(of: rows.map(\.id))
            try db.execute(sql: "DELETE FROM version WHERE itemPath = ?", arguments: [itemPath])
            return rows
        }
        for row in removed { removeContents(row.id) }
        return removed.map(stored)
    }

    /// Marks the conflict version `id` resolved; returns it if that changed anything (`nil` when it was resolved
    /// already, is no conflict version, or is gone).
    public func markResolved(id: String) throws -> StoredVersion? {
        try writing { db -> StoredVersion? in
            guard var row = try VersionRow.fetchOne(db, key: id), !row.isResolved else { return nil }
            row.isResolved = true
            try row.update(db)
            return stored(row)
        }
    }

    /// Marks the version `id` discardable; returns whether it exists.
    @discardableResult
    public func markDiscardable(id: String) throws -> Bool {
        try writing { db -> Bool in
            guard var row = try VersionRow.fetchOne(db, key: id) else { return false }
            if !row.isDiscardable {
                row.isDiscardable = true
                try row.update(db)
            }
            return true
        }
    }

    /// The item at `from` moved to `to` (a coordinated move, or one the daemon's watcher saw): its versions, and
    /// those of everything inside it, follow it, keeping their identifiers. One transaction; O(versions moved)
    /// through the index. Returns how many versions moved.
    @discardableResult
    public func itemMoved(from: String, to: String) throws -> Int {
        guard from != to else { return 0 }
        return try writing { db -> Int in
            // Everything under `from/`: the range ["from/", "from0"), '0' being the byte after '/'.
            try db.execute(
                sql: """
                    UPDATE version SET itemPath = ? || substr(itemPath, ?)
                    WHERE itemPath = ? OR (itemPath >= ? AND itemPath < ?)
                    """,
                arguments: [to, from.utf8.count + 1, from, from + "/", from + "0"]
            )
            return db.changesCount
        }
    }

    /// Looks at every item that has versions: marks those that no longer exist as gone (since now), clears the
    /// mark of those that exist again, and purges the versions of items gone for longer than ``retention``.
    /// Returns the purged versions. O(items with versions): run at start and on a timer, never per event.
    @discardableResult
    ///
    /// Each version is judged by its own mark: one added after its item was marked gone (the item made again, given a
    /// version, and deleted again before a pass saw it) is marked when a pass finds the item gone, and purged a whole
    /// retention after that, never with the older ones (until stop 68 the item's oldest mark purged every version of
    /// it, a version added minutes before included); and a version added by another process between this pass's look
    /// and its write is unmarked, so it stays.
    public func purgeDeletedItems() throws -> [StoredVersion] {
        let items = try reading { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT itemPath, MIN(itemGoneSince) AS gone, SUM(itemGoneSince IS NULL) AS unmarked
                    FROM version GROUP BY itemPath
                    """
            )
            .map { (path: $0["itemPath"] as String, gone: $0["gone"] as Double?, unmarked: $0["unmarked"] as Int) }
        }
        let current = now().timeIntervalSince1970
        let limit = Double(retention.components.seconds)
        var purged: [VersionRow] = []
        for item in items {
            if FileManager.default.fileExists(atPath: item.path) {
                guard item.gone != nil else { continue }
                try writing { db in
                    try db.execute(
                        sql: "UPDATE version SET itemGoneSince = NULL WHERE itemPath = ?",
                        arguments: [item.path]
                    )
                }
                continue
            }
            if item.unmarked > 0 {
                try writing { db in
                    try db.execute(
                        sql: "UPDATE version SET itemGoneSince = ? WHERE itemPath = ? AND itemGoneSince IS NULL",
                        arguments: [current, item.path]
                    )
                }
            }
            guard let since = item.gone, current - since >= limit else { continue }
            purged += try writing { db -> [VersionRow] in
                let condition = "itemPath = ? AND itemGoneSince IS NOT NULL AND itemGoneSince <= ?"
                let rows = try VersionRow.fetchAll(
                    db,
                    sql: "SELECT * FROM version WHERE \(condition)",
                    arguments: [item.path, current - limit]
                )
                try removeOriginRecords(of: rows.map(\.id))
                try db.execute(sql: "DELETE FROM version WHERE \(condition)", arguments: [item.path, current - limit])
                return rows
            }
        }
        for row in purged {
            removeContents(row.id)
            logger.info(
                "purged a version of a deleted item",
                metadata: ["item.path": "\(row.itemPath)", "version.id": "\(row.id)"]
            )
        }
        return purged.map(stored)
    }

    // MARK: Internals

    func stored(_ row: VersionRow) -> StoredVersion {
        StoredVersion(
            id: row.id,
            itemPath: row.itemPath,
            name: row.name,
            contentsPath: "\(directory)/contents/\(row.id)/\(row.name)",
            savingComputer: row.savingComputer,
            originator: row.originator,
            modificationDate: Date(timeIntervalSince1970: row.modificationDate),
            addedDate: Date(timeIntervalSince1970: row.addedDate),
            isConflict: row.isConflict,
            isResolved: row.isResolved,
            isDiscardable: row.isDiscardable,
            itemGoneSince: row.itemGoneSince.map { Date(timeIntervalSince1970: $0) }
        )
    }

    func removeContents(_ id: String) {
        try? FileManager.default.removeItem(atPath: "\(directory)/contents/\(id)")
    }

    func reading<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try database.read(body)
        } catch {
            throw VersionStoreError(.storeUnavailable, "The version store's index could not be read (\(error)).")
        }
    }

    /// Runs `body` in an IMMEDIATE transaction: the index's write lock is taken before `body` runs, whatever the
    /// library's default transaction kind, and held until the commit. An add's rename of its contents and its row,
    /// and repair()'s look at rows and contents, run under it, as every other change (``writing(_:)``) does
    /// (docs/ARCHITECTURE.md §11, issue 36).
    func exclusively<T>(_ body: (Database) throws -> T) throws -> T {
        try database.writeWithoutTransaction { db in
            var result: T?
            try db.inTransaction(.immediate) {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    /// ``exclusively(_:)``, its failure thrown as the store's error.
    func writing<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try exclusively(body)
        } catch let error as VersionStoreError {  // the store's own refusal, from inside: as it was said
            throw error
        } catch {
            throw VersionStoreError(.storeUnavailable, "The version store's index could not be written (\(error)).")
        }
    }
}
