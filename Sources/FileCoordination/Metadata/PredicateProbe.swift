import Foundation

// How the metadata query learns what a predicate it was given holds, without a table beside the predicates: it
// evaluates the predicate with a probe, and a format predicate's closure (NSPredicate+Format.swift) records its parse
// outcome in it.

/// What a predicate holds, for a metadata query that plans its search from it.
enum PredicateParseResult: Sendable, Equatable {
    /// Made by `NSPredicate(format:)`: its tree, arguments substituted.
    case parsed(ParsedPredicate)
    /// Made by `NSPredicate(format:)` from a format that was refused: false for every object, for this reason.
    case invalid(PredicateFormatError)
    /// Anything else (`NSPredicate(block:)`, `NSPredicate(value:)`, `NSCompoundPredicate`): nothing to read;
    /// evaluate it against each item.
    case opaque
}

/// Handed to a predicate's closure, as the object or in the substitution variables (``bindingKey``), to learn what
/// a format predicate holds.
///
/// - Important: Used by one thread at a time: made, passed to `evaluate(with:)` and read by the same caller.
final class PredicateProbe {
    /// The substitution variable that carries a probe when the object evaluated is a real one.
    static let bindingKey = "FileCoordination.PredicateProbe"

    private let target: ObjectIdentifier
    private(set) var outcome: Result<ParsedPredicate, PredicateFormatError>?

    init(probing predicate: NSPredicate) {
        target = ObjectIdentifier(predicate)
    }

    /// Keeps `outcome` when `owner` is the probed predicate itself, not a predicate inside it or called by it.
    func record(_ outcome: Result<ParsedPredicate, PredicateFormatError>, from owner: PredicateFormatOwner) {
        if owner.predicate == target { self.outcome = outcome }
    }
}

/// What `predicate` holds: its parsed format, the error of its refused format, or `.opaque`.
///
/// A compound predicate is `.opaque` without being evaluated. Any other predicate is evaluated once: with the probe as
/// its object, or, when `sample` is given, with `sample` as its object and the probe among its substitution variables.
/// A block predicate of the app's is called so; one that force-casts its object (`$0 as! NSMetadataItem`) must be
/// given a `sample` of that type.
func predicateParseResult(_ predicate: NSPredicate, sample: Any? = nil) -> PredicateParseResult {
    if predicate is NSCompoundPredicate { return .opaque }
    let probe = PredicateProbe(probing: predicate)
    if let sample {
        _ = predicate.evaluate(with: sample, substitutionVariables: [PredicateProbe.bindingKey: probe])
    } else {
        _ = predicate.evaluate(with: probe)
    }
    switch probe.outcome {
    case .success(let parsed): return .parsed(parsed)
    case .failure(let error): return .invalid(error)
    case nil: return .opaque
    }
}
