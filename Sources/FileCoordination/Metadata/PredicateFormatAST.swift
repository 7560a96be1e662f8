import Foundation

// The tree a predicate format parses into (PredicateFormatParser.swift), which PredicateFormatEvaluator.swift
// evaluates against an object and the metadata query (a later part of issue 44) can read to plan its search.
//
// Every type here is a Sendable value: a predicate's closure (NSPredicate+Format.swift) captures its tree and is
// called on any thread, and a query may hand the tree to another one.

/// A format that parsed: the text it came from, its arguments already substituted, and its tree.
struct ParsedPredicate: Sendable, Equatable {
    /// The format as written, for messages.
    let format: String
    let root: PredicateFormatNode
}

/// A predicate: the logical structure above the comparisons.
indirect enum PredicateFormatNode: Sendable, Equatable {
    /// `TRUEPREDICATE` or `FALSEPREDICATE`.
    case constant(Bool)
    case not(PredicateFormatNode)
    /// Two or more predicates that must all hold; a chain `a AND b AND c` is one node, so that no chain, however
    /// long, nests deeper than its parentheses.
    case and([PredicateFormatNode])
    /// Two or more predicates of which one must hold.
    case or([PredicateFormatNode])
    case comparison(PredicateFormatComparison)
}

/// `left comparator[options] right`.
struct PredicateFormatComparison: Sendable, Equatable {
    let left: PredicateFormatExpression
    let comparator: PredicateFormatComparator
    let options: PredicateFormatOptions
    let right: PredicateFormatExpression
}

enum PredicateFormatComparator: String, Sendable, Equatable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case like = "LIKE"
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
    case matches = "MATCHES"
    case `in` = "IN"
    case between = "BETWEEN"
}

/// The `[c]`, `[d]` and `[cd]` modifiers of a comparison (`[n]` is accepted and means nothing more, as Apple's
/// "already normalised" hint).
struct PredicateFormatOptions: OptionSet, Sendable, Equatable {
    let rawValue: UInt8

    static let caseInsensitive = PredicateFormatOptions(rawValue: 1)
    static let diacriticInsensitive = PredicateFormatOptions(rawValue: 2)

    /// The options of `String.folding(options:locale:)` that make two strings equal under these modifiers.
    var foldingOptions: String.CompareOptions {
        var options: String.CompareOptions = []
        if contains(.caseInsensitive) { options.insert(.caseInsensitive) }
        if contains(.diacriticInsensitive) { options.insert(.diacriticInsensitive) }
        return options
    }
}

/// One side of a comparison.
indirect enum PredicateFormatExpression: Sendable, Equatable {
    /// A key or a dotted key path of the evaluated object (bare, `#`-escaped, or substituted by `%K`).
    case keyPath(String)
    /// A literal, or a value substituted by `%@`, `%d` or `%f`.
    case value(PredicateFormatValue)
    /// `{a, b, ...}`.
    case aggregate([PredicateFormatExpression])
}

/// A value as the evaluator compares it: what a literal, an argument or an attribute of the object becomes.
indirect enum PredicateFormatValue: Sendable, Equatable {
    /// `nil`, `NULL` or `NSNull`.
    case null
    /// Any number, Booleans included (`TRUE` is 1), as NSPredicate compares them: by value, whatever their type.
    case number(PredicateFormatNumber)
    case string(String)
    case date(Date)
    case url(URL)
    case array([PredicateFormatValue])
    /// An object of a type no comparison knows: equal to nothing, and not nil.
    case unsupported(typeName: String)
}

enum PredicateFormatNumber: Sendable, Equatable {
    case integer(Int64)
    case real(Double)

    var doubleValue: Double {
        switch self {
        case .integer(let value): Double(value)
        case .real(let value): value
        }
    }

    /// Numeric order, integers compared exactly, anything else as doubles; nil when one of them is NaN.
    func compare(to other: PredicateFormatNumber) -> ComparisonResult? {
        if case .integer(let left) = self, case .integer(let right) = other {
            return left < right ? .orderedAscending : left > right ? .orderedDescending : .orderedSame
        }
        let left = doubleValue
        let right = other.doubleValue
        if left.isNaN || right.isNaN { return nil }
        return left < right ? .orderedAscending : left > right ? .orderedDescending : .orderedSame
    }
}
