// A recursive-descent parser of the predicate format language, for the subset a metadata query uses; the arguments
// of the format's specifiers are substituted as they are met, left to right. Grammar, loosest binding first:
//
//     predicate  := and (("OR" | "||") and)*
//     and        := not (("AND" | "&&") not)*
//     not        := ("NOT" | "!") not | "(" predicate ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | comparison
//     comparison := expression comparator ("[" options "]")? expression
//     expression := key ("." key)* | "%K" | literal | "%@" | "%d"... | "{" (expression ("," expression)*)? "}"
//
// Every form outside it is refused with the offset of its first token (PredicateFormatError).

struct PredicateFormatParser {
    let format: String
    let tokens: [PredicateFormatToken]
    let arguments: [Any]
    var position = 0
    var nextArgument = 0
    /// How many NOTs, parentheses and aggregates enclose the current token: parsing and evaluation recurse once per
    /// level, and a thread's stack is finite, so that more than ``maximumDepth`` is refused rather than risked.
    var depth = 0
    static let maximumDepth = 100

    /// Parses `format`, substituting `arguments` in order.
    static func parse(format: String, arguments: [Any]) throws(PredicateFormatError) -> ParsedPredicate {
        let (tokens, lexicalError) = PredicateFormatTokenizer.tokens(of: format)
        var parser = PredicateFormatParser(format: format, tokens: tokens, arguments: arguments)
        do throws(PredicateFormatError) {
            let root = try parser.predicate()
            let last = parser.current
            guard last.kind == .end else {
                throw parser.error("unexpected \(Self.describe(last.kind)) after the end of the predicate", at: last)
            }
            return ParsedPredicate(format: format, root: root)
        } catch {
            // The parser stops at the unreadable lexeme at the latest: whichever refusal comes first is reported.
            if let lexicalError, lexicalError.offset <= error.offset { throw lexicalError }
            throw error
        }
    }

    private init(format: String, tokens: [PredicateFormatToken], arguments: [Any]) {
        self.format = format
        self.tokens = tokens
        self.arguments = arguments
    }

    // MARK: Tokens

    var current: PredicateFormatToken { tokens[position] }

    mutating func advance() -> PredicateFormatToken {
        let token = tokens[position]
        if token.kind != .end && token.kind != .invalid { position += 1 }
        return token
    }

    func error(_ message: String, at token: PredicateFormatToken) -> PredicateFormatError {
        PredicateFormatError(format: format, offset: token.offset, message: message)
    }

    func isSymbol(_ symbols: String...) -> Bool {
        if case .symbol(let symbol) = current.kind { return symbols.contains(symbol) }
        return false
    }

    func isReserved(_ words: String...) -> Bool {
        if case .reserved(let word) = current.kind { return words.contains(word) }
        return false
    }

    mutating func expect(symbol: String, _ what: String) throws(PredicateFormatError) {
        guard isSymbol(symbol) else {
            throw error("expected \(what), found \(Self.describe(current.kind))", at: current)
        }
        position += 1
    }

    static func describe(_ kind: PredicateFormatToken.Kind) -> String {
        switch kind {
        case .word(let word), .escapedWord(let word): "key \(word)"
        case .reserved(let word): word
        case .string(let text): "string \"\(text)\""
        case .number(.integer(let value)): "number \(value)"
        case .number(.real(let value)): "number \(value)"
        case .specifier(let specifier): "%\(specifier)"
        case .symbol(let symbol): "\"\(symbol)\""
        case .end: "the end of the format"
        case .invalid: "an unreadable lexeme"
        }
    }

    // MARK: Predicates

    private mutating func predicate() throws(PredicateFormatError) -> PredicateFormatNode {
        var nodes = [try conjunction()]
        while isReserved("OR") || isSymbol("||") {
            position += 1
            nodes.append(try conjunction())
        }
        return nodes.count == 1 ? nodes[0] : .or(nodes)
    }

    private mutating func conjunction() throws(PredicateFormatError) -> PredicateFormatNode {
        var nodes = [try negation()]
        while isReserved("AND") || isSymbol("&&") {
            position += 1
            nodes.append(try negation())
        }
        return nodes.count == 1 ? nodes[0] : .and(nodes)
    }

    private mutating func negation() throws(PredicateFormatError) -> PredicateFormatNode {
        if isReserved("NOT") || isSymbol("!") {
            try enterNesting(at: current)
            defer { depth -= 1 }
            position += 1
            return .not(try negation())
        }
        if isSymbol("(") {
            try enterNesting(at: current)
            defer { depth -= 1 }
            position += 1
            let node = try predicate()
            try expect(symbol: ")", "\")\"")
            return node
        }
        if isReserved("TRUEPREDICATE", "FALSEPREDICATE") {
            return .constant(advance().kind == .reserved("TRUEPREDICATE"))
        }
        return .comparison(try comparison())
    }

    private mutating func comparison() throws(PredicateFormatError) -> PredicateFormatComparison {
        let left = try expression()
        try refuseSubscript()
        let comparator = try self.comparator()
        let options = try self.options()
        let rightToken = current
        let right = try expression()
        try refuseSubscript()
        try check(right, of: comparator, at: rightToken)
        return PredicateFormatComparison(left: left, comparator: comparator, options: options, right: right)
    }

    private mutating func comparator() throws(PredicateFormatError) -> PredicateFormatComparator {
        let token = advance()
        switch token.kind {
        case .symbol("=="), .symbol("="): return .equal
        case .symbol("!="), .symbol("<>"): return .notEqual
        case .symbol("<"): return .less
        case .symbol("<="), .symbol("=<"): return .lessOrEqual
        case .symbol(">"): return .greater
        case .symbol(">="), .symbol("=>"): return .greaterOrEqual
        case .reserved("LIKE"): return .like
        case .reserved("BEGINSWITH"): return .beginsWith
        case .reserved("ENDSWITH"): return .endsWith
        case .reserved("CONTAINS"): return .contains
        case .reserved("MATCHES"): return .matches
        case .reserved("IN"): return .in
        case .reserved("BETWEEN"): return .between
        case .reserved("UTI-CONFORMS-TO"), .reserved("UTI-EQUALS"):
            throw error("\(Self.describe(token.kind)) is not supported", at: token)
        case .symbol("("):
            throw error("function calls are not supported", at: token)
        default:
            throw error("expected a comparison operator, found \(Self.describe(token.kind))", at: token)
        }
    }

    /// `[c]`, `[d]`, `[cd]` (in any order, `n` accepted and ignored).
    private mutating func options() throws(PredicateFormatError) -> PredicateFormatOptions {
        guard isSymbol("[") else { return [] }
        position += 1
        let token = advance()
        guard case .word(let letters) = token.kind else {
            throw error("expected comparison options (c, d), found \(Self.describe(token.kind))", at: token)
        }
        var options: PredicateFormatOptions = []
        for letter in letters {
            switch letter {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n": break
            default: throw error("unsupported comparison option \"\(letter)\" (c, d and n are)", at: token)
            }
        }
        try expect(symbol: "]", "\"]\" after comparison options")
        return options
    }

    mutating func enterNesting(at token: PredicateFormatToken) throws(PredicateFormatError) {
        guard depth < Self.maximumDepth else {
            throw error("nested more than \(Self.maximumDepth) levels deep", at: token)
        }
        depth += 1
    }

    private func refuseSubscript() throws(PredicateFormatError) {
        if isSymbol("[") { throw error("subscripts ([index], [FIRST], [SIZE]) are not supported", at: current) }
    }

    /// What a comparator needs of its right side, where it is known before evaluation.
    private func check(
        _ right: PredicateFormatExpression,
        of comparator: PredicateFormatComparator,
        at token: PredicateFormatToken
    ) throws(PredicateFormatError) {
        switch (comparator, right) {
        case (.between, .aggregate(let items)):
            if items.count != 2 { throw error("BETWEEN needs two bounds: {lower, upper}", at: token) }
        case (.between, .value(let value)):
            guard case .array(let items) = value, items.count == 2 else {
                throw error("BETWEEN needs two bounds: {lower, upper}", at: token)
            }
        case (.in, .value(let value)):
            switch value {
            case .array, .string, .null: return
            default: throw error("IN needs a collection: {a, b} or an array argument", at: token)
            }
        case (.matches, .value(.string(let pattern))):
            if !PredicateStringMatching.isValidRegularExpression(pattern) {
                throw error("invalid regular expression for MATCHES", at: token)
            }
        default:
            return
        }
    }
}
