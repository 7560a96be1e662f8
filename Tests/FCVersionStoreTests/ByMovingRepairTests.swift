@_spi(Testing) import FCVersionStore
import Foundation
import Testing

/// The repair's side of an add by moving cut short (VersionStore+ByMoving.swift), on folders laid out as a process
/// that ended would have left them: the contents go back to where their record says they came from, or to
/// `recovered/<id>/` when that place is taken, and are never removed, even when the record cannot be read.
@Suite struct ByMovingRepairTests {
    /// A process id above Linux's largest `pid_max` (2^22): never a running process.
    static let endedProcess: Int32 = 2_000_000_000

    /// A fresh store with the user's folder beside it; `leave` lays out what an ended adder left.
    final class Sandbox {
        let root = NSTemporaryDirectory() + "fcbymoving-" + UUID().uuidString
        var store: String { root + "/store" }
        var userFile: String { root + "/files/prepared.txt" }
        /// The store, open before anything is laid out: its `repair()` reports what it did.
        let opened: VersionStore
        init() throws {
            try FileManager.default.createDirectory(atPath: root + "/files", withIntermediateDirectories: true)
            opened = try VersionStore(directory: root + "/store")
        }
        deinit { try? FileManager.default.removeItem(atPath: root) }

        /// Contents named `doc.txt` in `folder` (created), and the add's origin record holding `record`.
        func leave(in folder: String, id: String, record: String) throws {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data("the prepared contents".utf8).write(to: URL(fileURLWithPath: folder + "/doc.txt"))
            let origin = "\(store)/staging/\(ByMovingRepairTests.endedProcess)-\(id).origin"
            try Data(record.utf8).write(to: URL(fileURLWithPath: origin))
        }
        func text(_ path: String) -> String? {
            (try? Data(contentsOf: URL(fileURLWithPath: path))).map { String(decoding: $0, as: UTF8.self) }
        }
        func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }
    }

    @Test("Staging left after the move: the contents go back to their old path, and nothing is left")
    func stagingGoesBackToAFreePlace() throws {
        let box = try Sandbox()
        let staged = "\(box.store)/staging/\(Self.endedProcess)-a1"
        try box.leave(in: staged, id: "a1", record: box.userFile)
        let report = try box.opened.repair()
        #expect(box.text(box.userFile) == "the prepared contents")
        #expect(report.restoredContents == [box.userFile])
        #expect(try FileManager.default.contentsOfDirectory(atPath: box.store + "/staging").isEmpty)
    }

    @Test("Contents renamed in without their row, their place taken since: kept in recovered/, the new file untouched")
    func orphanContentsGoToRecoveredWhenThePlaceIsTaken() throws {
        let box = try Sandbox()
        try Data("written there since".utf8).write(to: URL(fileURLWithPath: box.userFile))
        try box.leave(in: "\(box.store)/contents/b2", id: "b2", record: box.userFile)
        let report = try box.opened.repair()
        #expect(box.text(box.userFile) == "written there since")
        #expect(box.text("\(box.store)/recovered/b2/doc.txt") == "the prepared contents")
        #expect(report.recoveredContents == ["\(box.store)/recovered/b2/doc.txt"])
        #expect(!box.exists("\(box.store)/contents/b2"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: box.store + "/staging").isEmpty)
    }

    @Test(
        "A record that cannot be read keeps the contents and the record for the next repair",
        arguments: ["", "relative"]
    )
    func anUnreadableRecordKeepsEverything(record: String) throws {
        let box = try Sandbox()
        let staged = "\(box.store)/staging/\(Self.endedProcess)-c3"
        try box.leave(in: staged, id: "c3", record: record)
        try box.leave(in: "\(box.store)/contents/c4", id: "c4", record: record)
        let report = try box.opened.repair()
        #expect(box.text(staged + "/doc.txt") == "the prepared contents")
        #expect(box.text("\(box.store)/contents/c4/doc.txt") == "the prepared contents")
        #expect(box.exists(staged + ".origin"))
        #expect(box.exists("\(box.store)/staging/\(Self.endedProcess)-c4.origin"))
        #expect(report.leftovers.isEmpty && report.orphanContents.isEmpty)
    }

    @Test(
        "Contents moved from a temporary folder of the store that the repair removes go to recovered/, not back there",
        arguments: [
            "its name", "a link to the store", "a link to the folder", "a link inside a live folder",
            "a folder named for no process",
        ]
    )
    func contentsFromARemovableTemporaryFolderAreRecovered(spelling: String) throws {
        let box = try Sandbox()
        // What temporaryDirectoryURLForNewVersionOfItem handed the ended process, emptied by its add's move.
        let name = spelling == "a folder named for no process" ? "work" : "\(Self.endedProcess)-e6"
        let temporary = "\(box.store)/tmp/\(name)"
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: false)
        var recorded = temporary + "/prepared.txt"
        if spelling == "a link to the store" {
            try FileManager.default.createSymbolicLink(atPath: box.root + "/link", withDestinationPath: box.store)
            recorded = "\(box.root)/link/tmp/\(name)/prepared.txt"
        } else if spelling == "a link inside a live folder" {
            // This process's own folder (alive), holding a link to the ended process's.
            let live = "\(box.store)/tmp/\(ProcessInfo.processInfo.processIdentifier)-live"
            try FileManager.default.createDirectory(atPath: live, withIntermediateDirectories: false)
            try FileManager.default.createSymbolicLink(atPath: live + "/link", withDestinationPath: temporary)
            recorded = live + "/link/prepared.txt"
        } else if spelling == "a link to the folder" {
            try FileManager.default.createSymbolicLink(atPath: box.root + "/link", withDestinationPath: temporary)
            recorded = "\(box.root)/link/prepared.txt"
        }
        let staged = "\(box.store)/staging/\(Self.endedProcess)-e7"
        try box.leave(in: staged, id: "e7", record: recorded)
        let report = try box.opened.repair()
        #expect(box.text("\(box.store)/recovered/e7/doc.txt") == "the prepared contents")
        #expect(report.recoveredContents == ["\(box.store)/recovered/e7/doc.txt"])
        #expect(!box.exists(temporary), "the temporary folder goes, as before")
    }

    @Test("A staging folder holding more than the one entry an add puts there is kept whole, with its record")
    func aFolderWithMoreThanTheContentsIsKept() throws {
        let box = try Sandbox()
        let staged = "\(box.store)/staging/\(Self.endedProcess)-d5"
        try box.leave(in: staged, id: "d5", record: box.userFile)
        try Data("another".utf8).write(to: URL(fileURLWithPath: staged + "/other.txt"))
        let report = try box.opened.repair()
        #expect(box.text(staged + "/doc.txt") == "the prepared contents")
        #expect(box.text(staged + "/other.txt") == "another")
        #expect(box.exists(staged + ".origin"))
        #expect(!box.exists(box.userFile))
        #expect(report.leftovers.isEmpty)
    }

    @Test("Removing a version removes a record its add left behind: a later repair gives nothing back")
    func removingAVersionRemovesItsRecord() throws {
        let box = try Sandbox()
        let contents = box.root + "/files/contents.txt"
        try Data("a version".utf8).write(to: URL(fileURLWithPath: contents))
        let version = try box.opened.add(item: box.root + "/files/doc.txt", contentsOf: contents, byMoving: true)
        // As a crash right after the commit leaves it, by a process that has ended.
        let record = "\(box.store)/staging/\(Self.endedProcess)-\(version.id).origin"
        try Data(contents.utf8).write(to: URL(fileURLWithPath: record))
        try box.opened.remove(id: version.id)
        #expect(!box.exists(record))
        // As a removal cut short between its commit and the contents' removal leaves them (or as a repair of another
        // process sees them in that window).
        try FileManager.default.createDirectory(
            atPath: "\(box.store)/contents/\(version.id)",
            withIntermediateDirectories: false
        )
        try Data("a version".utf8).write(to: URL(fileURLWithPath: "\(box.store)/contents/\(version.id)/doc.txt"))
        let report = try box.opened.repair()
        #expect(!box.exists(contents), "the removed version's contents did not come back")
        #expect(report.restoredContents.isEmpty && report.recoveredContents.isEmpty)
    }

    @Test("The record of an add that committed, left by a process that ended, is removed; the version stays")
    func aSpentRecordIsRemoved() throws {
        let box = try Sandbox()
        let store = box.opened
        let contents = box.root + "/files/contents.txt"
        try Data("a version".utf8).write(to: URL(fileURLWithPath: contents))
        let version = try store.add(item: box.root + "/files/doc.txt", contentsOf: contents, byMoving: true)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: box.store + "/staging").isEmpty,
            "its own record went"
        )
        let record = "\(box.store)/staging/\(Self.endedProcess)-\(version.id).origin"
        try Data(contents.utf8).write(to: URL(fileURLWithPath: record))
        _ = try store.repair()
        #expect(!box.exists(record))
        #expect(!box.exists(contents), "the version's contents stay in the store")
        #expect(box.text(version.contentsPath) == "a version")
    }
}
