// A summary of some items of a folder as macOS code writes it (issue 44): an NSMetadataQuery narrowed by searchItems,
// with value lists and groups by content type, and a delegate that shows each result by its name and each content
// type in capitals.

import Foundation

#if canImport(FileCoordination)
import FileCoordination
#endif

// @unchecked: the query is thread-safe; nothing else is stored.
final class FolderSummary: NSObject, NSMetadataQueryDelegate, @unchecked Sendable {
    let query = NSMetadataQuery()

    init(folder: URL, items: [URL]) {
        query.searchScopes = [folder]
        query.searchItems = items
        query.valueListAttributes = [NSMetadataItemContentTypeKey]
        query.groupingAttributes = [NSMetadataItemContentTypeKey]
        query.notificationBatchingInterval = 0.1
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        query.operationQueue = queue
        super.init()
        query.delegate = self
    }

    func metadataQuery(_ query: NSMetadataQuery, replacementObjectForResultObject result: NSMetadataItem) -> Any {
        result.value(forAttribute: NSMetadataItemFSNameKey) as? String ?? ""
    }

    func metadataQuery(
        _ query: NSMetadataQuery,
        replacementValueForAttribute attrName: String,
        value attrValue: Any
    )
        -> Any
    {
        guard attrName == NSMetadataItemContentTypeKey, let type = attrValue as? String else { return attrValue }
        return type.uppercased()
    }

    /// The results, by the delegate's replacement: their names.
    var names: [String] {
        var names: [String] = []
        query.enumerateResults { result, _, _ in names.append(result as? String ?? "?") }
        return names
    }

    /// How many results have each content type.
    var countsByType: [String: Int] {
        var counts: [String: Int] = [:]
        for tuple in query.valueLists[NSMetadataItemContentTypeKey] ?? [] {
            counts[tuple.value as? String ?? "?"] = tuple.count
        }
        return counts
    }

    /// The names in each content type's group.
    var namesByType: [String: [String]] {
        var groups: [String: [String]] = [:]
        for group in query.groupedResults {
            groups[group.value as? String ?? "?"] = group.results.map { $0 as? String ?? "?" }
        }
        return groups
    }
}
