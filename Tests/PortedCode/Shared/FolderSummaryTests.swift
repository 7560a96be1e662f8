// The summary of Shared/FolderSummary.swift (issue 44): searchItems narrow the results to two items of the folder (a
// file, and a folder with what it holds); the delegate's replacements show in the results, the value lists and the
// groups. A live query needs filecoordd: in process, start() refuses.

import Foundation
import Testing

#if canImport(FileCoordination)
import FileCoordination
#endif

@Suite(.serialized)
struct FolderSummaryTests {
    @Test func searchItemsValueListsGroupsAndTheDelegate() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ported-summary-\(UUID())")
        let sub = folder.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in ["a.txt", "b.txt", "c.png", "sub/d.txt"] {
            try Data(name.utf8).write(to: folder.appendingPathComponent(name))
        }
        let summary = FolderSummary(folder: folder, items: [folder.appendingPathComponent("a.txt"), sub])
        let gathered = DispatchSemaphore(value: 0)
        let observer = NotificationCenter.default.addObserver(
            forName: .NSMetadataQueryDidFinishGathering,
            object: summary.query,
            queue: nil
        ) { _ in gathered.signal() }
        defer { NotificationCenter.default.removeObserver(observer) }
        let inProcess = ProcessInfo.processInfo.environment["FILECOORD_ARBITER"] == "in-process"
        #expect(summary.query.start() == !inProcess)
        guard !inProcess else { return }
        defer { summary.query.stop() }
        #expect(gathered.wait(timeout: .now() + 10) == .success, "no gathering")
        #expect(summary.names == ["a.txt", "sub", "d.txt"])
        #expect(summary.countsByType == ["PUBLIC.PLAIN-TEXT": 2, "PUBLIC.FOLDER": 1])
        #expect(summary.namesByType == ["PUBLIC.PLAIN-TEXT": ["a.txt", "d.txt"], "PUBLIC.FOLDER": ["sub"]])
    }
}
