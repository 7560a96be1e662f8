public import Foundation

/// What an ``NSMetadataQuery``'s delegate may change in its results, with Apple's Swift signatures (issue 44). Both
/// methods are optional in Apple's Objective-C protocol; here each has a default that changes nothing, so a macOS
/// delegate that implements one, both or neither compiles unchanged. Called on the query's own queue, as the results
/// are read.
public protocol NSMetadataQueryDelegate: NSObjectProtocol {
    /// The object ``NSMetadataQuery/results`` holds for `result` (by default `result` itself).
    func metadataQuery(_ query: NSMetadataQuery, replacementObjectForResultObject result: NSMetadataItem) -> Any
    /// The value that value lists, groups and ``NSMetadataQuery/value(ofAttribute:forResultAt:)`` show for an
    /// attribute (by default `attrValue` itself).
    func metadataQuery(
        _ query: NSMetadataQuery,
        replacementValueForAttribute attrName: String,
        value attrValue: Any
    )
        -> Any
}

extension NSMetadataQueryDelegate {
    /// `result` itself: no replacement.
    public func metadataQuery(_ query: NSMetadataQuery, replacementObjectForResultObject result: NSMetadataItem) -> Any
    {
        result
    }

    /// `attrValue` itself: no replacement.
    public func metadataQuery(
        _ query: NSMetadataQuery,
        replacementValueForAttribute attrName: String,
        value attrValue: Any
    ) -> Any {
        attrValue
    }
}

/// One value of a value-list attribute and how many results have it (``NSMetadataQuery/valueLists``).
///
/// - Important: Immutable: usable from any thread.
// @unchecked: its `let`s are set once; `value` is what the results' items held (values of Sendable kinds).
open class NSMetadataQueryAttributeValueTuple: NSObject, @unchecked Sendable {
    /// The value-list attribute.
    open var attribute: String { storedAttribute }
    /// One of its values among the results (`nil`: results without the attribute).
    open var value: Any? { storedValue }
    /// How many results have it.
    open var count: Int { storedCount }
    private let storedAttribute: String
    private let storedValue: Any?
    private let storedCount: Int

    init(attribute: String, value: Any?, count: Int) {
        storedAttribute = attribute
        storedValue = value
        storedCount = count
        super.init()
    }
}

/// The results that share a value of a grouping attribute (``NSMetadataQuery/groupedResults``), with the groups of the
/// next grouping attribute inside it.
///
/// - Important: Immutable: usable from any thread.
// @unchecked: its `let`s are set once.
open class NSMetadataQueryResultGroup: NSObject, @unchecked Sendable {
    /// The grouping attribute.
    open var attribute: String { storedAttribute }
    /// The value its results share (`NSNull` for results without the attribute).
    open var value: Any { storedValue }
    /// The groups of the next grouping attribute, or `nil` for the last one.
    open var subgroups: [NSMetadataQueryResultGroup]? { storedSubgroups }
    /// How many results the group holds.
    open var resultCount: Int { storedResults.count }
    /// The result at `idx` of ``results``.
    open func result(at idx: Int) -> Any { storedResults[idx] }
    /// The group's results, in the query's order (the delegate's replacements, as in the query's results).
    open var results: [Any] { storedResults }
    private let storedAttribute: String
    private let storedValue: Any
    private let storedSubgroups: [NSMetadataQueryResultGroup]?
    private let storedResults: [Any]

    init(attribute: String, value: Any, subgroups: [NSMetadataQueryResultGroup]?, results: [Any]) {
        storedAttribute = attribute
        storedValue = value
        storedSubgroups = subgroups
        storedResults = results
        super.init()
    }
}

/// Value lists and groups of a query's results (issue 44): pure, over the items in the results' order, with the
/// values the delegate shows. Values are told apart as `AnyHashable` when they are hashable (strings, numbers,
/// dates, URLs, arrays of strings), else by their description; a missing value is a value of its own (`NSNull` in a
/// group, `nil` in a tuple). Tuples and groups come in the order their value first appears in the results.
enum MetadataQueryGroups {
    /// One value's key for telling values apart.
    private static func key(_ value: Any?) -> AnyHashable {
        guard let value else { return AnyHashable(NSNull()) }
        if let hashable = value as? AnyHashable { return hashable }
        return AnyHashable(String(describing: value))
    }

    /// The distinct values of each attribute and their counts.
    static func valueLists(
        of items: [NSMetadataItem],
        attributes: [String],
        value: (NSMetadataItem, String) -> Any?
    ) -> [String: [NSMetadataQueryAttributeValueTuple]] {
        var lists: [String: [NSMetadataQueryAttributeValueTuple]] = [:]
        for attribute in Set(attributes) {
            var order: [AnyHashable] = []
            var counts: [AnyHashable: (value: Any?, count: Int)] = [:]
            for item in items {
                let found = value(item, attribute)
                let key = key(found)
                if counts[key] == nil { order.append(key) }
                counts[key, default: (found, 0)].count += 1
            }
            lists[attribute] = order.map { key in
                NSMetadataQueryAttributeValueTuple(
                    attribute: attribute,
                    value: counts[key]!.value,
                    count: counts[key]!.count
                )
            }
        }
        return lists
    }

    /// The items grouped by the first attribute, each group by the next, and so on; `results` maps a group's items
    /// to the objects the results hold (the delegate's replacements).
    static func groups(
        of items: [NSMetadataItem],
        by attributes: ArraySlice<String>,
        value: (NSMetadataItem, String) -> Any?,
        results: ([NSMetadataItem]) -> [Any]
    ) -> [NSMetadataQueryResultGroup] {
        guard let attribute = attributes.first else { return [] }
        var order: [AnyHashable] = []
        var members: [AnyHashable: (value: Any, items: [NSMetadataItem])] = [:]
        for item in items {
            let found = value(item, attribute)
            let key = key(found)
            if members[key] == nil { order.append(key) }
            members[key, default: (found ?? NSNull(), [])].items.append(item)
        }
        let rest = attributes.dropFirst()
        return order.map { key in
            let group = members[key]!
            return NSMetadataQueryResultGroup(
                attribute: attribute,
                value: group.value,
                subgroups: rest.isEmpty ? nil : groups(of: group.items, by: rest, value: value, results: results),
                results: results(group.items)
            )
        }
    }
}
