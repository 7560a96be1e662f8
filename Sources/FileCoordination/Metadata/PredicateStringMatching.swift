import Foundation

// The string comparisons of the predicate format language: the `[c]`/`[d]` folding, LIKE's wildcards, and MATCHES's
// regular expressions. Pure functions; callable from any thread.

enum PredicateStringMatching {
    /// `string` as `[c]`, `[d]` or `[cd]` compare it: folded as Apple's NSPredicate folds (case, diacritics), with no
    /// locale.
    static func folded(_ string: String, _ options: PredicateFormatOptions) -> String {
        options.isEmpty ? string : string.folding(options: options.foldingOptions, locale: nil)
    }

    /// LIKE: the whole of `string` matches `pattern`, where `*` is any run of characters (none included), `?` is one
    /// character, and `\` makes the character after it literal (a `\` that ends the pattern is itself).
    static func like(_ string: String, _ pattern: String, _ options: PredicateFormatOptions) -> Bool {
        let text = Array(folded(string, options))
        let elements = likeElements(folded(pattern, options))
        // The classic two-pointer match with backtracking to the last star: linear in practice, never exponential.
        var textIndex = 0
        var patternIndex = 0
        var starPattern: Int?
        var starText = 0
        while textIndex < text.count {
            if patternIndex < elements.count {
                switch elements[patternIndex] {
                case .anyRun:
                    starPattern = patternIndex
                    starText = textIndex
                    patternIndex += 1
                    continue
                case .anyOne:
                    textIndex += 1
                    patternIndex += 1
                    continue
                case .literal(let character) where character == text[textIndex]:
                    textIndex += 1
                    patternIndex += 1
                    continue
                case .literal:
                    break
                }
            }
            guard let star = starPattern else { return false }
            patternIndex = star + 1
            starText += 1
            textIndex = starText
        }
        while patternIndex < elements.count, elements[patternIndex] == .anyRun { patternIndex += 1 }
        return patternIndex == elements.count
    }

    private enum LikeElement: Equatable {
        case literal(Character)
        case anyOne
        case anyRun
    }

    private static func likeElements(_ pattern: String) -> [LikeElement] {
        var elements: [LikeElement] = []
        var escaped = false
        for character in pattern {
            if escaped {
                elements.append(.literal(character))
                escaped = false
                continue
            }
            switch character {
            case "\\": escaped = true
            case "*": if elements.last != .anyRun { elements.append(.anyRun) }
            case "?": elements.append(.anyOne)
            default: elements.append(.literal(character))
            }
        }
        if escaped { elements.append(.literal("\\")) }
        return elements
    }

    /// MATCHES: the whole of `string` matches the ICU regular expression `pattern` (NSRegularExpression). `[c]` makes
    /// the expression case-insensitive; `[d]` removes the diacritics of both (the pattern's letters only: its escapes
    /// are ASCII). False when the pattern is not a valid expression.
    static func matches(_ string: String, _ pattern: String, _ options: PredicateFormatOptions) -> Bool {
        var string = string
        var pattern = pattern
        if options.contains(.diacriticInsensitive) {
            string = string.folding(options: .diacriticInsensitive, locale: nil)
            pattern = pattern.folding(options: .diacriticInsensitive, locale: nil)
        }
        let regexOptions: NSRegularExpression.Options = options.contains(.caseInsensitive) ? [.caseInsensitive] : []
        guard isValidRegularExpression(pattern),
            let expression = try? NSRegularExpression(pattern: anchored(pattern), options: regexOptions)
        else { return false }
        let range = NSRange(string.startIndex..., in: string)
        return expression.firstMatch(in: string, options: [], range: range) != nil
    }

    /// Whether `pattern` compiles on its own (so that wrapping it in ``anchored(_:)`` cannot change what its
    /// parentheses group, as `a)|(b` would).
    static func isValidRegularExpression(_ pattern: String) -> Bool {
        (try? NSRegularExpression(pattern: pattern, options: [])) != nil
    }

    /// The whole string, not a part of it, and not short of a final newline (`\z`, not `$`).
    private static func anchored(_ pattern: String) -> String {
        "\\A(?:" + pattern + ")\\z"
    }
}
