/// Why a predicate format was refused: the construct and where it starts.
///
/// On macOS, `NSPredicate(format:)` raises an Objective-C exception for a format it cannot parse, which ends the
/// process. Here it never does: a format that does not parse, or that uses a form this library does not evaluate
/// (`SUBQUERY`, `ANY`/`ALL`/`SOME`/`NONE`, function calls, `$variables`, key-path operators such as `@count`,
/// subscripts, arithmetic, `SELF`), makes a predicate that is false for every object. Use
/// ``Foundation/NSPredicate/validated(format:argumentArray:)`` to get this error instead.
///
/// - Important: A value; thread-safe.
public struct PredicateFormatError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The format as it was given.
    public let format: String
    /// Where the refused construct starts, in `Character`s from the start of ``format`` (its length when the format
    /// ended too early).
    public let offset: Int
    /// What was refused, in words: "SUBQUERY is not supported", "expected a comparison operator".
    public let message: String

    /// An error about `format`, at `offset` (in `Character`s), saying `message`.
    public init(format: String, offset: Int, message: String) {
        self.format = format
        self.offset = offset
        self.message = message
    }

    /// The message, its offset, and the format with an arrow where the construct starts:
    /// `predicate format error at offset 13: SUBQUERY is not supported in "size > 3 AND →SUBQUERY(...)"`.
    public var description: String {
        let characters = Array(format)
        let split = min(max(offset, 0), characters.count)
        let marked = String(characters[..<split]) + "\u{2192}" + String(characters[split...])
        return "predicate format error at offset \(offset): \(message) in \"\(marked)\""
    }
}
