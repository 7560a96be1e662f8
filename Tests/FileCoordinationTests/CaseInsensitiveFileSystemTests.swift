import Dispatch
import FCCore
import FCFileSystemPolicy
import FCSystem
import FCTestSupport
import Foundation
import Testing

@testable import FileCoordination

#if canImport(Glibc)
import Glibc
#endif

// Canonical item identity on a real case-insensitive file system (issue 14, docs/SEMANTICS.md §4): an exFAT image made
// with `mkfs.exfat`, attached with `losetup` and mounted with `mount.exfat-fuse` (Debian exfatprogs and exfat-fuse,
// scripts/install-deps.sh). This needs root, /dev/fuse and a loop device: without them every test here is reported
// as skipped with the reason (and the reason is printed), never passed; in CI (`ExFATVolume.isRequired`) it fails
// instead. The helper is `ExFATVolume` (FCTestSupport).
//
// Serialized: one test turns the device rule off (`DeviceFileSystem.isEnabled`) for the whole process while it runs.

@Suite(
    .enabled(
        if: ExFATVolume.shouldRun,
        "DID NOT RUN: needs an exFAT image mounted through FUSE (root, /dev/fuse, a loop device, exfatprogs, exfat-fuse)"
    ),
    .serialized
)
struct CaseInsensitiveFileSystemTests {
    @Test func aPresenterAndAWriterSpellingTheFileInDifferentCasesMeet() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        let file = volume.root.appendingPathComponent("Note.txt")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let shouted = volume.root.appendingPathComponent("NOTE.TXT")
        let presenter = RecordingPresenter(url: file)
        var handed: URL?
        withPresenters([presenter]) {
            #expect(CanonicalizationTests.write(shouted) { handed = $0 } == nil)
            settle(presenter)
        }
        #expect(handed == shouted)  // the writer's own spelling
        #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
        #expect(presenter.presentedItemURL == file)
    }

    @Test func writersOfTheSameNewFileInDifferentCasesExcludeEachOther() throws {
        // The volume's root is empty: nothing to probe, so the device decides (exFAT on the loop device).
        let volume = try ExFATVolume()
        defer { volume.remove() }
        PathCanonicalizer.shared.removeAllCachedAndAnswers()
        let lower = volume.root.appendingPathComponent("new.txt")
        let upper = volume.root.appendingPathComponent("NEW.txt")
        let timeline = WaitingTests.checkWaits(
            first: { accessor in _ = CanonicalizationTests.write(lower) { _ in accessor() } },
            second: { accessor in _ = CanonicalizationTests.write(upper) { _ in accessor() } }
        )
        #expect(timeline == ["first in", "first out", "second"])
    }

    /// The defect of issue 14 that CI found: in an empty directory the first writer's key was taken before the folder
    /// was known to be case-insensitive, and a second writer, deciding once the first had created its file, got
    /// another key and was granted beside it.
    @Test func aWriterCreatingANewFileInAnEmptyRootExcludesAWriterOfAnotherCase() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        PathCanonicalizer.shared.removeAllCachedAndAnswers()
        let timeline = Self.createThenWrite(in: volume)
        #expect(timeline == ["first in", "first out", "second"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: volume.root.path) == ["New.txt"])
    }

    /// Where nothing tells (the device rule off, as for a FUSE file system that the device does not name), the empty
    /// root is undecided: the first writer's claim also takes the case-folded key, which the second writer, whose
    /// probe finds the new file and decides the folder case-insensitive, meets.
    @Test func anUndecidedEmptyRootGivesTheClaimAFoldedKeyThatAWriterDecidingLaterMeets() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        DeviceFileSystem.isEnabled = false
        defer { DeviceFileSystem.isEnabled = true }
        PathCanonicalizer.shared.removeAllCachedAndAnswers()
        let first = volume.root.appendingPathComponent("New.txt").path
        let undecided = try PathCanonicalizer.shared.canonicalize(first, followingFinalLink: true)
        #expect(undecided.key == (try ItemPath(absolute: first)))
        #expect(undecided.foldedKey == (try ItemPath(absolute: volume.root.path + "/new.txt")))
        let timeline = Self.createThenWrite(in: volume)
        #expect(timeline == ["first in", "first out", "second"])
        // Once an entry exists, the probe decides: one key, folded.
        let decided = try PathCanonicalizer.shared.canonicalize(first, followingFinalLink: true)
        #expect(decided.key == (try ItemPath(absolute: volume.root.path + "/new.txt")))
        #expect(decided.foldedKey == nil)
    }

    /// One call that reads `New.txt` and writes `NEW.txt` in an undecided root: both second keys are `new.txt`, and
    /// the write's must stay (a reader of `new.txt` that decided the folder case-insensitive must wait for it).
    @Test func anUndecidedClaimKeepsTheWritesFoldedKeyWhenARead() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        DeviceFileSystem.isEnabled = false
        defer { DeviceFileSystem.isEnabled = true }
        PathCanonicalizer.shared.removeAllCachedAndAnswers()
        let read = volume.root.appendingPathComponent("New.txt")
        let written = volume.root.appendingPathComponent("NEW.txt")
        let lower = volume.root.appendingPathComponent("new.txt")
        let timeline = WaitingTests.checkWaits(
            first: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(
                    readingItemAt: read,
                    options: [],
                    writingItemAt: written,
                    options: [],
                    error: &error
                ) { _, url in
                    try? Data("first".utf8).writeClosingOnExec(to: url)
                    accessor()
                }
            },
            second: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(readingItemAt: lower, options: [], error: &error) { _ in accessor() }
            }
        )
        #expect(timeline == ["first in", "first out", "second"])
    }

    /// A writer of `New.txt` creates it in its accessor and holds its claim while a writer of `NEW.txt` asks.
    static func createThenWrite(in volume: ExFATVolume) -> [String] {
        let created = volume.root.appendingPathComponent("New.txt")
        let shouted = volume.root.appendingPathComponent("NEW.txt")
        return WaitingTests.checkWaits(
            first: { accessor in
                _ = CanonicalizationTests.write(created) { url in
                    try? Data("first".utf8).writeClosingOnExec(to: url)
                    accessor()
                }
            },
            second: { accessor in _ = CanonicalizationTests.write(shouted) { _ in accessor() } }
        )
    }

    @Test func aFolderPresenterHearsOfASubitemSpelledWithItsOwnURL() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        let folder = volume.root.appendingPathComponent("Docs", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let presenter = RecordingPresenter(url: folder)
        let written = volume.root.appendingPathComponent("DOCS/New.TXT")
        withPresenters([presenter]) {
            #expect(CanonicalizationTests.write(written) { try? Data("n".utf8).writeClosingOnExec(to: $0) } == nil)
            settle(presenter)
        }
        // The folder as its presenter spells it, the new name as the directory lists it.
        let heard = volume.root.path + "/Docs/New.TXT"
        #expect(presenter.events == ["subitemDidChange(\(heard))", "subitemDidAppear(\(heard))"])
    }

    @Test func aCaseOnlyRenameHandsBothURLsSucceedsAndTellsTheFileAndFolderPresenters() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        let folder = volume.root.appendingPathComponent("Folder", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let old = folder.appendingPathComponent("my text")
        let new = folder.appendingPathComponent("My Text")
        try Data("t".utf8).writeClosingOnExec(to: old)
        let filePresenter = RecordingPresenter(url: old)
        let folderPresenter = RecordingPresenter(url: folder)
        var urls: [URL] = []
        var renameResult: Int32 = -1
        var error: NSError?
        withPresenters([filePresenter, folderPresenter]) {
            let coordinator = NSFileCoordinator()
            coordinator.coordinate(
                writingItemAt: old,
                options: .forMoving,
                writingItemAt: new,
                options: .forReplacing,
                error: &error
            ) { from, to in
                urls = [from, to]
                renameResult = rename(from.path, to.path)
                if renameResult == 0 { coordinator.item(at: from, didMoveTo: to) }
            }
            settle(filePresenter, folderPresenter)
        }
        #expect(error == nil)
        #expect(urls == [old, new])
        #expect(renameResult == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["My Text"])
        #expect(filePresenter.events.contains("didMove(\(new.path))"))
        #expect(filePresenter.presentedItemURL == new)
        #expect(folderPresenter.events.contains("subitemDidMove(\(old.path) -> \(new.path))"))
        // Every spelling a presenter heard is one this process used: the old name before the rename (the folder is
        // asked to accommodate the deletion of the destination, which is the file itself), the new one after; never
        // a folded one (`folder`).
        #expect(
            folderPresenter.events == [
                "accommodateSubitemDeletion(\(old.path))", "subitemDidMove(\(old.path) -> \(new.path))",
                "subitemDidChange(\(new.path))",
            ]
        )
        for event in filePresenter.events + folderPresenter.events {
            #expect(!event.contains("/folder/"), "\(event)")
        }
    }

    /// The probe compares names by their bytes, as the file system does: `É` (NFC) and `é` (NFD, `e` and U+0301) are
    /// two names on exFAT, and neither is the other's case. Compared as `String`s (canonical equivalence), the swapped
    /// spelling of either was taken for the other name, listed, and the folder decided case-sensitive.
    @Test func theProbeTellsNamesApartByTheirBytes() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        let composed = "\u{C9}"  // É
        let decomposed = "e\u{301}"  // é
        for name in [composed, decomposed] {
            try Data("x".utf8).writeClosingOnExec(to: volume.root.appendingPathComponent(name))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: volume.root.path)
        try #require(Set(names.map { Array($0.utf8) }) == [Array(composed.utf8), Array(decomposed.utf8)], "\(names)")
        #expect(FileSystemCaseRule.probe(volume.root.path) == true)
        #expect(FileSystemCaseRule.probe(pathBytes: Array(volume.root.path.utf8)) == true)
    }
}
