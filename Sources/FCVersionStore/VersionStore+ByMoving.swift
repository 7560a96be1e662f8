import FCSystem
import Foundation
import Logging
import SystemPackage

// Adds by moving: the folders in which a caller prepares contents to move into the store, and the record of where
// the contents of an add by moving came from, kept until the add is committed or undone, so that a crash in
// between gives the caller's contents back instead of removing them with the staging (stop 72; until then a `kill -9`
// of the adding process after its move lost them at the next repair).
//
// The record is `staging/<pid>-<id>.origin`, beside the staging folder, made and flushed before the move: the path the
// contents were moved from and their `(st_dev, st_ino)` then. `repair()` reads the records of ended processes and
// gives each add's contents back (``restoreOrigin(of:from:record:report:)``): to where they came from when nothing is there
// now, else to `recovered/<id>/<name>` in the store (named in the log). The contents are never removed: a folder whose
// contents could not be put anywhere is kept, with its record, for the next repair.

/// An add by moving's record of where its contents came from.
struct OriginRecord: Equatable {
    /// The path the contents were moved from.
    var path: String
    /// What was at `path` before the move: the contents themselves.
    var identity: FileIdentity

    /// The record's bytes: `<st_dev> <st_ino>`, a newline, the path (which may itself hold newlines).
    var bytes: Data { Data("\(identity.device) \(identity.inode)\n\(path)".utf8) }

    init(path: String, identity: FileIdentity) {
        self.path = path
        self.identity = identity
    }

    init?(_ data: Data) {
        guard let text = String(data: data, encoding: .utf8), let newline = text.firstIndex(of: "\n") else {
            return nil
        }
        let numbers = text[..<newline].split(separator: " ")
        guard numbers.count == 2, let device = UInt64(numbers[0]), let inode = UInt64(numbers[1]) else { return nil }
        let path = String(text[text.index(after: newline)...])
        guard path.hasPrefix("/") else { return nil }
        self.init(path: path, identity: FileIdentity(device: device, inode: inode))
    }
}

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

    /// Makes and flushes the record of moving `contentsPath` into `staged` (before the move; the staging folder is
    /// flushed by the caller before the move too). Throws when the contents cannot be looked at or the record written.
    func recordOrigin(of contentsPath: String, for staged: String) throws {
        let status = try FileSystemCalls.status(contentsPath, followingLinks: false, readingMount: false)
        let record = OriginRecord(path: contentsPath, identity: status.identity)
        let path = Self.originRecordPath(of: staged)
        try record.bytes.write(to: URL(fileURLWithPath: path))
        try FileSystemCalls.sync(FilePath(path))
        try FileSystemCalls.sync(FilePath(directory + "/staging"))
    }

    /// The records of adds by moving of processes that ended, by the id of their add (``repair()``).
    func originRecordsOfEndedProcesses() -> [String: (file: String, record: OriginRecord?)] {
        let staging = directory + "/staging"
        var records: [String: (file: String, record: OriginRecord?)] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []
        where entry.hasSuffix(".origin") {
            let name = entry.dropLast(".origin".count)
            let parts = name.split(separator: "-", maxSplits: 1)
            guard parts.count == 2, let pid = Int32(parts[0]), pid != ProcessIdentity.processID,
                !ProcessLiveness.isAlive(pid)
            else { continue }
            let file = staging + "/" + entry
            records[String(parts[1])] = (
                file, (try? Data(contentsOf: URL(fileURLWithPath: file))).flatMap(OriginRecord.init)
            )
        }
        return records
    }

    /// Gives back the contents an add by moving left in `folder` (its staging folder, or its folder in `contents/`
    /// without a row) to where `record` says they came from, or to `recovered/<id>/` when something else is there
    /// now. Returns whether `folder` may be removed: `false` when its contents could be put nowhere.
    func restoreOrigin(of id: String, from folder: String, record: OriginRecord?, report: inout RepairReport) -> Bool {
        let manager = FileManager.default
        guard let record, let name = ((try? manager.contentsOfDirectory(atPath: folder)) ?? []).first else {
            return true
        }
        let source = folder + "/" + name
        let there: FileStatus?
        do {
            there = try FileSystemCalls.status(record.path, followingLinks: false, readingMount: false)
        } catch {
            there = nil
            // Only a name that is not there is free to take back: any other failure goes to `recovered/`.
            if error == .noSuchFileOrDirectory, (try? manager.moveItem(atPath: source, toPath: record.path)) != nil {
                try? FileSystemCalls.sync(FilePath((record.path as NSString).deletingLastPathComponent))
                report.restoredContents.append(record.path)
                return true
            }
        }
        // The move never took them away (a copy across file systems cut short before its removal): the folder holds
        // a copy.
        if there?.identity == record.identity { return true }
        let recovered = "\(directory)/recovered/\(id)"
        do {
            try manager.createDirectory(atPath: recovered, withIntermediateDirectories: true)
            try manager.moveItem(atPath: source, toPath: recovered + "/" + name)
            try? FileSystemCalls.sync(FilePath(recovered))
            report.recoveredContents.append(recovered + "/" + name)
            return true
        } catch {
            logger.error(
                "version store: contents of an add by moving cut short could not be given back; kept for the next repair",
                metadata: ["contents.path": "\(source)", "origin.path": "\(record.path)", "error": "\(error)"]
            )
            return false
        }
    }
}
