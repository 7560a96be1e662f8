import FCSystem
import Foundation
import Logging
import SystemPackage

// Adds by moving: the folders in which a caller prepares contents to move into the store, and the record of where the
// contents of an add by moving came from, kept until the add is committed or undone, so that a crash in between gives
// the caller's contents back instead of removing them with the staging (until stop 72 a `kill -9` of the adding
// process after its move lost them at the next repair).
//
// The record is `staging/<pid>-<id>.origin`, beside the staging folder: the path the contents were moved from, made
// and flushed before the move. ``VersionStore/repair()`` gives back the contents an add cut short left (in its
// staging folder, or in `contents/<id>` without a row), each at the moment it decides on that folder: renamed to
// where they came from when nothing is there (never replacing what is), else renamed to `recovered/<id>/<name>` in
// the store (logged and reported). Contents are never removed: a folder whose contents could be put nowhere, or whose
// record cannot be read, is kept with its record for the next repair.

extension VersionStore {
    /// A new, empty directory inside the store, for preparing contents to add with `byMoving` (then on the store's
    /// file system, so the move is a rename). The caller removes it; ``repair()`` removes those of ended processes.
    ///
    /// The directory is named after `owner`, the process that prepares contents in it (default: this one; a daemon
    /// names the client it makes it for): ``repair()`` removes it only once that process has ended, so a daemon that restarts
    /// never takes away a directory a live client is still filling.
    public func makeTemporaryDirectory(owner: Int32? = nil) throws -> String {
        let path = "\(directory)/tmp/\(owner ?? ProcessIdentity.processID)-\(UUID().uuidString.lowercased())"
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        } catch {
            throw VersionStoreError(.ioFailure, "No temporary directory could be made in the version store (\(error)).")
        }
        return path
    }

    /// The record of an add by moving whose staging folder is `staged`.
    static func originRecordPath(of staged: String) -> String { staged + ".origin" }

    /// Makes and flushes the record of moving `contentsPath` into `staged`, before the move.
    func recordOrigin(of contentsPath: String, for staged: String) throws {
        let path = Self.originRecordPath(of: staged)
        try FileSystemCalls.writeFile(path, Array(contentsPath.utf8), permissions: 0o600)
        try FileSystemCalls.sync(FilePath(path))
        try FileSystemCalls.sync(FilePath(directory + "/staging"))
    }

    /// The record of the add `id` left in `staging/` by any process (`<pid>-<id>.origin`), or `nil` when there is
    /// none. Called with the index's write lock held, for contents without a row: no live add has such contents.
    func originRecordPath(forID id: String) -> String? {
        let staging = directory + "/staging"
        let suffix = "-\(id).origin"
        return ((try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []).first { $0.hasSuffix(suffix) }
            .map { staging + "/" + $0 }
    }

    /// Removes the records of ended processes' adds that have nothing left to give back: no staging folder, and
    /// contents in `contents/<id>` with their row (`committed`) or none. Called with the index's write lock held,
    /// after the contents without a row were given back. A name whose lookup fails otherwise than with `ENOENT`
    /// keeps its record.
    func removeSpentOriginRecords(committed: Set<String>) {
        let staging = directory + "/staging"
        func absent(_ path: String) -> Bool {
            do {
                _ = try FileSystemCalls.status(path, followingLinks: false, readingMount: false)
                return false
            } catch {
                return error == .noSuchFileOrDirectory
            }
        }
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []
        where entry.hasSuffix(".origin") {
            let folder = String(entry.dropLast(".origin".count))
            let parts = folder.split(separator: "-", maxSplits: 1)
            guard parts.count == 2, let pid = Int32(parts[0]), pid != ProcessIdentity.processID,
                !ProcessLiveness.isAlive(pid), absent(staging + "/" + folder)
            else { continue }
            let id = String(parts[1])
            if committed.contains(id) || absent("\(directory)/contents/\(id)") {
                try? FileManager.default.removeItem(atPath: staging + "/" + entry)
            }
        }
    }

    /// Undoes an add by moving that failed in this process: the contents in `folders` (the staging folder, and the
    /// add's folder in `contents/` when the rename was made) go back to `contentsPath` (moved, across file systems
    /// too), else to `recovered/<id>/`; then the folders and the record go. A folder whose contents could be put
    /// nowhere stays, with the record, for a repair (of the staging, once this process has ended).
    func undoAdd(byMoving contentsPath: String, from folders: [String], staged: String, id: String) {
        let manager = FileManager.default
        var kept = false
        for folder in folders where manager.fileExists(atPath: folder) {
            if let name = (try? manager.contentsOfDirectory(atPath: folder))?.first,
                (try? manager.moveItem(atPath: folder + "/" + name, toPath: contentsPath)) == nil
            {
                var report = RepairReport()
                guard giveBack(id, from: folder, recordPath: Self.originRecordPath(of: staged), report: &report) else {
                    kept = true
                    continue
                }
            }
            try? manager.removeItem(atPath: folder)
        }
        if !kept { try? manager.removeItem(atPath: Self.originRecordPath(of: staged)) }
    }

    /// Gives back the contents the add `id` moved into `folder` (its staging folder, or its folder in `contents/`
    /// without a row) to the path its record at `recordPath` names, or to `recovered/<id>/` when that cannot be done.
    /// Returns whether `folder` and the record may be removed: `false` when the folder cannot be listed, the record
    /// cannot be read, or the contents could be put nowhere.
    func giveBack(_ id: String, from folder: String, recordPath: String, report: inout RepairReport) -> Bool {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder) } catch { return false }
        // Empty: cut short before the move, the contents never left.
        guard let name = names.first else { return true }
        let source = folder + "/" + name
        guard let bytes = try? Data(contentsOf: URL(fileURLWithPath: recordPath)), !bytes.isEmpty,
            let origin = String(data: bytes, encoding: .utf8), origin.hasPrefix("/")
        else {
            logger.error(
                "version store: the record of an add by moving cannot be read; its contents are kept for the next repair",
                metadata: ["contents.path": "\(source)", "record.path": "\(recordPath)"]
            )
            return false
        }
        if (try? FileSystemCalls.renameWithoutReplacing(source, to: origin)) != nil {
            try? FileSystemCalls.sync(FilePath((origin as NSString).deletingLastPathComponent))
            report.restoredContents.append(origin)
            return true
        }
        // Taken since, gone, or on another file system: kept in the store, under the add's id.
        let recovered = "\(directory)/recovered/\(id)"
        do {
            for folder in [directory + "/recovered", recovered] {
                do { try FileSystemCalls.makeDirectory(folder, permissions: 0o700) } catch  where error == .fileExists {
                }
            }
            try FileSystemCalls.rename(FilePath(source), to: FilePath(recovered + "/" + name))
            for folder in [recovered, directory + "/recovered", directory] {
                try? FileSystemCalls.sync(FilePath(folder))
            }
            report.recoveredContents.append(recovered + "/" + name)
            return true
        } catch {
            logger.error(
                "version store: the contents of an add by moving cut short could not be given back; kept for the next repair",
                metadata: ["contents.path": "\(source)", "origin.path": "\(origin)", "error": "\(error)"]
            )
            return false
        }
    }
}
