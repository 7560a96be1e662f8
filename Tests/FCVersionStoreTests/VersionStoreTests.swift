@_spi(Testing) import FCVersionStore
import Foundation
import Synchronization
import Testing

/// The store's rules on real files in a temporary directory: add (copied and moved), list, find, resolve, remove,
/// replace, moves, purging deleted items, and the repair at start after the crashes that can cut an add or a
/// removal short.
@Suite struct VersionStoreTests {
    /// A fresh directory holding `store/` and the user's files.
    final class Sandbox {
        let root: String
        init() throws {
            root = NSTemporaryDirectory() + "fcversions-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: root + "/files", withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: root) }
        var storePath: String { root + "/store" }
        func file(_ name: String, _ text: String) throws -> String {
            let path = root + "/files/" + name
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        func text(_ path: String) throws -> String {
            String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        }
    }

    /// Several processes (a daemon, clients storing in process) open a fresh store at once: each open creates the
    /// schema or finds it, none fails (issue 28: "table version already exists" failed an add in another process).
    /// Stores opened on threads of one process use connections of their own, as processes do.
    @Test func storesOpenedAtOnceOnAFreshDirectoryAllOpen() throws {
        for _ in 0..<20 {
            let box = try Sandbox()
            let failures = Mutex<[String]>([])
            let directory = box.storePath
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                do {
                    _ = try VersionStore(directory: directory)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [])
            let store = try VersionStore(directory: box.storePath)
            let item = try box.file("doc.txt", "one")
            #expect(try store.versions(of: store.add(item: item, contentsOf: item).itemPath).count == 1)
        }
    }

    @Test func addListFindAndRemove() throws {
        let box = try Sandbox()
        let store = try VersionStore(directory: box.storePath)
        let item = try box.file("doc.txt", "one")
        let first = try store.add(item: item, contentsOf: item)
        try Data("two".utf8).write(to: URL(fileURLWithPath: item))
        let second = try store.add(item: item, contentsOf: item)
        #expect(try store.versions(of: item).map(\.id) == [first.id, second.id])
        #expect(try box.text(first.contentsPath) == "one")
        #expect(try box.text(second.contentsPath) == "two")
        #expect(first.name == "doc.txt" && first.isResolved && !first.isConflict)
        #expect(try store.version(id: second.id) == second)
        #expect(try store.remove(id: first.id)?.id == first.id)
        #expect(!FileManager.default.fileExists(atPath: first.contentsPath))
        #expect(try store.remove(id: first.id) == nil)
        #expect(try store.versions(of: item).map(\.id) == [second.id])
        #expect(try store.removeAll(of: item).map(\.id) == [second.id])
        #expect(try store.versions(of: item).isEmpty)
        #expect(try box.text(item) == "two", "the user's file is never touched")
    }

    @Test func addByMovingTakesTheContentsAndMissingContentsFail() throws {
        let box = try Sandbox()
        let store = try VersionStore(directory: box.storePath)
        let item = try box.file("doc.txt", "current")
        let temporary = try store.makeTemporaryDirectory()
        let prepared = temporary + "/doc.txt"
        try Data("prepared".utf8).write(to: URL(fileURLWithPath: prepared))
        let version = try store.add(item: item, contentsOf: prepared, byMoving: true)
        #expect(!FileManager.default.fileExists(atPath: prepared))
        #expect(try box.text(version.contentsPath) == "prepared")
        #expect(throws: VersionStoreError.self) { try store.add(item: item, contentsOf: box.root + "/nothing") }
        #expect(try store.versions(of: item).count == 1)
    }

    @Test func conflictVersionsAreResolvedOnce() throws {
        let box = try Sandbox()
        let store = try VersionStore(directory: box.storePath)
        let item = try box.file("doc.txt", "mine")
        let theirs = try box.file("theirs", "theirs")
        let conflict = try store.add(
            item: item,
            contentsOf: theirs,
            conflict: ConflictOrigin(computer: "laptop", originator: "Ada")
        )
        #expect(conflict.isConflict && !conflict.isResolved)
        #expect(conflict.savingComputer == "laptop" && conflict.originator == "Ada")
        #expect(try store.markResolved(id: conflict.id)?.isResolved == true)
        #expect(try store.markResolved(id: conflict.id) == nil, "resolving twice changes nothing")
        #expect(try store.markDiscardable(id: conflict.id))
        #expect(try store.version(id: conflict.id)?.isDiscardable == true)
    }

    @Test func replaceCopiesOrMovesTheContentsOverTheItem() throws {
        let box = try Sandbox()
        let store = try VersionStore(directory: box.storePath)
        let item = try box.file("doc.txt", "old")
        let version = try store.add(item: item, contentsOf: item)
        try Data("new".utf8).write(to: URL(fileURLWithPath: item))
        #expect(try store.replaceItem(at: item, with: version.id, byMoving: false) == item)
        #expect(try box.text(item) == "old")
        #expect(try store.version(id: version.id) != nil)
        try Data("newer".utf8).write(to: URL(fileURLWithPath: item))
        #expect(try store.replaceItem(at: item, with: version.id, byMoving: true) == item)
        #expect(try box.text(item) == "old")
        #expect(try store.version(id: version.id) == nil, "replacing by moving removes the version")
        #expect(throws: VersionStoreError.self) { try store.replaceItem(at: item, with: version.id, byMoving: false) }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: box.root + "/files")
        #expect(leftovers == ["doc.txt"])
    }

    @Test func replaceAPackageDirectory() throws {
        let box = try Sandbox()
        let store = try VersionStore(directory: box.storePath)
        let package = box.root + "/files/Doc.pkg"
        try FileManager.default.createDirectory(atPath: package, withIntermediateDirectories: false)
        _ = try box.file("Doc.pkg/a", "A1")
        let version = try store.add(item: package, contentsOf: package)
        try FileManager.default.removeItem(atPath: package + "/a")
        _ = try box.file("Doc.pkg/b", "B2")
        _ = try store.replaceItem(at: package, with: version.id, byMoving: false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: package) == ["a"])
        #expect(try box.text(package + "/a") == "A1")
    }

    @Test func versionsFollowTheirItemThroughMoves() throws {
        let box = try Sandbox()
        let store = try VersionStore(directory: box.storePath)
        let folder = box.root + "/files/folder"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let inside = try box.file("folder/doc.txt", "x")
        let sibling = try box.file("folder0", "not inside")
        let single = try box.file("single.txt", "s")
        let a = try store.add(item: inside, contentsOf: inside)
        let b = try store.add(item: sibling, contentsOf: sibling)
        let c = try store.add(item: single, contentsOf: single)
        #expect(try store.itemMoved(from: single, to: box.root + "/files/renamed.txt") == 1)
        #expect(try store.version(id: c.id)?.itemPath == box.root + "/files/renamed.txt")
        #expect(try store.itemMoved(from: folder, to: box.root + "/files/moved") == 1)
        #expect(try store.version(id: a.id)?.itemPath == box.root + "/files/moved/doc.txt")
        #expect(try store.version(id: b.id)?.itemPath == sibling, "a sibling whose name starts alike stays")
        #expect(try store.versions(of: box.root + "/files/moved/doc.txt").map(\.id) == [a.id])
    }

    @Test func versionsOfDeletedItemsArePurgedAfterTheRetention() throws {
        let box = try Sandbox()
        let clock = Clock()
        let store = try VersionStore(directory: box.storePath, retention: .seconds(100), now: { clock.now })
        let kept = try box.file("kept.txt", "k")
        let deleted = try box.file("deleted.txt", "d")
        let back = try box.file("back.txt", "b")
        _ = try store.add(item: kept, contentsOf: kept)
        let gone = try store.add(item: deleted, contentsOf: deleted)
        _ = try store.add(item: back, contentsOf: back)
        try FileManager.default.removeItem(atPath: deleted)
        try FileManager.default.removeItem(atPath: back)
        #expect(try store.purgeDeletedItems().isEmpty, "deleted items are only marked at first")
        #expect(try store.version(id: gone.id)?.itemGoneSince != nil)
        _ = try box.file("back.txt", "again")
        clock.now += 50
        #expect(try store.purgeDeletedItems().isEmpty)
        #expect(try store.versions(of: back).first?.itemGoneSince == nil, "an item that is back is no longer gone")
        clock.now += 60
        #expect(try store.purgeDeletedItems().map(\.id) == [gone.id])
        #expect(!FileManager.default.fileExists(atPath: gone.contentsPath))
        #expect(try store.allVersions().count == 2)
    }

    /// Stop 68 (a read-only review): GRDB turns the writer's `synchronous` to NORMAL when it opens a pool in WAL mode,
    /// after the store's own setting: a power loss could take rows whose contents stayed, and the next repair deleted
    /// those.
    @Test func theIndexCommitsWithSynchronousFull() throws {
        let box = try Sandbox()
        #expect(try VersionStore(directory: box.storePath).writerSynchronous() == 2)
    }

    /// Stop 68 (the same review): the purge judged an item by its oldest mark, and purged every version of it, one
    /// added minutes before (the item made again and deleted again between two passes) included.
    @Test func aVersionAddedAfterItsItemWasMarkedGoneIsKeptForItsOwnRetention() throws {
        let box = try Sandbox()
        let clock = Clock()
        let store = try VersionStore(directory: box.storePath, retention: .seconds(100), now: { clock.now })
        let path = try box.file("doc.txt", "one")
        let old = try store.add(item: path, contentsOf: path)
        try FileManager.default.removeItem(atPath: path)
        #expect(try store.purgeDeletedItems().isEmpty)  // Marked gone now.
        clock.now += 90
        _ = try box.file("doc.txt", "two")
        let recent = try store.add(item: path, contentsOf: path)
        try FileManager.default.removeItem(atPath: path)
        clock.now += 20
        #expect(try store.purgeDeletedItems().map(\.id) == [old.id], "only the version gone for the retention goes")
        #expect(try store.version(id: recent.id)?.itemGoneSince != nil, "the recent version is marked now")
        clock.now += 90
        #expect(try store.purgeDeletedItems().isEmpty)
        clock.now += 20
        #expect(try store.purgeDeletedItems().map(\.id) == [recent.id])
    }

    /// Stop 68 (the same review): the repair took any failure to look at a version's contents for their absence, and
    /// deleted the row and the contents.
    @Test func repairKeepsARowWhoseContentsCannotBeLookedAt() throws {
        let box = try Sandbox()
        let item = try box.file("doc.txt", "x")
        let added = try VersionStore(directory: box.storePath).add(item: item, contentsOf: item)
        let folder = box.storePath + "/contents/" + added.id
        let aside = box.root + "/aside"
        try FileManager.default.moveItem(atPath: folder, toPath: aside)
        // A link to itself: looking through it fails with ELOOP, not ENOENT.
        try FileManager.default.createSymbolicLink(atPath: folder, withDestinationPath: folder)
        #expect(try VersionStore(directory: box.storePath).version(id: added.id) != nil)
        try FileManager.default.removeItem(atPath: folder)
        try FileManager.default.moveItem(atPath: aside, toPath: folder)
        #expect(try VersionStore(directory: box.storePath).repair().isClean)
    }

    /// Stop 68 (the same review): a replace by moving took the contents out of the store first; when the rename into
    /// place failed (here a package version over what is a file now), the version was gone.
    @Test func aReplaceByMovingThatFailsKeepsTheVersion() throws {
        let box = try Sandbox()
        let store = try VersionStore(directory: box.storePath)
        let package = box.root + "/files/doc.pkg"
        try FileManager.default.createDirectory(atPath: package, withIntermediateDirectories: true)
        _ = try box.file("doc.pkg/part.txt", "part")
        let version = try store.add(item: package, contentsOf: package)
        try FileManager.default.removeItem(atPath: package)
        _ = try box.file("doc.pkg", "a file now")
        #expect(throws: VersionStoreError.self) { try store.replaceItem(at: package, with: version.id, byMoving: true) }
        #expect(try store.version(id: version.id) != nil)
        #expect(FileManager.default.fileExists(atPath: version.contentsPath + "/part.txt"))
        #expect((try? String(contentsOfFile: package, encoding: .utf8)) == "a file now")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: box.root + "/files").filter {
            $0.hasPrefix(".")
        }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// A version of a symbolic link whose target is gone (a link kept as a version, or a dangling one) is whole: the
    /// repair at the next open keeps it (it looked through the link with `stat` and removed the row, issue 36).
    @Test func aVersionOfADanglingSymbolicLinkSurvivesRepair() throws {
        let box = try Sandbox()
        let link = box.root + "/files/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: box.root + "/files/nowhere")
        let added = try VersionStore(directory: box.storePath).add(item: link, contentsOf: link)
        let reopened = try VersionStore(directory: box.storePath)
        #expect(try reopened.versions(of: link).map(\.id) == [added.id])
        #expect(try reopened.repair().isClean)
    }

    @Test func repairRemovesOrphanContentsRowsWithoutContentsAndLeftovers() throws {
        let box = try Sandbox()
        let item = try box.file("doc.txt", "x")
        var lost = ""
        do {
            let store = try VersionStore(directory: box.storePath)
            let kept = try store.add(item: item, contentsOf: item)
            lost = try store.add(item: item, contentsOf: item).id
            // A removal cut short after the row went: contents without a row. And contents gone under a row.
            try FileManager.default.createDirectory(
                atPath: box.storePath + "/contents/orphan",
                withIntermediateDirectories: false
            )
            try FileManager.default.removeItem(atPath: box.storePath + "/contents/" + lost)
            // Staging of a process that ended (pid 2^22+1 is above any pid_max default... or free), and of a live one.
            try FileManager.default.createDirectory(
                atPath: box.storePath + "/staging/999999999-x",
                withIntermediateDirectories: false
            )
            try FileManager.default.createDirectory(
                atPath: box.storePath + "/staging/1-live",
                withIntermediateDirectories: false
            )
            _ = kept
        }
        let reopened = try VersionStore(directory: box.storePath)
        #expect(try reopened.versions(of: item).count == 1)
        #expect(try reopened.version(id: lost) == nil)
        let again = try reopened.repair()
        #expect(again.isClean, "a repaired store is clean")
        let staging = try FileManager.default.contentsOfDirectory(atPath: box.storePath + "/staging")
        #expect(staging == ["1-live"], "pid 1 lives: its staging stays")
        #expect(!FileManager.default.fileExists(atPath: box.storePath + "/contents/orphan"))
    }
}

/// A settable clock for the purge.
final class Clock: @unchecked Sendable {
    private let lock = NSLock()
    private var value = Date(timeIntervalSince1970: 1_000_000)
    var now: Date {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
