import Foundation
import Testing

@testable import FileCoordination

/// Value lists and groups of a query's results (issue 44): values counted and grouped in the order they first appear,
/// groups inside groups for each further attribute, a missing value a value of its own.
@Suite struct MetadataQueryGroupsTests {
    static func item(_ path: String, size: Int64, isDirectory: Bool = false) -> NSMetadataItem {
        NSMetadataItem(path: path, size: size, isDirectory: isDirectory, modified: Date(), created: Date())
    }

    static let items = [
        item("/t/a.txt", size: 1), item("/t/b.png", size: 2), item("/t/c.txt", size: 2),
        item("/t/d", size: 0, isDirectory: true),
    ]

    static func value(_ item: NSMetadataItem, _ attribute: String) -> Any? { item.value(forAttribute: attribute) }

    static func names(_ results: [Any]) -> [String] {
        results.compactMap { ($0 as? NSMetadataItem)?.value(forAttribute: NSMetadataItemFSNameKey) as? String }
    }

    @Test func valueListsCountEachValueInOrderAndAMissingOne() {
        let lists = MetadataQueryGroups.valueLists(
            of: Self.items,
            attributes: [NSMetadataItemContentTypeKey, NSMetadataItemFSSizeKey],
            value: Self.value
        )
        let types = lists[NSMetadataItemContentTypeKey] ?? []
        #expect(types.map { $0.value as? String } == ["public.plain-text", "public.png", "public.folder"])
        #expect(types.map(\.count) == [2, 1, 1])
        let sizes = lists[NSMetadataItemFSSizeKey] ?? []
        #expect(sizes.map { ($0.value as? NSNumber)?.intValue } == [1, 2, nil], "the folder has no size")
        #expect(sizes.map(\.count) == [1, 2, 1])
        #expect(sizes.allSatisfy { $0.attribute == NSMetadataItemFSSizeKey })
    }

    @Test func groupsNestForEachFurtherAttribute() {
        let groups = MetadataQueryGroups.groups(
            of: Self.items,
            by: [NSMetadataItemContentTypeKey, NSMetadataItemFSSizeKey][...],
            value: Self.value,
            results: { $0 }
        )
        #expect(groups.map { $0.value as? String } == ["public.plain-text", "public.png", "public.folder"])
        #expect(Self.names(groups[0].results) == ["a.txt", "c.txt"] && groups[0].resultCount == 2)
        let bySize = groups[0].subgroups ?? []
        #expect(bySize.map { ($0.value as? NSNumber)?.intValue } == [1, 2])
        #expect(bySize.map { Self.names($0.results) } == [["a.txt"], ["c.txt"]])
        #expect(bySize.allSatisfy { $0.subgroups == nil }, "the last attribute's groups have none")
        #expect(groups[2].subgroups?.first?.value is NSNull, "the folder's missing size groups under NSNull")
    }
}
