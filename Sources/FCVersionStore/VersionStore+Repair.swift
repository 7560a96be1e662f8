import FCSystem
import Foundation
import GRDB
import Logging
import SystemPackage

/// What ``VersionStore/repair()`` found and mended.
public struct RepairReport: Sendable, Equatable {
    /// Contents without an index row (an add or a removal cut short): removed (those an add by moving took from its
    /// caller given back first: ``restoredContents``, ``recoveredContents``).
    public var orphanContents: [String] = []
    /// Index rows whose contents are missing: removed.
    public var rowsWithoutContents: [String] = []
    /// Staging and temporary directories of processes that ended: removed (contents moved in given back first).
    public var leftovers: [String] = []
    /// Contents of adds by moving cut short, put back where they were moved from (their paths).
    public var restoredContents: [String] = []
    /// Contents of adds by moving cut short that could not go back (their place taken since, on another file system,
    /// or in a temporary folder of the store this repair removes): moved to `recovered/<id>/` (their paths there).
    public var recoveredContents: [String] = []

    public var isClean: Bool {
        orphanContents.isEmpty && rowsWithoutContents.isEmpty && leftovers.isEmpty && restoredContents.isEmpty
            && recoveredContents.isEmpty
    }
}

extension VersionStore {
    /// Checks the store against its index and mends it: contents without a row are removed, rows without contents
    /// are removed, and staging and temporary directories of ended processes are removed. Contents an add by moving
    /// took from the caller are given back first, never removed (VersionStore+ByMoving.swift). Runs inside one write
    /// transaction, so no add or removal of another process is half-seen. Run at start (``init(directory:retention:logger:now:)``).
    @discardableResult
    public func repair() throws -> RepairReport {
        let manager = FileManager.default
        var report = RepairReport()
        let contents = directory + "/contents"
        try writing { db in
            let ids = Set(try String.fetchAll(db, sql: "SELECT id FROM version"))
            let present = Set((try? manager.contentsOfDirectory(atPath: contents)) ?? [])
            // Without a listing of staging/ no record can be ruled out: contents without a row wait for a repair
            // that can list it.
            let names = stagingNames()
            for entry in present.subtracting(ids).sorted() {
                guard let names else { break }
                // Cut short between the rename and the commit (with the write lock held here, no live add has
                // contents without their row): contents moved in go back before the folder goes.
                if let record = originRecordPath(forID: entry, among: names) {
                    guard giveBack(entry, from: contents + "/" + entry, recordPath: record, report: &report),
                        removeEmptiedFolder(contents + "/" + entry)
                    else { continue }
                    try? manager.removeItem(atPath: record)
                    report.orphanContents.append(entry)
                    continue
                }
                try? manager.removeItem(atPath: contents + "/" + entry)
                report.orphanContents.append(entry)
            }
            if let names { removeSpentOriginRecords(among: names, committed: ids) }
            let rows = try VersionRow.fetchAll(db, sql: "SELECT * FROM version")
            // lstat, not stat: a version of a symbolic link whose target is gone still has its contents. Only a name
            // that is not there is missing: any other failure (EACCES, EMFILE, ENOMEM, EIO) says nothing of the
            // contents, and the row stays (until stop 68 it was deleted, and the contents with it).
            func missing(_ path: String) -> Bool {
                do {
                    _ = try FileSystemCalls.status(path, followingLinks: false)
                    return false
                } catch {
                    return error == .noSuchFileOrDirectory || error == .notDirectory
                }
            }
            for row in rows where missing("\(contents)/\(row.id)/\(row.name)") {
                try row.delete(db)
                try? manager.removeItem(atPath: contents + "/" + row.id)
                report.rowsWithoutContents.append(row.id)
            }
        }
        for sub in ["staging", "tmp"] {
            let folder = directory + "/" + sub
            for entry in (try? manager.contentsOfDirectory(atPath: folder)) ?? [] {
                let pid = entry.split(separator: "-", maxSplits: 1).first.flatMap { Int32($0) } ?? 0
                guard pid != ProcessIdentity.processID, !ProcessLiveness.isAlive(pid), !entry.hasSuffix(".origin")
                else { continue }
                let record = Self.originRecordPath(of: folder + "/" + entry)
                if sub == "staging", !Self.isAbsent(record) {
                    // Cut short before the rename: the contents go back before the staging folder goes.
                    let id = String(entry.split(separator: "-", maxSplits: 1).last ?? "")
                    guard giveBack(id, from: folder + "/" + entry, recordPath: record, report: &report),
                        removeEmptiedFolder(folder + "/" + entry)
                    else { continue }
                    try? manager.removeItem(atPath: record)
                    report.leftovers.append(sub + "/" + entry)
                    continue
                }
                try? manager.removeItem(atPath: folder + "/" + entry)
                report.leftovers.append(sub + "/" + entry)
            }
        }
        if !report.isClean {
            logger.warning(
                "version store repaired",
                metadata: [
                    "store.path": "\(directory)",
                    "orphan.contents": "\(report.orphanContents.count)",
                    "rows.without.contents": "\(report.rowsWithoutContents.count)",
                    "leftovers": "\(report.leftovers.count)",
                    "restored.contents": "\(report.restoredContents)",
                    "recovered.contents": "\(report.recoveredContents)",
                ]
            )
        }
        return report
    }

    /// Replaces the item at `itemPath` with the contents of version `id`, and returns where the item is now: its
    /// path, or, when the version's extension differs, the item's name with the version's extension (the old item
    /// then removed). The new contents are prepared next to the item and renamed over it. With `byMoving`, the
    /// version is removed once the item is in place.
    ///
    /// The contents are copied (reflinked where the file system can), `byMoving` or not: the version leaves the store
    /// only after the item is in place, so that a failure or a crash on the way leaves it whole. Until stop 68
    /// `byMoving` moved them out first, and a rename that failed (a package version over what is now a file) or a
    /// crash then lost the version. A failure also puts a folder set aside back at the item's place.
    public func replaceItem(at itemPath: String, with id: String, byMoving: Bool) throws -> String {
        guard let version = try version(id: id) else {
            throw VersionStoreError(
                .noSuchVersion,
                "The version \(id) is no longer in the store; nothing was replaced."
            )
        }
        let manager = FileManager.default
        let item = itemPath as NSString
        let parent = item.deletingLastPathComponent
        let versionExtension = (version.name as NSString).pathExtension
        var result = itemPath
        if versionExtension != item.pathExtension {
            let base = (item.lastPathComponent as NSString).deletingPathExtension
            result = parent + "/" + (versionExtension.isEmpty ? base : base + "." + versionExtension)
        }
        let token = UUID().uuidString.lowercased()
        let prepared = "\(parent)/.\((result as NSString).lastPathComponent).fcversion-\(token)"
        do {
            try Self.copyTree(from: version.contentsPath, to: prepared)
            var isDirectory: ObjCBool = false
            if manager.fileExists(atPath: result, isDirectory: &isDirectory), isDirectory.boolValue {
                // rename(2) replaces only empty directories: set the old tree aside first.
                let aside = "\(parent)/.\((result as NSString).lastPathComponent).fcold-\(token)"
                try FileSystemCalls.rename(FilePath(result), to: FilePath(aside))
                do {
                    try FileSystemCalls.rename(FilePath(prepared), to: FilePath(result))
                } catch {
                    try? FileSystemCalls.rename(FilePath(aside), to: FilePath(result))
                    throw error
                }
                try? manager.removeItem(atPath: aside)
            } else {
                try FileSystemCalls.rename(FilePath(prepared), to: FilePath(result))
            }
            try? FileSystemCalls.sync(FilePath(parent))
        } catch {
            try? manager.removeItem(atPath: prepared)
            throw VersionStoreError(.ioFailure, "The item \(itemPath) was not replaced with version \(id): \(error).")
        }
        if result != itemPath { try? manager.removeItem(atPath: itemPath) }
        if byMoving { try remove(id: id) }
        return result
    }
}

/// Test-only pauses in the middle of an add, so that a test can `kill -9` the process at a known point, or let
/// another process open the store meanwhile: with `FILECOORD_VERSION_STORE_FAULT=<point>` in the environment, the
/// store creates `<store>/fault-<point>` and waits there until that file is removed (then the add goes on), for as
/// long as it takes. Points: `staged` (contents flushed in staging, no lock held), `renamed` (contents in place, row
/// not committed, the index's write lock held).
enum TestFaults {
    static let point = ProcessInfo.processInfo.environment["FILECOORD_VERSION_STORE_FAULT"]

    static func pause(at name: String, in directory: String) {
        guard point == name else { return }
        let marker = "\(directory)/fault-\(name)"
        _ = FileManager.default.createFile(atPath: marker, contents: Data())
        while FileManager.default.fileExists(atPath: marker) { Thread.sleep(forTimeInterval: 0.01) }
    }
}
