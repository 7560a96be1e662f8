// The lexical half of the predicate format language: characters in, tokens out, each with the offset (in
// `Character`s) it starts at. Lexemes of forms outside the supported subset that no token could carry (`$variables`,
// `@` key-path operators, arithmetic) are refused here, where their offset is known; the parser reports that refusal
// only if it gets that far, so that the first refused construct of a format is the one named (`SUBQUERY`, not the
// `$variable` inside it).

struct PredicateFormatToken: Equatable {
    enum Kind: Equatable {
        /// A bare identifier that is no reserved word: a key.
        case word(String)
        /// `#word`: a key, reserved word or not.
        case escapedWord(String)
        /// One of Apple's reserved words, upper-cased (`AND`, `LIKE`, `SUBQUERY`, `UTI-CONFORMS-TO`...).
        case reserved(String)
        case string(String)
        case number(PredicateFormatNumber)
        /// A format specifier, without its `%`: `@`, `K`, `d`, `ld`, `f`...
        case specifier(String)
        /// Operators and punctuation: `==`, `<=`, `&&`, `!`, `(`, `{`, `[`, `,`, `.`...
        case symbol(String)
        case end
        /// Where a lexeme could not be read (the tokenizer's error says why): the parser stops there as at the end.
        case invalid
    }

    let kind: Kind
    let offset: Int
}

/// Apple's reserved words (Predicate Format String Syntax); matched without regard to case.
private let reservedWords: Set<String> = [
    "AND", "OR", "IN", "NOT", "ALL", "ANY", "SOME", "NONE", "LIKE", "CASEINSENSITIVE", "CI", "MATCHES", "CONTAINS",
    "BEGINSWITH", "ENDSWITH", "BETWEEN", "NULL", "NIL", "SELF", "TRUE", "YES", "FALSE", "NO", "FIRST", "LAST", "SIZE",
    "ANYKEY", "SUBQUERY", "FETCH", "CAST", "TRUEPREDICATE", "FALSEPREDICATE",
]

/// Symbols of two characters, tried before those of one.
private let pairSymbols: Set<String> = ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||"]
private let singleSymbols: Set<Character> = ["=", "<", ">", "!", "(", ")", "{", "}", "[", "]", ",", "."]

struct PredicateFormatTokenizer {
    private let format: String
    private let characters: [Character]
    private var index = 0

    init(format: String) {
        self.format = format
        self.characters = Array(format)
    }

    /// The tokens of the format, ending with `.end`, or with `.invalid` and the error of the lexeme there.
    static func tokens(of format: String) -> (tokens: [PredicateFormatToken], error: PredicateFormatError?) {
        var tokenizer = PredicateFormatTokenizer(format: format)
        var tokens: [PredicateFormatToken] = []
        while true {
            do throws(PredicateFormatError) {
                let token = try tokenizer.next()
                tokens.append(token)
                if token.kind == .end { return (tokens, nil) }
            } catch {
                tokens.append(PredicateFormatToken(kind: .invalid, offset: error.offset))
                return (tokens, error)
            }
        }
    }

    private func error(_ message: String, at offset: Int) -> PredicateFormatError {
        PredicateFormatError(format: format, offset: offset, message: message)
    }

    private func peek(_ ahead: Int = 0) -> Character? {
        index + ahead < characters.count ? characters[index + ahead] : nil
    }

    private mutating func next() throws(PredicateFormatError) -> PredicateFormatToken {
        while let character = peek(), character.isWhitespace { index += 1 }
        let start = index
        guard let character = peek() else { return PredicateFormatToken(kind: .end, offset: start) }
        let kind: PredicateFormatToken.Kind
        switch character {
        case "\"", "'":
            kind = .string(try quoted())
        case "%":
            kind = try specifier()
        case "#":
            index += 1
            guard let first = peek(), Self.startsIdentifier(first) else {
                throw error("expected a key name after #", at: start)
            }
            kind = .escapedWord(identifier())
        case "$":
            throw error("variables ($name) are not supported", at: start)
        case "@":
            throw error("key-path operators (@count, @sum, @avg...) are not supported", at: start)
        case "+", "*", "/":
            throw error("arithmetic (+, -, *, /, **) is not supported", at: start)
        case "-":
            guard let next = peek(1), next.isASCII, next.isNumber else {
                throw error("arithmetic (+, -, *, /, **) is not supported", at: start)
            }
            index += 1
            kind = .number(try number(negative: true, start: start))
        case _ where character.isASCII && character.isNumber:
            kind = .number(try number(negative: false, start: start))
        case _ where Self.startsIdentifier(character):
            kind = word()
        default:
            if let second = peek(1), pairSymbols.contains(String([character, second])) {
                index += 2
                kind = .symbol(String([character, second]))
            } else if singleSymbols.contains(character) {
                index += 1
                kind = .symbol(String(character))
            } else {
                throw error("unexpected character \"\(character)\"", at: start)
            }
        }
        return PredicateFormatToken(kind: kind, offset: start)
    }

    private static func startsIdentifier(_ character: Character) -> Bool {
        character == "_" || character.isLetter
    }

    private static func continuesIdentifier(_ character: Character) -> Bool {
        character == "_" || character.isLetter || character.isNumber
    }

    private mutating func identifier() -> String {
        let start = index
        while let character = peek(), Self.continuesIdentifier(character) { index += 1 }
        return String(characters[start..<index])
    }

    /// A bare word: a reserved word (`UTI-CONFORMS-TO` and `UTI-EQUALS` included) or a key.
    private mutating func word() -> PredicateFormatToken.Kind {
        let name = identifier()
        let upper = name.uppercased()
        if upper == "UTI" {
            for suffix in ["-CONFORMS-TO", "-EQUALS"] {
                let end = index + suffix.count
                if end <= characters.count, String(characters[index..<end]).uppercased() == suffix {
                    index = end
                    return .reserved(upper + suffix)
                }
            }
        }
        return reservedWords.contains(upper) ? .reserved(upper) : .word(name)
    }

    /// An integer or a decimal (with an optional exponent); past its optional minus sign.
    private mutating func number(negative: Bool, start: Int) throws(PredicateFormatError) -> PredicateFormatNumber {
        let digitsStart = index
        var isReal = false
        func skipDigits() {
            while let character = peek(), character.isASCII, character.isNumber { index += 1 }
        }
        skipDigits()
        if peek() == ".", let next = peek(1), next.isASCII, next.isNumber {
            isReal = true
            index += 1
            skipDigits()
        }
        if let marker = peek(), marker == "e" || marker == "E" {
            let sign = peek(1) == "+" || peek(1) == "-" ? 1 : 0
            if let digit = peek(1 + sign), digit.isASCII, digit.isNumber {
                isReal = true
                index += 1 + sign
                skipDigits()
            }
        }
        if let character = peek(), Self.continuesIdentifier(character) {
            throw error("unsupported number literal", at: start)
        }
        let text = (negative ? "-" : "") + String(characters[digitsStart..<index])
        if !isReal, let integer = Int64(text) { return .integer(integer) }
        guard let real = Double(text) else { throw error("unsupported number literal", at: start) }
        return .real(real)
    }

    /// A quoted string, its escapes decoded. Escapes other than `\n`, `\t`, `\r`, `\0`, `\\`, `\'` and `\"` keep their
    /// backslash, so that a LIKE pattern's `\*` and `\?` and a regular expression's `\d` reach them as written. `%%`
    /// is one `%`; any other `%` is literal (a specifier in quotes is not substituted, as on macOS).
    private mutating func quoted() throws(PredicateFormatError) -> String {
        let start = index
        let quote = characters[index]
        index += 1
        var text = ""
        while let character = peek() {
            index += 1
            switch character {
            case quote:
                return text
            case "\\":
                guard let escaped = peek() else { break }
                index += 1
                switch escaped {
                case "n": text.append("\n")
                case "t": text.append("\t")
                case "r": text.append("\r")
                case "0": text.append("\0")
                case "\\", "'", "\"": text.append(escaped)
                default: text.append(contentsOf: ["\\", escaped])
                }
            case "%" where peek() == "%":
                index += 1
                text.append("%")
            default:
                text.append(character)
            }
        }
        throw error("unterminated string", at: start)
    }

    /// `%@`, `%K`, `%d`, `%i`, `%u`, `%f` with an optional `l`, `ll`, `q` or `h` length.
    private mutating func specifier() throws(PredicateFormatError) -> PredicateFormatToken.Kind {
        let start = index
        index += 1
        var text = ""
        while let character = peek(), text.count < 3, "lqh".contains(character) {
            text.append(character)
            index += 1
        }
        guard let conversion = peek() else { throw error("incomplete format specifier", at: start) }
        index += 1
        let allowed: Set<String> = [
            "@", "K", "d", "i", "u", "f", "ld", "li", "lu", "lf", "lld", "lli", "llu", "qd", "qi", "qu", "hd", "hi",
            "hu",
        ]
        if conversion == "%" && text.isEmpty {
            throw error("%% outside quotes: a literal % belongs in a quoted string", at: start)
        }
        text.append(conversion)
        guard allowed.contains(text) else { throw error("unsupported format specifier %\(text)", at: start) }
        return .specifier(text)
    }
}
