import Foundation

// Evaluates a parsed format against an object, as NSPredicate does for the supported subset (the rules below), with
// one rule of metadata queries: an attribute with many values (an array, such as kMDItemContentTypeTree) satisfies a
// comparison with a single value when one of its values does (`kMDItemContentTypeTree == 'public.text'`).
//
// - A missing attribute makes every comparison false, but `== nil` (true) and `!= nil` (false).
// - Numbers compare by value whatever their types (Int64, Double, NSNumber, Bool); dates by time; strings
//   lexicographically, folded by `[c]`/`[d]`; values of different kinds are unequal and unordered (a string compared
//   with a number is false, and `!=` true).
// - Objects other than `[String: Any]` dictionaries and PredicateAttributeSource adopters (nil included) have no
//   attributes: TRUEPREDICATE holds for them, and `== nil`, as on macOS; every other comparison is false.
//
// Pure functions of the tree and the object; callable from any thread.

enum PredicateFormatEvaluator {
    static func evaluate(_ predicate: ParsedPredicate, with object: Any?) -> Bool {
        // Cast once: a dictionary of another value type (`[String: Int]`) would be converted at every key otherwise.
        if let source = object as? any PredicateAttributeSource { return evaluate(predicate.root, source) }
        if let dictionary = object as? [String: Any] { return evaluate(predicate.root, dictionary) }
        return evaluate(predicate.root, object ?? NSNull())
    }

    private static func evaluate(_ node: PredicateFormatNode, _ object: Any) -> Bool {
        switch node {
        case .constant(let value): value
        case .not(let inner): !evaluate(inner, object)
        case .and(let nodes): nodes.allSatisfy { evaluate($0, object) }
        case .or(let nodes): nodes.contains { evaluate($0, object) }
        case .comparison(let comparison): holds(comparison, object)
        }
    }

    // MARK: Operands

    /// The value of `expression` for `object`; nil when it names an attribute the object does not have.
    private static func resolve(_ expression: PredicateFormatExpression, _ object: Any) -> PredicateFormatValue? {
        switch expression {
        case .value(let value): value
        case .aggregate(let items): .array(items.map { resolve($0, object) ?? .null })
        case .keyPath(let path): value(atKeyPath: path, of: object).map { PredicateFormatValue($0) }
        }
    }

    /// The key path asked for whole first, then one key at a time.
    static func value(atKeyPath path: String, of object: Any) -> Any? {
        if let whole = value(forKey: path, of: object) { return whole }
        guard path.contains(".") else { return nil }
        var current: Any = object
        for key in path.split(separator: ".", omittingEmptySubsequences: false) {
            guard let next = value(forKey: String(key), of: current) else { return nil }
            current = next
        }
        return current
    }

    private static func value(forKey key: String, of object: Any) -> Any? {
        if let source = object as? any PredicateAttributeSource { return source.predicateValue(forKey: key) }
        if let dictionary = object as? [String: Any] { return dictionary[key] }
        return nil
    }

    // MARK: Comparisons

    private static func holds(_ comparison: PredicateFormatComparison, _ object: Any) -> Bool {
        let left = resolve(comparison.left, object)
        let right = resolve(comparison.right, object)
        let options = comparison.options
        switch comparison.comparator {
        case .equal:
            return isEqual(left ?? .null, right ?? .null, options)
        case .notEqual:
            // A missing attribute is unequal to nothing; an explicit nil is unequal to every value.
            guard let left, let right else { return false }
            return !isEqual(left, right, options)
        default:
            guard let left, let right, left != .null, right != .null else { return false }
            return holds(comparison.comparator, left, right, options)
        }
    }

    /// `==`: nil equals nil only; a many-valued side equals a single value when one of its values does.
    private static func isEqual(
        _ left: PredicateFormatValue,
        _ right: PredicateFormatValue,
        _ options: PredicateFormatOptions
    ) -> Bool {
        switch (left, right) {
        case (.array(let items), .array):
            return equal(.array(items), right, options)
        case (.array(let items), _):
            return items.contains { equal($0, right, options) }
        case (_, .array(let items)):
            return items.contains { equal(left, $0, options) }
        default:
            return equal(left, right, options)
        }
    }

    private static func holds(
        _ comparator: PredicateFormatComparator,
        _ left: PredicateFormatValue,
        _ right: PredicateFormatValue,
        _ options: PredicateFormatOptions
    ) -> Bool {
        switch comparator {
        case .contains:
            if case .array(let items) = left { return items.contains { equal($0, right, options) } }
            return strings(left, right, options) { $0.contains($1) }
        case .in:
            switch right {
            case .array(let items):
                return anyValue(of: left) { value in items.contains { equal(value, $0, options) } }
            case .string:
                return strings(right, left, options) { $0.contains($1) }
            default:
                return false
            }
        case .between:
            guard case .array(let bounds) = right, bounds.count == 2 else { return false }
            return anyValue(of: left) { value in
                guard let lower = order(value, bounds[0], options), let upper = order(value, bounds[1], options) else {
                    return false
                }
                return lower != .orderedAscending && upper != .orderedDescending
            }
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            return anyValue(of: left) { value in
                guard let result = order(value, right, options) else { return false }
                switch comparator {
                case .less: return result == .orderedAscending
                case .lessOrEqual: return result != .orderedDescending
                case .greater: return result == .orderedDescending
                default: return result != .orderedAscending
                }
            }
        case .like:
            return anyValue(of: left) { PredicateStringMatching.like(for: $0, right, options) }
        case .beginsWith:
            return anyValue(of: left) { strings($0, right, options) { $0.hasPrefix($1) } }
        case .endsWith:
            return anyValue(of: left) { strings($0, right, options) { $0.hasSuffix($1) } }
        case .matches:
            return anyValue(of: left) { PredicateStringMatching.matches(for: $0, right, options) }
        case .equal, .notEqual:
            return false
        }
    }

    /// `body` for a single value; for an array, whether it holds for one of its values.
    private static func anyValue(
        of value: PredicateFormatValue,
        _ body: (PredicateFormatValue) -> Bool
    ) -> Bool {
        if case .array(let items) = value { return items.contains(where: body) }
        return body(value)
    }

    /// `body` of the two strings folded by `options`; false unless both are strings.
    private static func strings(
        _ left: PredicateFormatValue,
        _ right: PredicateFormatValue,
        _ options: PredicateFormatOptions,
        _ body: (String, String) -> Bool
    ) -> Bool {
        guard case .string(let left) = left, case .string(let right) = right else { return false }
        return body(PredicateStringMatching.folded(left, options), PredicateStringMatching.folded(right, options))
    }

    /// Equality of two values of one kind; values of different kinds are unequal.
    static func equal(
        _ left: PredicateFormatValue,
        _ right: PredicateFormatValue,
        _ options: PredicateFormatOptions
    ) -> Bool {
        switch (left, right) {
        case (.null, .null):
            return true
        case (.array(let lefts), .array(let rights)):
            return lefts.count == rights.count && zip(lefts, rights).allSatisfy { equal($0, $1, options) }
        case (.url(let left), .url(let right)):
            return left == right
        default:
            return order(left, right, options) == .orderedSame
        }
    }

    /// The order of two numbers, strings or dates; nil for values of other or different kinds.
    static func order(
        _ left: PredicateFormatValue,
        _ right: PredicateFormatValue,
        _ options: PredicateFormatOptions
    ) -> ComparisonResult? {
        switch (left, right) {
        case (.number(let left), .number(let right)):
            return left.compare(to: right)
        case (.date(let left), .date(let right)):
            return left < right ? .orderedAscending : left > right ? .orderedDescending : .orderedSame
        case (.string(let left), .string(let right)):
            let left = PredicateStringMatching.folded(left, options)
            let right = PredicateStringMatching.folded(right, options)
            return left < right ? .orderedAscending : left > right ? .orderedDescending : .orderedSame
        default:
            return nil
        }
    }
}

extension PredicateStringMatching {
    fileprivate static func like(
        for value: PredicateFormatValue,
        _ pattern: PredicateFormatValue,
        _ options: PredicateFormatOptions
    ) -> Bool {
        guard case .string(let string) = value, case .string(let pattern) = pattern else { return false }
        return like(string, pattern, options)
    }

    fileprivate static func matches(
        for value: PredicateFormatValue,
        _ pattern: PredicateFormatValue,
        _ options: PredicateFormatOptions
    ) -> Bool {
        guard case .string(let string) = value, case .string(let pattern) = pattern else { return false }
        return matches(string, pattern, options)
    }
}
