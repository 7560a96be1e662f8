// The metadata predicates of Shared/MetadataPredicates.swift, evaluated against attribute dictionaries as a macOS
// app evaluates them against an item's attributes, in this target's language mode.

import Foundation
import Testing

#if canImport(FileCoordination)
import FileCoordination
#endif

@Suite
struct MetadataPredicatesTests {
    private let now = Date()

    private func attributes(name: String, size: Int, changed: Date, types: [String]) -> [String: Any] {
        [
            NSMetadataItemFSNameKey: name,
            NSMetadataItemDisplayNameKey: (name as NSString).deletingPathExtension,
            NSMetadataItemFSSizeKey: size,
            NSMetadataItemFSContentChangeDateKey: changed,
            NSMetadataItemContentTypeTreeKey: types,
        ]
    }

    @Test func textFilesMatchByNameWhateverTheCase() {
        let predicate = MetadataPredicates.textFiles()
        #expect(predicate.evaluate(with: [NSMetadataItemFSNameKey: "notes.txt"]))
        #expect(predicate.evaluate(with: [NSMetadataItemFSNameKey: "README.TXT"]))
        #expect(!predicate.evaluate(with: [NSMetadataItemFSNameKey: "photo.jpg"]))
        #expect(!predicate.evaluate(with: [NSMetadataItemFSSizeKey: 3]))
    }

    @Test func theContentTypeTreeMatchesAnyOfItsTypes() {
        let predicate = MetadataPredicates.textOrImages()
        #expect(predicate.evaluate(with: [NSMetadataItemContentTypeTreeKey: ["public.plain-text", "public.text"]]))
        #expect(predicate.evaluate(with: [NSMetadataItemContentTypeTreeKey: ["public.jpeg", "public.image"]]))
        #expect(!predicate.evaluate(with: [NSMetadataItemContentTypeTreeKey: ["public.movie"]]))
    }

    @Test func aCompoundPredicateCombinesThem() {
        let predicate = MetadataPredicates.recentLargeTextFiles(since: now.addingTimeInterval(-3600))
        let text = ["public.plain-text", "public.text"]
        #expect(predicate.evaluate(with: attributes(name: "report.txt", size: 5_000, changed: now, types: text)))
        #expect(!predicate.evaluate(with: attributes(name: "report.txt", size: 500, changed: now, types: text)))
        #expect(!predicate.evaluate(with: attributes(name: "report.md", size: 5_000, changed: now, types: text)))
        #expect(!predicate.evaluate(with: attributes(name: "Draft 2.txt", size: 5_000, changed: now, types: text)))
        let old = now.addingTimeInterval(-86_400)
        #expect(!predicate.evaluate(with: attributes(name: "report.txt", size: 5_000, changed: old, types: text)))
        let filtered = [
            attributes(name: "a.txt", size: 2_000, changed: now, types: text),
            attributes(name: "b.txt", size: 20, changed: now, types: text),
        ].filter { predicate.evaluate(with: $0) }
        #expect(filtered.count == 1)
    }

    @Test func scopesAreApplesStrings() {
        let scopes = [NSMetadataQueryUserHomeScope, NSMetadataQueryLocalComputerScope]
        #expect(scopes == ["kMDQueryScopeHome", "kMDQueryScopeComputer"])
    }
}
