import FCToolkit
public import Foundation
import Logging

// `NSPredicate(format:)` on Linux. swift-corelibs-foundation declares Apple's format initialisers unavailable; these,
// declared in an extension of another module, are the ones a client that imports Foundation and FileCoordination
// calls. They parse the format once (PredicateFormatParser.swift) and make a block predicate whose closure evaluates
// the tree (PredicateFormatEvaluator.swift).
//
// The closure is called on whichever thread evaluates the predicate: it captures only the parse outcome (a Sendable
// value) and the predicate's identity (set once, read under a lock).
//
// `predicateFormat` stays corelibs' own, which Foundation leaves unimplemented on Linux.

/// Apple's format initialisers, which swift-corelibs-foundation leaves unavailable, for the forms a metadata query
/// uses; and ``validated(format:argumentArray:)``, which throws where they would make a predicate that is always false.
extension NSPredicate {
    /// A predicate from a format string and its arguments, as on macOS: `NSPredicate(format: "%K LIKE[c] %@",
    /// NSMetadataItemFSNameKey, "*.txt")`.
    ///
    /// The subset of Apple's format language a metadata query uses is supported: `%K`, `%@`, `%d`/`%i`/`%u`/`%f`
    /// (with `l`, `ll`, `q`, `h` lengths), quoted strings, numbers, `TRUE`/`FALSE`/`YES`/`NO`, `NIL`/`NULL`, keys and
    /// dotted key paths, `==`, `!=`, `<`, `<=`, `>`, `>=`, `LIKE`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `MATCHES`,
    /// `IN`, `BETWEEN`, the `[c]`/`[d]`/`[cd]` modifiers, `AND`, `OR`, `NOT`, parentheses, `TRUEPREDICATE` and
    /// `FALSEPREDICATE`. It is evaluated against `[String: Any]` dictionaries and metadata items.
    ///
    /// Where macOS raises an exception (a format that does not parse), or for forms outside that subset (`SUBQUERY`,
    /// `ANY`/`ALL`/`SOME`/`NONE`, functions, `$variables`, `@count` and other key-path operators), the predicate is
    /// false for every object, and the reason is logged as a warning (``FileCoordinationLogging``). Use
    /// ``validated(format:_:)`` to have it thrown instead.
    ///
    /// Linux's Swift has fewer `CVarArg` types than macOS: pass a `Date`, `URL`, `NSNumber`, `NSNull` or an array
    /// through ``init(format:argumentArray:)``. The predicate's `predicateFormat` is Foundation's for a block
    /// predicate (`BLOCKPREDICATE`), not the format.
    public convenience init(format predicateFormat: String, _ args: any CVarArg...) {
        self.init(formatOutcome: Self.parseFormat(predicateFormat, arguments: args))
    }

    /// A predicate from a format string and an array of arguments, as on macOS; see ``init(format:_:)``.
    public convenience init(format predicateFormat: String, argumentArray arguments: [Any]?) {
        self.init(formatOutcome: Self.parseFormat(predicateFormat, arguments: arguments ?? []))
    }

    /// The predicate of a format string and its arguments, or the error that says which construct of the format
    /// was refused, and where: for new code, which would rather fail than evaluate to false.
    ///
    /// ```swift
    /// let predicate = try NSPredicate.validated(format: "%K BEGINSWITH[c] %@", argumentArray: [key, prefix])
    /// ```
    ///
    /// - Throws: ``PredicateFormatError`` when `format` does not parse, uses a form outside the supported subset
    ///   (``init(format:_:)``), or has an argument of the wrong type or too few arguments.
    public static func validated(
        format: String,
        argumentArray arguments: [Any]?
    ) throws(PredicateFormatError) -> NSPredicate {
        let outcome = parseFormat(format, arguments: arguments ?? [], logging: false)
        if case .failure(let error) = outcome { throw error }
        return NSPredicate(formatOutcome: outcome)
    }

    /// ``validated(format:argumentArray:)`` with its arguments listed.
    public static func validated(format: String, _ args: any CVarArg...) throws(PredicateFormatError) -> NSPredicate {
        try validated(format: format, argumentArray: args)
    }

    /// A block predicate that evaluates `outcome`'s tree, or is false for every object when the format failed; a
    /// ``PredicateProbe`` handed to it is told which (``predicateParseResult(_:sample:)``).
    convenience init(formatOutcome outcome: Result<ParsedPredicate, PredicateFormatError>) {
        let owner = PredicateFormatOwner()
        self.init(block: { object, bindings in
            if let probe = object as? PredicateProbe {
                probe.record(outcome, from: owner)
                return false
            }
            if let probe = bindings?[PredicateProbe.bindingKey] as? PredicateProbe {
                probe.record(outcome, from: owner)
            }
            guard case .success(let parsed) = outcome else { return false }
            return PredicateFormatEvaluator.evaluate(parsed, with: object)
        })
        owner.identify(self)
        FormatPredicates.add(self)
    }

    static func parseFormat(
        _ format: String,
        arguments: [Any],
        logging: Bool = true
    ) -> Result<ParsedPredicate, PredicateFormatError> {
        do throws(PredicateFormatError) {
            return .success(try PredicateFormatParser.parse(format: format, arguments: arguments))
        } catch {
            if logging {
                FileCoordinationLogging.logger.warning(
                    "NSPredicate(format:) refused its format; the predicate is false for every object",
                    metadata: ["error": "\(error)"]
                )
            }
            return .failure(error)
        }
    }
}

/// Which predicate a format closure belongs to: the closure is made before its predicate exists, so the predicate's
/// identity is set just after.
///
/// - Important: Thread-safe (`Locked`).
final class PredicateFormatOwner: Sendable {
    private let identifier = Locked<ObjectIdentifier?>(nil)

    func identify(_ predicate: NSPredicate) {
        identifier.withLock { $0 = ObjectIdentifier(predicate) }
    }

    var predicate: ObjectIdentifier? { identifier.withLock { $0 } }
}

/// The live predicates made from a format (``NSPredicate/init(formatOutcome:)``), held weakly: evaluating one runs
/// only this library's code, so a live query may evaluate it on the connection's reading thread (``NSMetadataQuery``);
/// any other predicate may run the app's code, which must not run there.
///
/// Bounded by the live ones: entries of predicates gone are dropped whenever the table has doubled since the last
/// time. An identifier reused by a new object is not taken for the old one (the weak reference must be that object).
///
/// - Important: Thread-safe (`Locked`).
enum FormatPredicates {
    // @unchecked: the reference is only compared by identity, never used to call the predicate.
    private struct Entry: @unchecked Sendable {
        weak var predicate: NSPredicate?
    }

    private static let table = Locked((entries: [ObjectIdentifier: Entry](), pruneAt: 64))

    static func add(_ predicate: NSPredicate) {
        table.withLock { table in
            table.entries[ObjectIdentifier(predicate)] = Entry(predicate: predicate)
            guard table.entries.count >= table.pruneAt else { return }
            table.entries = table.entries.filter { $0.value.predicate != nil }
            table.pruneAt = max(64, 2 * table.entries.count)
        }
    }

    /// Entries kept, live or not yet dropped (for the tests).
    static var count: Int { table.withLock { $0.entries.count } }

    /// Whether `predicate` was made from a format.
    static func contains(_ predicate: NSPredicate) -> Bool {
        table.withLock { $0.entries[ObjectIdentifier(predicate)]?.predicate === predicate }
    }
}
