// The ported conflict handling in Shared/ConflictResolution.swift, run against versions a sync tool added with the
// library's extension (addConflictVersionOfItem), in this target's language mode.

import Foundation
import Testing

#if canImport(FileCoordination)
import FileCoordination
#endif

@Suite(.serialized)
struct ConflictResolutionTests {
    private func makeFile(_ contents: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ported-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("notes.txt")
        try contents.write(to: url, atomically: false, encoding: .utf8)
        return url
    }

    /// A sync tool's side: a newer copy from another device, added as a conflict version inside a coordinated write.
    private func addConflict(to url: URL, text: String, device: String) throws {
        let incoming = url.deletingLastPathComponent().appendingPathComponent("incoming-\(UUID().uuidString)")
        try text.write(to: incoming, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(60)],
            ofItemAtPath: incoming.path
        )
        var error: NSError?
        var added: Error?
        NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: url, options: [], error: &error) { writingURL in
            do {
                _ = try NSFileVersion.addConflictVersionOfItem(
                    at: writingURL,
                    withContentsOf: incoming,
                    savingComputer: device,
                    options: .byMoving
                )
            } catch {
                added = error
            }
        }
        #expect(error == nil && added == nil)
    }

    @Test func aNewerConflictVersionReplacesTheFileAndEverythingIsCleanedUp() throws {
        let url = try makeFile("mine")
        let presenter = ConflictBadgePresenter(url: url)
        NSFileCoordinator.addFilePresenter(presenter)
        defer { NSFileCoordinator.removeFilePresenter(presenter) }
        _ = try ConflictResolver.saveSnapshot(of: url)
        try addConflict(to: url, text: "theirs", device: "Ada's laptop")
        #expect(ConflictResolver.conflictDescriptions(at: url) == ["notes.txt — Ada's laptop"])
        #expect(try ConflictResolver.resolveKeepingNewest(at: url))
        #expect(try String(contentsOf: url, encoding: .utf8) == "theirs")
        #expect(NSFileVersion.unresolvedConflictVersionsOfItem(at: url)?.isEmpty == true)
        #expect(NSFileVersion.otherVersionsOfItem(at: url)?.isEmpty == true)
        let deadline = Date().addingTimeInterval(10)
        while (presenter.conflictsGained.isEmpty || presenter.conflictsResolved == 0) && Date() < deadline {
            presenter.presentedItemOperationQueue.waitUntilAllOperationsAreFinished()
            if presenter.conflictsGained.isEmpty || presenter.conflictsResolved == 0 {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        #expect(presenter.conflictsGained.map(\.localizedNameOfSavingComputer) == ["Ada's laptop"])
        #expect(presenter.conflictsResolved == 1)
    }
}
