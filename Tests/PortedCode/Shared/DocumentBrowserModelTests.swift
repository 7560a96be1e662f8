// The browser model of Shared/DocumentBrowserModel.swift (issue 44): gathered, then kept current as files come and
// go. A live query needs filecoordd: in process, start() refuses, and says so.

import Foundation
import Testing

#if canImport(FileCoordination)
import FileCoordination
#endif

@Suite(.serialized)
struct DocumentBrowserModelTests {
    private static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        while !condition() {
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }

    @Test func theListFollowsTheFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ported-browser-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("a".utf8).write(to: folder.appendingPathComponent("a.txt"))
        try Data("png".utf8).write(to: folder.appendingPathComponent("picture.png"))
        let model = DocumentBrowserModel(folder: folder)
        let inProcess = ProcessInfo.processInfo.environment["FILECOORD_ARBITER"] == "in-process"
        #expect(model.start() == !inProcess)
        guard !inProcess else { return }
        defer { model.stop() }
        #expect(Self.eventually { model.names == ["a.txt"] })
        try Data("b".utf8).write(to: folder.appendingPathComponent("b.txt"))
        // Newest name first: the query's sort descriptor.
        #expect(Self.eventually { model.names == ["b.txt", "a.txt"] })
        try FileManager.default.removeItem(at: folder.appendingPathComponent("a.txt"))
        #expect(Self.eventually { model.names == ["b.txt"] })
    }
}
