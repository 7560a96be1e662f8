import FileCoordination
import Foundation
import Testing

/// `NSMetadataItem(url:)` (issue 44): the attributes a local file has, and format predicates evaluated against them.
@Suite struct MetadataItemTests {
    private static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fc-metadata-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test func aFileHasItsNamePathSizeDatesAndType() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("Notes.MD")
        try Data("twelve bytes".utf8).writeClosingOnExec(to: file)
        let item = try #require(NSMetadataItem(url: file))
        #expect(item.value(forAttribute: NSMetadataItemFSNameKey) as? String == "Notes.MD")
        #expect(item.value(forAttribute: NSMetadataItemPathKey) as? String == file.path)
        #expect((item.value(forAttribute: NSMetadataItemURLKey) as? URL)?.path == file.path)
        #expect((item.value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber)?.intValue == 12)
        let changed = try #require(item.value(forAttribute: NSMetadataItemFSContentChangeDateKey) as? Date)
        #expect(abs(changed.timeIntervalSinceNow) < 60)
        #expect(item.value(forAttribute: NSMetadataItemContentTypeKey) as? String == "net.daringfireball.markdown")
        #expect(
            item.value(forAttribute: NSMetadataItemContentTypeTreeKey) as? [String] == [
                "net.daringfireball.markdown", "public.plain-text", "public.text", "public.data", "public.item",
                "public.content",
            ]
        )
        #expect(item.attributes.contains(NSMetadataItemFSSizeKey))
        #expect(item.values(forAttributes: [NSMetadataItemFSNameKey, "kMDItemAuthors"])?.count == 1)
        #expect(item.value(forAttribute: "kMDItemAuthors") == nil)
    }

    @Test func aFolderIsAFolderWithoutASizeAndNothingIsNil() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let item = try #require(NSMetadataItem(url: folder))
        #expect(item.value(forAttribute: NSMetadataItemContentTypeKey) as? String == "public.folder")
        #expect(item.value(forAttribute: NSMetadataItemFSSizeKey) == nil)
        #expect(NSMetadataItem(url: folder.appendingPathComponent("missing")) == nil)
        #expect(NSMetadataItem(url: URL(string: "https://example.com/a.txt")!) == nil)
    }

    @Test func formatPredicatesEvaluateAgainstItems() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let text = folder.appendingPathComponent("a.txt")
        let image = folder.appendingPathComponent("b.JPG")
        try Data("hello".utf8).writeClosingOnExec(to: text)
        try Data(repeating: 1, count: 2_000).writeClosingOnExec(to: image)
        let items = [text, image].compactMap { NSMetadataItem(url: $0) }
        func matching(_ predicate: NSPredicate) -> [String] {
            items.filter { predicate.evaluate(with: $0) }.compactMap {
                $0.value(forAttribute: NSMetadataItemFSNameKey) as? String
            }
        }
        #expect(matching(NSPredicate(format: "%K LIKE[c] %@", NSMetadataItemFSNameKey, "*.jpg")) == ["b.JPG"])
        #expect(matching(NSPredicate(format: "%K > 1000", NSMetadataItemFSSizeKey)) == ["b.JPG"])
        #expect(matching(NSPredicate(format: "%K == 'public.text'", NSMetadataItemContentTypeTreeKey)) == ["a.txt"])
        #expect(
            matching(
                NSPredicate(
                    format: "%K > %@ AND NOT %K BEGINSWITH 'b'",
                    argumentArray: [
                        NSMetadataItemFSContentChangeDateKey, Date(timeIntervalSinceNow: -3600),
                        NSMetadataItemFSNameKey,
                    ]
                )
            ) == ["a.txt"]
        )
    }
}
