import FileCoordinationDocument
import Foundation
import Testing

/// `DocumentFolder` on real files, and a ``CoordinatedDocument`` stored as a folder opened, edited, saved and opened
/// again (issue 27: "subclasses override reading from and writing to `Data` or a file wrapper folder").
@Suite struct DocumentFolderTests {
    /// A fresh directory, removed at the end.
    final class Sandbox {
        let root: URL
        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("fcdocfolder-" + UUID().uuidString)
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(at: root) }
        func url(_ name: String) -> URL { root.appendingPathComponent(name) }
    }

    @Test func aFolderWrittenIsReadBackWithItsNestedFiles() throws {
        let box = try Sandbox()
        let folder = DocumentFolder(files: [
            "index.json": Data("{}".utf8),
            "Images/cover.png": Data([0x89, 0x50, 0x4E, 0x47]),
            "Images/Thumbs/small.png": Data([1, 2, 3]),
            "empty.txt": Data(),
        ])
        try folder.write(to: box.url("doc.pkg"))
        #expect(try DocumentFolder(contentsOf: box.url("doc.pkg")) == folder)
    }

    @Test(
        "A path that leaves the folder is refused, and nothing is written outside it",
        arguments: ["../outside.txt", "/etc/outside.txt", "a/../../outside.txt", "a//b", "./a", ""]
    )
    func pathsLeavingTheFolderAreRefused(path: String) throws {
        let box = try Sandbox()
        let folder = DocumentFolder(files: [path: Data("x".utf8)])
        #expect(throws: CocoaError.self) { try folder.write(to: box.url("doc.pkg")) }
        #expect(!FileManager.default.fileExists(atPath: box.url("outside.txt").path))
    }

    @Test func emptyFoldersAndSymbolicLinksAreNotKept() throws {
        let box = try Sandbox()
        let package = box.url("doc.pkg")
        try DocumentFolder(files: ["a.txt": Data("a".utf8)]).write(to: package)
        try FileManager.default.createDirectory(
            at: package.appendingPathComponent("Empty"),
            withIntermediateDirectories: false
        )
        try FileManager.default.createSymbolicLink(
            atPath: package.appendingPathComponent("link.txt").path,
            withDestinationPath: "a.txt"
        )
        #expect(try DocumentFolder(contentsOf: package).files == ["a.txt": Data("a".utf8)])
    }

    /// corelibs Foundation enumerates a missing path as an empty folder: read as such, a deleted document would open
    /// empty and its next save would write an empty package.
    @Test func aMissingFolderOrAFileCannotBeReadAsAFolder() throws {
        let box = try Sandbox()
        let missing = #expect(throws: CocoaError.self) { try DocumentFolder(contentsOf: box.url("missing.pkg")) }
        #expect(missing?.code == .fileReadNoSuchFile)
        try Data("plain".utf8).write(to: box.url("plain.txt"))
        #expect(throws: CocoaError.self) { try DocumentFolder(contentsOf: box.url("plain.txt")) }
    }

    /// A document stored as a folder: a title file and pages.
    final class PagesDocument: CoordinatedDocument, @unchecked Sendable {
        private var pages: [String: String] = [:]
        override var storage: Storage { .folder }

        var allPages: [String: String] { withContents { pages } }
        func setPage(_ name: String, _ text: String) { edit { pages[name] = text } }

        override func read(from folder: DocumentFolder) throws {
            pages = folder.files.mapValues { String(decoding: $0, as: UTF8.self) }
        }
        override func folderForSaving() throws -> DocumentFolder {
            DocumentFolder(files: pages.mapValues { Data($0.utf8) })
        }
    }

    @Test func aFolderDocumentOpensSavesAndOpensAgain() async throws {
        let box = try Sandbox()
        let package = box.url("book.pages")
        try DocumentFolder(files: ["title.txt": Data("A book".utf8)]).write(to: package)

        let document = PagesDocument(fileURL: package, autosaveDelay: nil)
        try await document.open()
        #expect(document.allPages == ["title.txt": "A book"])
        document.setPage("Chapters/one.txt", "It begins.")
        #expect(document.hasUnsavedChanges)
        try await document.save()
        #expect(!document.hasUnsavedChanges)
        try await document.close()
        #expect(
            try DocumentFolder(contentsOf: package).files
                == ["title.txt": Data("A book".utf8), "Chapters/one.txt": Data("It begins.".utf8)]
        )

        let again = PagesDocument(fileURL: package, autosaveDelay: nil)
        try await again.open()
        #expect(again.allPages == ["title.txt": "A book", "Chapters/one.txt": "It begins."])
        try await again.close()
    }

    @Test func aFileDocumentThatDoesNotOverrideFolderReadingFailsToOpenWithAClearError() async throws {
        final class Unfinished: CoordinatedDocument, @unchecked Sendable {
            override var storage: Storage { .folder }
        }
        let box = try Sandbox()
        let package = box.url("x.pkg")
        try DocumentFolder(files: ["a": Data()]).write(to: package)
        let document = Unfinished(fileURL: package, autosaveDelay: nil)
        await #expect(throws: CoordinatedDocument.DocumentError.self) { try await document.open() }
    }
}
