// The operands of a comparison: keys and key paths, literals, aggregates, and the values of the format's arguments.

extension PredicateFormatParser {
    mutating func expression() throws(PredicateFormatError) -> PredicateFormatExpression {
        let token = advance()
        switch token.kind {
        case .word(let name), .escapedWord(let name):
            if isSymbol("(") { throw error("function calls are not supported", at: token) }
            return .keyPath(try keyPath(startingWith: name))
        case .string(let text):
            return .value(.string(text))
        case .number(let number):
            return .value(.number(number))
        case .specifier(let specifier):
            return try substitute(specifier, at: token)
        case .symbol("{"):
            try enterNesting(at: token)
            defer { depth -= 1 }
            return try aggregate()
        case .reserved(let word):
            return try reservedValue(word, at: token)
        case .symbol("("):
            throw error("expected a key or a value, found \"(\" (parentheses group predicates only)", at: token)
        default:
            throw error("expected a key or a value, found \(Self.describe(token.kind))", at: token)
        }
    }

    /// `first.second.third`: a word after a dot is a key even where it is a reserved word.
    private mutating func keyPath(startingWith first: String) throws(PredicateFormatError) -> String {
        var path = first
        while isSymbol(".") {
            position += 1
            let token = advance()
            switch token.kind {
            case .word(let name), .escapedWord(let name), .reserved(let name):
                if isSymbol("(") { throw error("function calls are not supported", at: token) }
                path += "." + name
            default:
                throw error("expected a key after \".\", found \(Self.describe(token.kind))", at: token)
            }
        }
        return path
    }

    private mutating func aggregate() throws(PredicateFormatError) -> PredicateFormatExpression {
        var items: [PredicateFormatExpression] = []
        if isSymbol("}") {
            position += 1
            return .aggregate(items)
        }
        while true {
            items.append(try expression())
            if isSymbol("}") {
                position += 1
                return .aggregate(items)
            }
            try expect(symbol: ",", "\",\" or \"}\" in {...}")
        }
    }

    private func reservedValue(
        _ word: String,
        at token: PredicateFormatToken
    ) throws(PredicateFormatError) -> PredicateFormatExpression {
        switch word {
        case "TRUE", "YES": return .value(.number(.integer(1)))
        case "FALSE", "NO": return .value(.number(.integer(0)))
        case "NIL", "NULL": return .value(.null)
        case "ANY", "ALL", "SOME", "NONE":
            throw error("\(word) is not supported (aggregate operators ANY, ALL, SOME and NONE are not)", at: token)
        case "SUBQUERY":
            throw error("SUBQUERY is not supported", at: token)
        case "SELF":
            throw error(
                "SELF is not supported: compare a key of the object (escape a key named SELF as #SELF)",
                at: token
            )
        case "FIRST", "LAST", "SIZE":
            throw error("\(word) is not supported (subscripts are not)", at: token)
        default:
            throw error(
                "\(word) is not supported here: expected a key or a value (escape a key as #\(word))",
                at: token
            )
        }
    }

    // MARK: Arguments

    private mutating func substitute(
        _ specifier: String,
        at token: PredicateFormatToken
    ) throws(PredicateFormatError) -> PredicateFormatExpression {
        guard nextArgument < arguments.count else {
            throw error("no argument for %\(specifier) (the format has more specifiers than arguments)", at: token)
        }
        let argument = arguments[nextArgument]
        nextArgument += 1
        let value = PredicateFormatValue(argument)
        switch specifier {
        case "K":
            guard case .string(let key) = value, !key.isEmpty else {
                throw error("%K needs a non-empty string argument, not \(Self.describeArgument(argument))", at: token)
            }
            return .keyPath(key)
        case "@":
            if case .unsupported(let typeName) = value {
                throw error("%@ does not take an argument of type \(typeName)", at: token)
            }
            return .value(value)
        case "f", "lf":
            guard case .number(let number) = value else {
                throw error("%\(specifier) needs a number argument, not \(Self.describeArgument(argument))", at: token)
            }
            return .value(.number(.real(number.doubleValue)))
        default:
            guard case .number(.integer(let integer)) = value else {
                throw error(
                    "%\(specifier) needs an integer argument, not \(Self.describeArgument(argument))",
                    at: token
                )
            }
            return .value(.number(.integer(integer)))
        }
    }

    private static func describeArgument(_ argument: Any) -> String {
        "\(type(of: argument)) \(String(reflecting: argument).prefix(40))"
    }
}
