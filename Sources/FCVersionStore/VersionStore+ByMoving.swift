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
// the store (logged and reported). Contents are never removed: a folder that cannot be listed or holds more than its
// contents, whose record cannot be read, or whose contents could be put nowhere, is kept with its record for the next
// repair.

extension VersionStore {
    /// A new, empty directory inside the store, for preparing contents to add with `byMoving` (then on the store's
    /// file system, so the move is a rename). The caller removes it; ``repair()`` removes those of ended processes.
    ///
    /// The directory is named after `owner`, the process that prepares contents in it (default: this one; a daemon
    /// names the client it makes it for): ``repair()`` removes it only once that process has ended, so a daemon that
    /// restarts never takes away a directory a live client is still filling.
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
        // A relative path is this process's; the record must name the place for any process.
        let origin =
            contentsPath.hasPrefix("/") ? contentsPath : FileManager.default.currentDirectoryPath + "/" + contentsPath
        try FileSystemCalls.writeFile(path, Array(origin.utf8), permissions: 0o600)
        try FileSystemCalls.sync(FilePath(path))
        try FileSystemCalls.sync(FilePath(directory + "/staging"))
    }

    /// The end of a failed add's error when the contents it moved in are not back at `contentsPath`.
    static func keptNote(_ elsewhere: String?, _ contentsPath: String) -> String {
        guard let elsewhere else { return "" }
        return " The contents moved in from \(contentsPath) could not go back there; they are kept at \(elsewhere)."
    }

    /// Whether `path` is inside a folder of the store's `tmp/` (``makeTemporaryDirectory(owner:)``) that a repair
    /// removes: its owner has ended (not this process), or its name names no process, as the repair's loop reads it.
    /// The store's `tmp/` is found among `path`'s ancestors by identity, not by spelling (a relative store directory, a
    /// link, a doubled slash spell it otherwise than `path` does).
    func isInRemovableTemporaryFolder(_ path: String) -> Bool {
        guard let temporary = try? FileSystemCalls.status(directory + "/tmp", followingLinks: true, readingMount: false)
        else { return false }
        // The path as written, and with its links resolved (a link to a folder inside tmp/ is no ancestor of it as
        // written): removable if either spelling's folder right below tmp/ is.
        let parent = (path as NSString).deletingLastPathComponent
        let resolved =
            URL(fileURLWithPath: parent).resolvingSymlinksInPath().path + "/" + (path as NSString).lastPathComponent
        for spelling in [path, resolved] {
            var child = spelling
            var ancestor = (spelling as NSString).deletingLastPathComponent
            while ancestor.count > 1, ancestor != child {
                if (try? FileSystemCalls.status(ancestor, followingLinks: true, readingMount: false))?.identity
                    == temporary.identity
                {
                    let folder = (child as NSString).lastPathComponent
                    let pid = folder.split(separator: "-", maxSplits: 1).first.flatMap { Int32($0) } ?? 0
                    if pid != ProcessIdentity.processID && !ProcessLiveness.isAlive(pid) { return true }
                    // Not this spelling's folder; the other spelling may still reach one (a link inside a live
                    // folder to an ended one's).
                    break
                }
                child = ancestor
                ancestor = (ancestor as NSString).deletingLastPathComponent
            }
        }
        return false
    }

    /// Whether nothing is at `path`: `true` only for `ENOENT`; any other failure to look says nothing, and counts as
    /// something there (what the caller would remove or lose is kept).
    static func isAbsent(_ path: String) -> Bool {
        do {
            _ = try FileSystemCalls.status(path, followingLinks: false, readingMount: false)
            return false
        } catch {
            return error == .noSuchFileOrDirectory
        }
    }

    /// The names in `staging/`, or `nil` when it cannot be listed (then nothing that a record might protect is
    /// removed).
    func stagingNames() -> [String]? {
        if let names = try? FileManager.default.contentsOfDirectory(atPath: directory + "/staging") { return names }
        // No staging folder (removed by hand while the store is open): no record either.
        return Self.isAbsent(directory + "/staging") ? [] : nil
    }

    /// The record of the add `id` among `names` (of `staging/`, left by any process: `<pid>-<id>.origin`), or `nil`.
    func originRecordPath(forID id: String, among names: [String]) -> String? {
        let suffix = "-\(id).origin"
        return names.first { $0.hasSuffix(suffix) }.map { directory + "/staging/" + $0 }
    }

    /// Removes the records, among `names` (of `staging/`), of ended processes' adds that have nothing left to give
    /// back: no staging folder, and contents in `contents/<id>` with their row (`committed`) or none. Called with the
    /// index's write lock held, after the contents without a row were given back.
    func removeSpentOriginRecords(among names: [String], committed: Set<String>) {
        let staging = directory + "/staging"
        for entry in names where entry.hasSuffix(".origin") {
            let folder = String(entry.dropLast(".origin".count))
            let parts = folder.split(separator: "-", maxSplits: 1)
            guard parts.count == 2, let pid = Int32(parts[0]), pid != ProcessIdentity.processID,
                !ProcessLiveness.isAlive(pid), Self.isAbsent(staging + "/" + folder)
            else { continue }
            let id = String(parts[1])
            if committed.contains(id) || Self.isAbsent("\(directory)/contents/\(id)") {
                try? FileManager.default.removeItem(atPath: staging + "/" + entry)
            }
        }
    }

    /// Removes the records of adds of `ids` (versions being removed, so never to be given back), among the names of
    /// `staging/`. Called inside the removal's write transaction: a record left by a crash right after its add's
    /// commit would otherwise make the removed contents look like an add cut short to a repair in between.
    func removeOriginRecords(of ids: [String]) throws {
        guard !ids.isEmpty else { return }
        guard let names = stagingNames() else {
            throw VersionStoreError(
                .ioFailure,
                "No version was removed: the store's staging folder cannot be listed, so a record that could give the "
                    + "version's contents back to where they were added from cannot be ruled out."
            )
        }
        for id in ids {
            if let record = originRecordPath(forID: id, among: names) {
                try? FileManager.default.removeItem(atPath: record)
            }
        }
    }

    /// Undoes an add by moving that failed in this process: the contents in `folders` (the staging folder, and the
    /// add's folder in `contents/` when the rename was made) go back to `contentsPath` by a rename that replaces
    /// nothing, else to `recovered/<id>/`; then the folders and the record go. A folder that cannot be looked at, or
    /// whose contents could be put nowhere, stays with the record, for a repair (of the staging, once this process has
    /// ended). Returns where the contents are when that is not `contentsPath`, for the caller's error.
    func undoAdd(byMoving contentsPath: String, from folders: [String], staged: String, id: String) -> String? {
        var keptForRepair = false
        var elsewhere: String?
        for folder in folders where !Self.isAbsent(folder) {
            var report = RepairReport()
            let gaveBack = giveBack(id, from: folder, recordPath: Self.originRecordPath(of: staged), report: &report)
            if !gaveBack || !removeEmptiedFolder(folder) { keptForRepair = true }
            // Where the contents are when not back at `contentsPath`: recovered/, or still in the folder.
            elsewhere = gaveBack ? (report.recoveredContents.first ?? elsewhere) : (elsewhere ?? folder)
        }
        if !keptForRepair { try? FileManager.default.removeItem(atPath: Self.originRecordPath(of: staged)) }
        return elsewhere
    }

    /// Removes `folder`, emptied by ``giveBack(_:from:recordPath:report:)``, with `rmdir`: `true` once it is gone
    /// (also when another process's repair removed it first), `false` when anything came in since or it cannot go
    /// (logged: the folder and its record stay for the next repair).
    func removeEmptiedFolder(_ folder: String) -> Bool {
        do {
            try FileSystemCalls.removeEmptyDirectory(folder)
            return true
        } catch {
            if error == .noSuchFileOrDirectory { return true }
            logger.warning(
                "version store: a folder whose moved-in contents were given back cannot be removed; kept with its record",
                metadata: ["folder.path": "\(folder)", "error": "\(error)"]
            )
            return false
        }
    }

    /// Gives back the contents the add `id` moved into `folder` (its staging folder, or its folder in `contents/`
    /// without a row) to the path its record at `recordPath` names, or to `recovered/<id>/` when that cannot be done.
    /// Returns whether `folder` is left empty, and may go (with `rmdir`, which fails if anything came in since) with
    /// the record: `false` when the folder cannot be listed or holds more than the one entry an add puts there, the
    /// record cannot be read, or the contents could be put nowhere. Contents moved from a folder of the store's
    /// `tmp/` that the same repair removes (``isInRemovableTemporaryFolder(_:)``) go to `recovered/`.
    func giveBack(_ id: String, from folder: String, recordPath: String, report: inout RepairReport) -> Bool {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder) } catch { return false }
        // Empty: cut short before the move, the contents never left.
        guard let name = names.first else { return true }
        let source = folder + "/" + name
        guard names.count == 1, let bytes = try? Data(contentsOf: URL(fileURLWithPath: recordPath)), !bytes.isEmpty,
            let origin = String(data: bytes, encoding: .utf8), origin.hasPrefix("/")
        else {
            logger.error(
                "version store: an add by moving cut short left what cannot be given back (its record unreadable, or more than its contents); kept for the next repair",
                metadata: ["contents.path": "\(source)", "record.path": "\(recordPath)"]
            )
            return false
        }
        if !isInRemovableTemporaryFolder(origin),
            (try? FileSystemCalls.renameWithoutReplacing(source, to: origin)) != nil
        {
            try? FileSystemCalls.sync(FilePath((origin as NSString).deletingLastPathComponent))
            report.restoredContents.append(origin)
            return true
        }
        // Taken since, gone, on another file system, or where renames cannot refuse to replace: kept in the store,
        // under the add's id.
        let recovered = "\(directory)/recovered/\(id)"
        do {
            for folder in [directory + "/recovered", recovered] {
                do { try FileSystemCalls.makeDirectory(folder, permissions: 0o700) } catch  where error == .fileExists {
                    // Made by an earlier give-back.
                }
            }
            try FileSystemCalls.rename(FilePath(source), to: FilePath(recovered + "/" + name))
            for folder in [recovered, directory + "/recovered", directory] {
                try? FileSystemCalls.sync(FilePath(folder))
            }
            report.recoveredContents.append(recovered + "/" + name)
            logger.warning(
                "version store: contents of an add by moving cut short could not go back; kept in the store",
                metadata: ["contents.path": "\(recovered)/\(name)", "origin.path": "\(origin)"]
            )
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
