import FileCoordination
import Foundation
import Testing

/// `NSFileVersion` (issue 15, docs/SEMANTICS.md §8): Apple's API rules on real files and the real store, the
/// notifications of version changes made inside coordinated writes, and versions following their item through a
/// coordinated move.
@Suite struct VersionTests {
    private func write(_ url: URL, with presenter: (any NSFilePresenter)? = nil, _ body: (URL) throws -> Void) throws {
        var error: NSError?
        var thrown: (any Error)?
        NSFileCoordinator(filePresenter: presenter).coordinate(writingItemAt: url, options: [], error: &error) { url in
            do { try body(url) } catch { thrown = error }
        }
        if let error { throw error }
        if let thrown { throw thrown }
    }

    @Test func apiRules() throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let missing = directory.url.appendingPathComponent("missing.txt")
        #expect(NSFileVersion.currentVersionOfItem(at: missing) == nil)
        #expect(NSFileVersion.otherVersionsOfItem(at: missing) == nil)
        #expect(NSFileVersion.unresolvedConflictVersionsOfItem(at: missing) == nil)
        #expect(throws: CocoaError.self) { try NSFileVersion.addOfItem(at: missing, withContentsOf: missing) }

        let url = try directory.file("doc.txt", "first")
        #expect(NSFileVersion.otherVersionsOfItem(at: url)?.isEmpty == true)
        let current = try #require(NSFileVersion.currentVersionOfItem(at: url))
        #expect(current == NSFileVersion.currentVersionOfItem(at: url), "the same version of the same file is equal")
        #expect(current.url == url && current.isResolved && !current.isConflict && current.hasLocalContents)
        let added = try NSFileVersion.addOfItem(at: url, withContentsOf: url)
        #expect(added != current)
        #expect(try String(contentsOf: added.url, encoding: .utf8) == "first")
        #expect(added.localizedName == "doc.txt" && added.modificationDate != nil && !added.hasThumbnail)
        #expect(NSFileVersion.otherVersionsOfItem(at: url) == [added])
        #expect(NSFileVersion.version(itemAt: url, forPersistentIdentifier: added.persistentIdentifier) == added)
        #expect(NSFileVersion.version(itemAt: url, forPersistentIdentifier: current.persistentIdentifier) == current)

        // What Apple refuses with an exception: a thrown error or a documented no-op here.
        #expect(throws: CocoaError.self) { try current.remove() }
        current.isDiscardable = true
        #expect(!current.isDiscardable)
        added.isResolved = false
        #expect(added.isResolved)
        added.isDiscardable = true
        #expect(added.isDiscardable)
        added.isDiscardable = false
        #expect(added.isDiscardable)

        // Preparing contents in the store's temporary directory and adding them by moving.
        let temporary = NSFileVersion.temporaryDirectoryURLForNewVersionOfItem(at: url)
        defer { try? FileManager.default.removeItem(at: temporary) }
        let prepared = temporary.appendingPathComponent("doc.txt")
        try Data("prepared".utf8).writeClosingOnExec(to: prepared)
        let moved = try NSFileVersion.addOfItem(at: url, withContentsOf: prepared, options: .byMoving)
        #expect(!FileManager.default.fileExists(atPath: prepared.path))
        #expect(NSFileVersion.otherVersionsOfItem(at: url) == [added, moved])

        // Replacing keeps the version; replacing by moving removes it.
        #expect(try added.replaceItem(at: url) == url)
        #expect(try String(contentsOf: url, encoding: .utf8) == "first")
        try moved.replaceItem(at: url, options: .byMoving)
        #expect(try String(contentsOf: url, encoding: .utf8) == "prepared")
        #expect(NSFileVersion.otherVersionsOfItem(at: url) == [added])

        try added.remove()
        #expect(throws: CocoaError.self) { try added.remove() }
        #expect(NSFileVersion.version(itemAt: url, forPersistentIdentifier: added.persistentIdentifier) == nil)

        let nonlocal = Locked<[NSFileVersion]?>(nil)
        let done = DispatchSemaphore(value: 0)
        NSFileVersion.getNonlocalVersionsOfItem(at: url) { versions, _ in
            nonlocal.set(versions)
            done.signal()
        }
        #expect(done.wait(seconds: patience))
        #expect(nonlocal.current?.isEmpty == true)
    }

    @Test func aSyncToolAddsAConflictAndAnEditorResolvesIt() throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let url = try directory.file("notes.txt", "mine")
        let theirs = try directory.file("incoming", "theirs")
        let editor = RecordingPresenter(url: url)
        let folder = RecordingPresenter(url: directory.url)
        try withPresenters([editor, folder]) {
            // The sync tool.
            try write(url) { url in
                _ = try NSFileVersion.addConflictVersionOfItem(
                    at: url,
                    withContentsOf: theirs,
                    savingComputer: "Ada's laptop",
                    originator: "Ada"
                )
            }
            #expect(editor.wait(for: "didGainVersion"))
            #expect(folder.wait(for: "subitemDidGainVersion(\(url.path))"))
            let conflicts = try #require(NSFileVersion.unresolvedConflictVersionsOfItem(at: url))
            #expect(conflicts.count == 1)
            let conflict = conflicts[0]
            #expect(conflict.isConflict && !conflict.isResolved)
            #expect(conflict.localizedNameOfSavingComputer == "Ada's laptop")
            #expect(conflict.originatorNameComponents?.nickname == "Ada")

            // The editor, with a coordinator made with its own presenter: it hears its own version changes too.
            try write(url, with: editor) { url in
                try conflict.replaceItem(at: url)
                conflict.isResolved = true
                try NSFileVersion.removeOtherVersionsOfItem(at: url)
            }
            #expect(try String(contentsOf: url, encoding: .utf8) == "theirs")
            #expect(NSFileVersion.unresolvedConflictVersionsOfItem(at: url)?.isEmpty == true)
            #expect(NSFileVersion.otherVersionsOfItem(at: url)?.isEmpty == true)
            #expect(editor.wait(for: "didResolveConflictVersion"))
            #expect(editor.wait(for: "didLoseVersion"))
            #expect(folder.wait(for: "subitemDidResolveConflictVersion(\(url.path))"))
            #expect(folder.wait(for: "subitemDidLoseVersion(\(url.path))"))
        }
    }

    @Test func aVersionFollowsItsItemThroughACoordinatedMove() throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let old = try directory.file("draft.txt", "v1")
        let new = directory.url.appendingPathComponent("final.txt")
        var version: NSFileVersion?
        try write(old) { url in version = try NSFileVersion.addOfItem(at: url, withContentsOf: url) }
        let added = try #require(version)
        var error: NSError?
        let mover = NSFileCoordinator()
        mover.coordinate(
            writingItemAt: old,
            options: .forMoving,
            writingItemAt: new,
            options: .forReplacing,
            error: &error
        ) { from, to in
            do {
                try FileManager.default.moveItem(at: from, to: to)
                mover.item(at: from, didMoveTo: to)
            } catch {
                Issue.record(error)
            }
        }
        #expect(error == nil)
        #expect(NSFileVersion.otherVersionsOfItem(at: new) == [added])
        let found = try #require(
            NSFileVersion.version(itemAt: new, forPersistentIdentifier: added.persistentIdentifier)
        )
        #expect(try String(contentsOf: found.url, encoding: .utf8) == "v1")
    }
}
