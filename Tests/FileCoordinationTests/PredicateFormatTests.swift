import Dispatch
import Foundation
import Testing

@testable import FileCoordination

// NSPredicate(format:) for the forms a metadata query uses (issue 44): the format language's supported subset,
// argument substitution, evaluation against dictionaries and attribute sources, and a clear error, never a crash,
// for every form outside it.

@Suite struct PredicateFormatTests {
    /// A file's attributes, as a metadata item would give them.
    static var file: [String: Any] {
        [
            "kMDItemFSName": "Report Final.txt",
            "kMDItemDisplayName": "Résumé",
            "kMDItemFSSize": 2048,
            "kMDItemFSCreationDate": Date(timeIntervalSince1970: 1_000_000),
            "kMDItemContentType": "public.plain-text",
            "kMDItemContentTypeTree": ["public.plain-text", "public.text", "public.data", "public.item"],
            "kMDItemURL": URL(fileURLWithPath: "/home/user/Report Final.txt"),
            "ratio": 0.5,
            "count": NSNumber(value: 3),
            "flag": true,
            "nothing": NSNull(),
            "owner": ["name": "ann", "address": ["city": "Oslo"]] as [String: Any],
        ]
    }

    static func evaluate(_ format: String, _ arguments: [Any] = [], _ object: Any? = file) -> Bool {
        NSPredicate(format: format, argumentArray: arguments).evaluate(with: object)
    }

    static func refusal(_ format: String, _ arguments: [Any] = []) -> PredicateFormatError? {
        do {
            _ = try NSPredicate.validated(format: format, argumentArray: arguments)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Constants

    @Test func metadataKeysAndScopesHaveApplesValues() {
        #expect(NSMetadataItemFSNameKey == "kMDItemFSName")
        #expect(NSMetadataItemDisplayNameKey == "kMDItemDisplayName")
        #expect(NSMetadataItemURLKey == "kMDItemURL")
        #expect(NSMetadataItemPathKey == "kMDItemPath")
        #expect(NSMetadataItemFSSizeKey == "kMDItemFSSize")
        #expect(NSMetadataItemFSCreationDateKey == "kMDItemFSCreationDate")
        #expect(NSMetadataItemFSContentChangeDateKey == "kMDItemFSContentChangeDate")
        #expect(NSMetadataItemContentTypeKey == "kMDItemContentType")
        #expect(NSMetadataItemContentTypeTreeKey == "kMDItemContentTypeTree")
        #expect(NSMetadataQueryUserHomeScope == "kMDQueryScopeHome")
        #expect(NSMetadataQueryLocalComputerScope == "kMDQueryScopeComputer")
        #expect(NSMetadataQueryNetworkScope == "kMDQueryScopeNetwork")
        #expect(NSMetadataQueryUbiquitousDocumentsScope == "NSMetadataQueryUbiquitousDocumentsScope")
        #expect(NSMetadataQueryUbiquitousDataScope == "NSMetadataQueryUbiquitousDataScope")
        #expect(
            NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope
                == "NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope"
        )
    }

    // MARK: Argument substitution

    @Test func variadicArgumentsAreSubstitutedInOrder() {
        let predicate = NSPredicate(
            format: "%K == %@ AND %K > %d",
            NSMetadataItemFSNameKey,
            "Report Final.txt",
            NSMetadataItemFSSizeKey,
            1000
        )
        #expect(predicate.evaluate(with: Self.file))
        #expect(!NSPredicate(format: "%K == %@", NSMetadataItemFSNameKey, "other").evaluate(with: Self.file))
        #expect(NSPredicate(format: "TRUEPREDICATE").evaluate(with: Self.file))
        #expect(NSPredicate(format: "ratio == %f", 0.5).evaluate(with: Self.file))
        #expect(
            NSPredicate(format: "%K == %@", "kMDItemFSName" as NSString, "Report Final.txt").evaluate(with: Self.file)
        )
        #expect(NSPredicate(format: "flag == %@", true).evaluate(with: Self.file))
        #expect(NSPredicate(format: "kMDItemFSSize == %@", 2048).evaluate(with: Self.file))
        #expect(NSPredicate(format: "ratio == %@", 0.5).evaluate(with: Self.file))
    }

    @Test(arguments: ["d", "i", "ld", "lld", "u", "qd", "hd"])
    func integerSpecifiersTakeIntegers(_ specifier: String) {
        #expect(Self.evaluate("kMDItemFSSize == %\(specifier)", [2048]))
        #expect(Self.evaluate("kMDItemFSSize == %\(specifier)", [Int32(2048)]))
        #expect(Self.evaluate("kMDItemFSSize == %\(specifier)", [UInt64(2048)]))
        #expect(Self.evaluate("kMDItemFSSize == %\(specifier)", [NSNumber(value: 2048)]))
        #expect(!Self.evaluate("kMDItemFSSize == %\(specifier)", [2047]))
    }

    @Test func floatSpecifiersTakeAnyNumber() {
        #expect(Self.evaluate("ratio == %f", [0.5]))
        #expect(Self.evaluate("ratio == %lf", [Float(0.5)]))
        #expect(Self.evaluate("kMDItemFSSize == %f", [2048]))
    }

    @Test func atSpecifierTakesEveryValueType() {
        #expect(Self.evaluate("kMDItemFSName == %@", ["Report Final.txt"]))
        #expect(Self.evaluate("kMDItemFSName == %@", [Substring("Report Final.txt")]))
        #expect(Self.evaluate("kMDItemFSName == %@", [NSString(string: "Report Final.txt")]))
        #expect(Self.evaluate("kMDItemFSSize == %@", [NSNumber(value: 2048)]))
        #expect(Self.evaluate("kMDItemFSSize == %@", [Int64(2048)]))
        #expect(Self.evaluate("ratio == %@", [0.5]))
        #expect(Self.evaluate("flag == %@", [true]))
        #expect(Self.evaluate("kMDItemFSCreationDate == %@", [Date(timeIntervalSince1970: 1_000_000)]))
        #expect(Self.evaluate("kMDItemFSCreationDate == %@", [NSDate(timeIntervalSince1970: 1_000_000)]))
        #expect(Self.evaluate("kMDItemURL == %@", [URL(fileURLWithPath: "/home/user/Report Final.txt")]))
        #expect(Self.evaluate("missing == %@", [NSNull()]))
        #expect(Self.evaluate("kMDItemFSSize IN %@", [[1, 2048, 3]]))
        #expect(Self.evaluate("kMDItemFSSize IN %@", [NSArray(array: [2048])]))
    }

    @Test func specifiersInQuotesAreLiteralAndDoublePercentIsOnePercent() {
        let object: [String: Any] = ["name": "%@", "rate": "50%"]
        #expect(Self.evaluate("name == '%@'", [], object))
        #expect(Self.evaluate("rate == '50%%'", [], object))
        #expect(Self.evaluate("rate == \"50%\"", [], object))
    }

    @Test func extraArgumentsAreIgnored() {
        #expect(Self.evaluate("kMDItemFSSize == 2048", ["unused"]))
    }

    // MARK: Literals and keys

    @Test(arguments: [
        ("kMDItemFSName == 'Report Final.txt'", true),
        ("kMDItemFSName == \"Report Final.txt\"", true),
        ("kMDItemFSSize == 2048", true),
        ("kMDItemFSSize == 2048.0", true),
        ("kMDItemFSSize == 2.048e3", true),
        ("kMDItemFSSize > -1", true),
        ("ratio == 0.5", true),
        ("ratio == 5E-1", true),
        ("flag == TRUE", true),
        ("flag == yes", true),
        ("flag == 1", true),
        ("flag == FALSE", false),
        ("flag == NO", false),
        ("nothing == nil", true),
        ("nothing == NULL", true),
        ("missing == nil", true),
        ("missing != nil", false),
        ("kMDItemFSName != nil", true),
        ("kMDItemFSName == nil", false),
        ("nothing != 'x'", true),
        ("owner.name == 'ann'", true),
        ("owner.address.city == 'Oslo'", true),
        ("owner.address.country == nil", true),
        ("owner.name.first == nil", true),
    ])
    func literalsAndKeys(_ format: String, _ expected: Bool) {
        #expect(Self.evaluate(format) == expected, "\(format)")
    }

    @Test func stringEscapes() {
        let object: [String: Any] = [
            "quote": "it's \"so\"", "lines": "a\nb\tc", "backslash": "a\\b", "pattern": "a\\*b",
        ]
        #expect(Self.evaluate(#"quote == 'it\'s "so"'"#, [], object))
        #expect(Self.evaluate(#"quote == "it's \"so\"""#, [], object))
        #expect(Self.evaluate(#"lines == 'a\nb\tc'"#, [], object))
        #expect(Self.evaluate(#"backslash == 'a\\b'"#, [], object))
        // An escape the string does not know keeps its backslash, for LIKE and MATCHES.
        #expect(Self.evaluate(#"pattern == 'a\*b'"#, [], object))
    }

    @Test func escapedReservedWordsAreKeys() {
        let object: [String: Any] = ["size": 3, "in": "x", "SELF": 1]
        #expect(Self.evaluate("#size == 3", [], object))
        #expect(Self.evaluate("#in == 'x'", [], object))
        #expect(Self.evaluate("#SELF == 1", [], object))
        #expect(Self.evaluate("%K == 3", ["size"], object))
    }

    @Test func optionalsAreTheirValuesOrNil() {
        let none: Int? = nil
        let some: Int? = 3
        let object: [String: Any] = ["absent": none as Any, "present": some as Any]
        #expect(Self.evaluate("absent == nil AND present == 3 AND present != nil", [], object))
        #expect(Self.evaluate("present == %@ AND absent == %@", [some as Any, none as Any], object))
    }

    @Test func keysWithDotsAreFirstTriedWhole() {
        let object: [String: Any] = ["com.example.tag": "red", "a": ["b": 2]]
        #expect(Self.evaluate("%K == 'red'", ["com.example.tag"], object))
        #expect(Self.evaluate("a.b == 2", [], object))
    }

    @Test func keywordsAreCaseInsensitive() {
        #expect(Self.evaluate("kMDItemFSName like[c] '*.TXT' and kMDItemFSSize between {1, 4096} or falsepredicate"))
        #expect(Self.evaluate("not kMDItemFSName beginswith 'x' && kMDItemContentType Contains 'plain'"))
        #expect(Self.evaluate("kMDItemFSSize in {2048} AND TruePredicate"))
    }

    // MARK: Comparisons

    @Test(arguments: [
        ("kMDItemFSSize == 2048", true), ("kMDItemFSSize = 2048", true), ("kMDItemFSSize != 2048", false),
        ("kMDItemFSSize <> 2047", true), ("kMDItemFSSize < 4096", true), ("kMDItemFSSize < 2048", false),
        ("kMDItemFSSize <= 2048", true), ("kMDItemFSSize =< 2047", false), ("kMDItemFSSize > 2047", true),
        ("kMDItemFSSize > 2048", false), ("kMDItemFSSize >= 2048", true), ("kMDItemFSSize => 2049", false),
        ("2048 == kMDItemFSSize", true), ("4096 > kMDItemFSSize", true),
        ("kMDItemFSName < 'S'", true), ("kMDItemFSName > 'S'", false), ("'abc' < 'abd'", true),
        ("kMDItemFSName BEGINSWITH 'Report'", true), ("kMDItemFSName BEGINSWITH 'report'", false),
        ("kMDItemFSName ENDSWITH '.txt'", true), ("kMDItemFSName ENDSWITH '.TXT'", false),
        ("kMDItemFSName CONTAINS 'Final'", true), ("kMDItemFSName CONTAINS 'final'", false),
        ("kMDItemFSSize BETWEEN {1000, 3000}", true), ("kMDItemFSSize BETWEEN {2048, 2048}", true),
        ("kMDItemFSSize BETWEEN {3000, 4000}", false), ("kMDItemFSName BETWEEN {'A', 'S'}", true),
        ("kMDItemFSSize IN {1, 2048}", true), ("kMDItemFSSize IN {1, 2}", false),
        ("kMDItemContentType IN {'public.plain-text', 'public.image'}", true),
        ("'Final' IN kMDItemFSName", true), ("'public.text' IN kMDItemContentTypeTree", true),
        ("kMDItemContentTypeTree CONTAINS 'public.data'", true),
        ("kMDItemContentTypeTree CONTAINS 'public.image'", false),
        ("kMDItemContentTypeTree == 'public.text'", true), ("kMDItemContentTypeTree != 'public.text'", false),
        ("kMDItemContentTypeTree != 'public.image'", true),
        ("kMDItemContentTypeTree == {'public.plain-text', 'public.text', 'public.data', 'public.item'}", true),
    ])
    func comparators(_ format: String, _ expected: Bool) {
        #expect(Self.evaluate(format) == expected, "\(format)")
    }

    @Test func mixedNumbersCompareByValue() {
        let object: [String: Any] = [
            "int": 3, "double": 3.0, "number": NSNumber(value: 3), "int8": Int8(3), "uint": UInt(3), "float": Float(3),
            "yes": true, "big": UInt64.max, "half": 2.5,
        ]
        for key in ["int", "double", "number", "int8", "uint", "float"] {
            #expect(Self.evaluate("%K == 3", [key], object), "\(key)")
            #expect(Self.evaluate("%K == 3.0", [key], object), "\(key)")
            #expect(Self.evaluate("%K > 2.5 AND %K < 3.5", [key, key], object), "\(key)")
            #expect(Self.evaluate("%K == %@", [key, NSNumber(value: 3.0)], object), "\(key)")
        }
        #expect(Self.evaluate("yes == 1 AND yes == TRUE AND yes > 0", [], object))
        #expect(Self.evaluate("big > 9223372036854775807", [], object))
        #expect(Self.evaluate("half > 2 AND half < 3 AND int > half", [], object))
        #expect(Self.evaluate("int == double AND double == number", [], object))
    }

    @Test func aStringComparedToANumberIsFalseNotACrash() {
        for format in [
            "kMDItemFSName == 3", "kMDItemFSName < 3", "kMDItemFSName > 3", "kMDItemFSSize LIKE '2*'",
            "kMDItemFSSize BEGINSWITH '2'", "kMDItemFSSize CONTAINS '2'", "kMDItemFSSize MATCHES '2.*'",
            "kMDItemFSName BETWEEN {1, 2}", "kMDItemFSCreationDate > 5", "kMDItemURL == '/home'",
            "kMDItemFSSize IN 'abc'",
        ] {
            #expect(!Self.evaluate(format), "\(format)")
        }
        #expect(Self.evaluate("kMDItemFSName != 3"))
    }

    @Test func aMissingAttributeFailsEveryComparisonButNil() {
        for format in [
            "missing == 'x'", "missing != 'x'", "missing < 3", "missing > 3", "missing LIKE '*'", "missing CONTAINS ''",
            "missing BEGINSWITH ''", "missing ENDSWITH ''", "missing MATCHES '.*'", "missing IN {1}",
            "missing BETWEEN {0, 1}", "missing != nil", "'x' == missing", "missing == missing2 AND missing == 1",
        ] {
            #expect(!Self.evaluate(format), "\(format)")
        }
        #expect(Self.evaluate("missing == nil"))
        #expect(Self.evaluate("nil == missing"))
        #expect(Self.evaluate("NOT missing == 'x'"))
    }

    @Test func datesCompareByTime() {
        let created = Date(timeIntervalSince1970: 1_000_000)
        let before = created.addingTimeInterval(-1)
        let after = created.addingTimeInterval(1)
        #expect(Self.evaluate("kMDItemFSCreationDate > %@", [before]))
        #expect(Self.evaluate("kMDItemFSCreationDate < %@", [after]))
        #expect(Self.evaluate("kMDItemFSCreationDate >= %@ AND kMDItemFSCreationDate <= %@", [created, created]))
        #expect(Self.evaluate("kMDItemFSCreationDate BETWEEN %@", [[before, after]]))
        #expect(!Self.evaluate("kMDItemFSCreationDate > %@", [after as NSDate]))
        #expect(Self.evaluate("kMDItemFSCreationDate BETWEEN {%@, %@}", [before, after]))
    }

    // MARK: String matching

    @Test(arguments: [
        ("Report Final.txt", "*.txt", true), ("Report Final.txt", "Report*", true), ("Report Final.txt", "*", true),
        ("Report Final.txt", "*Final*", true), ("Report Final.txt", "Report?Final.txt", true),
        ("Report Final.txt", "Report?Final.tx", false), ("Report Final.txt", "*.doc", false),
        ("Report Final.txt", "report*", false), ("", "*", true), ("", "?", false), ("a", "??", false),
        ("aXbXc", "a*b*c", true), ("abc", "a**c", true), ("mississippi", "*sip*i", true),
        ("a*b", #"a\*b"#, true), ("aXb", #"a\*b"#, false), ("a?b", #"a\?b"#, true), ("aXb", #"a\?b"#, false),
        (#"a\b"#, #"a\\b"#, true), (#"a\"#, #"a\"#, true),
    ])
    func likeWildcardsAndEscapes(_ string: String, _ pattern: String, _ expected: Bool) {
        #expect(Self.evaluate("name LIKE %@", [pattern], ["name": string]) == expected, "\(string) LIKE \(pattern)")
        #expect(PredicateStringMatching.like(string, pattern, []) == expected)
    }

    @Test func caseAndDiacriticModifiersFoldAsApple() {
        let object: [String: Any] = ["name": "Résumé.TXT"]
        #expect(!Self.evaluate("name == 'résumé.txt'", [], object))
        #expect(Self.evaluate("name ==[c] 'résumé.txt'", [], object))
        #expect(!Self.evaluate("name ==[c] 'resume.txt'", [], object))
        #expect(Self.evaluate("name ==[d] 'Resume.TXT'", [], object))
        #expect(!Self.evaluate("name ==[d] 'resume.txt'", [], object))
        #expect(Self.evaluate("name ==[cd] 'resume.txt'", [], object))
        #expect(Self.evaluate("name ==[dc] 'RESUME.txt'", [], object))
        #expect(Self.evaluate("name LIKE[cd] 'resume.*'", [], object))
        #expect(Self.evaluate("name BEGINSWITH[cd] 'RES'", [], object))
        #expect(Self.evaluate("name ENDSWITH[c] '.txt'", [], object))
        #expect(Self.evaluate("name CONTAINS[cd] 'SUM'", [], object))
        #expect(Self.evaluate("name IN[c] {'résumé.txt'}", [], object))
        #expect(Self.evaluate("name !=[cd] 'other'", [], object))
        #expect(!Self.evaluate("name !=[cd] 'RESUME.txt'", [], object))
        #expect(Self.evaluate("name MATCHES[cd] 'resume\\\\..*'", [], object))
        #expect(Self.evaluate("name ==[n] 'Résumé.TXT'", [], object))
        #expect(Self.evaluate("name < [c] 'S'", [], object))
    }

    @Test func matchesIsAFullMatchOfAnICURegularExpression() {
        let object: [String: Any] = ["name": "IMG_0042.jpg", "text": "line\n"]
        #expect(Self.evaluate(#"name MATCHES 'IMG_\d{4}\.jpg'"#, [], object))
        #expect(!Self.evaluate(#"name MATCHES 'IMG_\d{3}'"#, [], object))
        #expect(!Self.evaluate(#"name MATCHES '\d+'"#, [], object))
        #expect(Self.evaluate(#"name MATCHES 'IMG|IMG_0042\.jpg'"#, [], object))
        #expect(!Self.evaluate("name MATCHES 'img.*'", [], object))
        #expect(Self.evaluate("name MATCHES[c] 'img.*'", [], object))
        #expect(!Self.evaluate("text MATCHES 'line'", [], object))
        #expect(Self.evaluate("name MATCHES %@", [".*\\.jpg"], object))
        // A pattern that comes from the object is checked when it is evaluated: an invalid one is false.
        #expect(!Self.evaluate("name MATCHES pattern", [], ["name": "a", "pattern": "(("]))
    }

    // MARK: Logic

    @Test func notBindsTighterThanAndAndAndTighterThanOr() {
        // NOT a AND b  ==  (NOT a) AND b
        #expect(!Self.evaluate("NOT TRUEPREDICATE AND FALSEPREDICATE"))
        #expect(Self.evaluate("NOT FALSEPREDICATE AND TRUEPREDICATE"))
        #expect(!Self.evaluate("NOT (FALSEPREDICATE AND TRUEPREDICATE) AND FALSEPREDICATE"))
        // a OR b AND c  ==  a OR (b AND c)
        #expect(Self.evaluate("TRUEPREDICATE OR TRUEPREDICATE AND FALSEPREDICATE"))
        #expect(!Self.evaluate("(TRUEPREDICATE OR TRUEPREDICATE) AND FALSEPREDICATE"))
        // a AND b OR c  ==  (a AND b) OR c
        #expect(Self.evaluate("FALSEPREDICATE AND FALSEPREDICATE OR TRUEPREDICATE"))
        // NOT a OR b  ==  (NOT a) OR b
        #expect(Self.evaluate("NOT TRUEPREDICATE OR TRUEPREDICATE"))
        #expect(Self.evaluate("!FALSEPREDICATE && !FALSEPREDICATE || FALSEPREDICATE"))
        #expect(Self.evaluate("NOT NOT TRUEPREDICATE"))
        #expect(!Self.evaluate("! ! FALSEPREDICATE"))
    }

    @Test func nestedParentheses() {
        #expect(Self.evaluate("((kMDItemFSSize > 1000) AND ((kMDItemFSName LIKE '*.txt') OR (flag == NO)))"))
        #expect(!Self.evaluate("(((kMDItemFSSize > 1000) AND (NOT (kMDItemFSName LIKE '*.txt' OR flag == NO))))"))
        #expect(Self.evaluate("(((((TRUEPREDICATE)))))"))
        let predicate = NSPredicate(format: "(a == 1 OR b == 2) AND (c == 3 OR NOT (d == 4))")
        #expect(predicate.evaluate(with: ["a": 1, "c": 3, "d": 4]))
        #expect(!predicate.evaluate(with: ["a": 1, "c": 2, "d": 4]))
        #expect(predicate.evaluate(with: ["b": 2, "d": 5]))
    }

    @Test func theTreeOfAFormatIsAsWritten() throws {
        let predicate = NSPredicate(format: "a == 1 OR NOT b == 2 AND c LIKE[cd] %@", "x*")
        guard case .parsed(let parsed) = predicateParseResult(predicate) else {
            Issue.record("not parsed")
            return
        }
        let a = PredicateFormatNode.comparison(
            PredicateFormatComparison(
                left: .keyPath("a"),
                comparator: .equal,
                options: [],
                right: .value(.number(.integer(1)))
            )
        )
        let b = PredicateFormatNode.comparison(
            PredicateFormatComparison(
                left: .keyPath("b"),
                comparator: .equal,
                options: [],
                right: .value(.number(.integer(2)))
            )
        )
        let c = PredicateFormatNode.comparison(
            PredicateFormatComparison(
                left: .keyPath("c"),
                comparator: .like,
                options: [.caseInsensitive, .diacriticInsensitive],
                right: .value(.string("x*"))
            )
        )
        #expect(parsed.root == .or([a, .and([.not(b), c])]))
        #expect(parsed.format == "a == 1 OR NOT b == 2 AND c LIKE[cd] %@")
    }

    // MARK: Objects

    /// An object that gives its attributes as a metadata item will.
    struct Item: PredicateAttributeSource {
        let attributes: [String: Any]

        func predicateValue(forKey key: String) -> Any? { attributes[key] }
    }

    @Test func attributeSourcesAreEvaluatedByKey() {
        let item = Item(attributes: [
            NSMetadataItemFSNameKey: "notes.md", NSMetadataItemFSSizeKey: 12, "nested": ["depth": 2] as [String: Any],
            "child": Item(attributes: ["name": "inner"]),
        ])
        #expect(
            NSPredicate(format: "%K LIKE '*.md' AND %K < 100", NSMetadataItemFSNameKey, NSMetadataItemFSSizeKey)
                .evaluate(with: item)
        )
        #expect(!NSPredicate(format: "%K ENDSWITH '.txt'", NSMetadataItemFSNameKey).evaluate(with: item))
        #expect(NSPredicate(format: "nested.depth == 2 AND child.name == 'inner'").evaluate(with: item))
        #expect(NSPredicate(format: "kMDItemPath == nil").evaluate(with: item))
    }

    @Test func otherObjectsHaveNoAttributes() {
        for object: Any? in [nil, "kMDItemFSName", 3, [1, 2], NSObject()] {
            #expect(NSPredicate(format: "TRUEPREDICATE").evaluate(with: object))
            #expect(NSPredicate(format: "kMDItemFSName == nil").evaluate(with: object))
            #expect(!NSPredicate(format: "kMDItemFSName == 'x'").evaluate(with: object))
            #expect(!NSPredicate(format: "kMDItemFSSize > 0").evaluate(with: object))
        }
        #expect(NSPredicate(format: "a == 1").evaluate(with: NSDictionary(dictionary: ["a": 1])))
        #expect(NSPredicate(format: "a == 1").evaluate(with: ["a": 1] as [String: Int]))
    }

    @Test func compoundPredicatesCombineFormatPredicates() {
        let text = NSPredicate(format: "%K LIKE[c] %@", NSMetadataItemFSNameKey, "*.txt")
        let large = NSPredicate(format: "%K > %d", NSMetadataItemFSSizeKey, 1000)
        #expect(NSCompoundPredicate(andPredicateWithSubpredicates: [text, large]).evaluate(with: Self.file))
        #expect(!NSCompoundPredicate(notPredicateWithSubpredicate: text).evaluate(with: Self.file))
        #expect(
            NSCompoundPredicate(orPredicateWithSubpredicates: [NSPredicate(value: false), large]).evaluate(
                with: Self.file
            )
        )
    }

    @Test func evaluationIsSafeFromManyThreadsAtOnce() {
        // NSPredicate is not Sendable in corelibs; a format predicate's closure is safe to call from any thread.
        nonisolated(unsafe) let predicate = NSPredicate(
            format: "%K LIKE[cd] %@ AND %K BETWEEN {1, 4096}",
            NSMetadataItemFSNameKey,
            "*FINAL*",
            NSMetadataItemFSSizeKey
        )
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 200) { index in
            let object: [String: Any] = [
                NSMetadataItemFSNameKey: index.isMultiple(of: 2) ? "final \(index)" : "draft \(index)",
                NSMetadataItemFSSizeKey: index + 1,
            ]
            if predicate.evaluate(with: object) != index.isMultiple(of: 2) { failures.add() }
        }
        #expect(failures.count == 0)
    }

    final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0

        func add() {
            lock.lock()
            value += 1
            lock.unlock()
        }

        var count: Int {
            lock.lock()
            defer { lock.unlock() }
            return value
        }
    }

    // MARK: Refused formats

    @Test(arguments: [
        ("SUBQUERY(tags, $t, $t == 'a').@count > 0", 0, "SUBQUERY is not supported"),
        ("ANY tags == 'a'", 0, "ANY is not supported"),
        ("big > 1 AND ALL tags == 'a'", 12, "ALL is not supported"),
        ("SOME tags == 'a'", 0, "SOME is not supported"),
        ("NONE tags == 'a'", 0, "NONE is not supported"),
        ("lowercase(name) == 'a'", 0, "function calls are not supported"),
        ("FUNCTION(name, 'foo') == 1", 0, "function calls are not supported"),
        ("name == $value", 8, "variables ($name) are not supported"),
        ("tags.@count > 2", 5, "key-path operators"),
        ("@sum.big > 2", 0, "key-path operators"),
        ("tags[0] == 'a'", 4, "subscripts"),
        ("tags[FIRST] == 'a'", 4, "subscripts"),
        ("FIRST == 1", 0, "FIRST is not supported"),
        ("size == 1", 0, "SIZE is not supported"),
        ("SUBQUERY(tags, $t, $t == 'a').@count > 0 AND $x == 1", 0, "SUBQUERY is not supported"),
        ("a == 1 AND b == $x AND SUBQUERY(t, $t, TRUEPREDICATE).@count > 0", 16, "variables"),
        ("big + 1 > 2", 4, "arithmetic"),
        ("big * 2 > 2", 4, "arithmetic"),
        ("big > 2 - 1", 8, "arithmetic"),
        ("SELF == 'a'", 0, "SELF is not supported"),
        ("kMDItemContentType UTI-CONFORMS-TO 'public.text'", 19, "UTI-CONFORMS-TO is not supported"),
        ("date > CAST('1', 'NSDate')", 7, "CAST is not supported"),
        ("name == 'abc", 8, "unterminated string"),
        ("name == ", 8, "expected a key or a value, found the end of the format"),
        ("name 'a'", 5, "expected a comparison operator"),
        ("name", 4, "expected a comparison operator"),
        ("", 0, "expected a key or a value"),
        ("name == 'a' 'b'", 12, "unexpected string"),
        ("(name == 'a'", 12, "expected \")\""),
        ("name ==[l] 'a'", 8, "unsupported comparison option"),
        ("name ==[c 'a'", 10, "expected \"]\""),
        ("name ~ 'a'", 5, "unexpected character"),
        ("name == 12abc", 8, "unsupported number literal"),
        ("name MATCHES '(('", 13, "invalid regular expression"),
        ("big BETWEEN {1, 2, 3}", 12, "BETWEEN needs two bounds"),
        ("big BETWEEN 3", 12, "BETWEEN needs two bounds"),
        ("big IN 3", 7, "IN needs a collection"),
        ("name == %x", 8, "unsupported format specifier %x"),
        ("name == %s", 8, "unsupported format specifier %s"),
        ("name == %% ", 8, "%% outside quotes"),
        ("name == #", 8, "expected a key name after #"),
        ("AND == 1", 0, "AND is not supported here"),
        ("a == 1 AND", 10, "expected a key or a value"),
        ("a == (1)", 5, "parentheses group predicates only"),
    ])
    func unsupportedFormsAreRefusedWithTheirOffset(_ format: String, _ offset: Int, _ message: String) {
        let error = Self.refusal(format)
        #expect(error?.offset == offset, "\(format): \(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(format): \(String(describing: error))")
        #expect(error?.format == format)
        // The same format through Apple's initialiser: no crash, false for every object, the error reachable.
        let predicate = NSPredicate(format: format)
        #expect(!predicate.evaluate(with: ["name": "a", "tags": ["a"], "big": 2]))
        #expect(
            predicateParseResult(predicate)
                == .invalid(error ?? PredicateFormatError(format: "", offset: 0, message: ""))
        )
    }

    @Test func badArgumentsAreRefusedWithTheirOffset() {
        let cases: [(format: String, arguments: [Any], offset: Int, message: String)] = [
            ("name == %@", [], 8, "no argument for %@"),
            ("%K == 1 AND %K == 2", ["a"], 12, "no argument for %K"),
            ("%K == 1", [3], 0, "%K needs a non-empty string argument"),
            ("%K == 1", [""], 0, "%K needs a non-empty string argument"),
            ("name == %@", [NSObject()], 8, "%@ does not take an argument of type NSObject"),
            ("name == %@", [["k": 1]], 8, "%@ does not take an argument of type Dictionary"),
            ("big == %d", [2.5], 7, "%d needs an integer argument"),
            ("big == %d", ["2"], 7, "%d needs an integer argument"),
            ("big == %f", ["2"], 7, "%f needs a number argument"),
        ]
        for (format, arguments, offset, message) in cases {
            let error = Self.refusal(format, arguments)
            #expect(error?.offset == offset, "\(format): \(String(describing: error))")
            #expect(error?.message.contains(message) == true, "\(format): \(String(describing: error))")
        }
    }

    @Test func nestingIsLimitedNotACrash() {
        let deep = String(repeating: "(", count: 10_000) + "TRUEPREDICATE" + String(repeating: ")", count: 10_000)
        #expect(Self.refusal(deep)?.message.contains("nested more than") == true)
        #expect(Self.refusal(String(repeating: "NOT ", count: 10_000) + "TRUEPREDICATE")?.offset == 400)
        #expect(Self.refusal(String(repeating: "{", count: 1_000) + "}")?.offset == 100)
        let fine = String(repeating: "(", count: 50) + "TRUEPREDICATE" + String(repeating: ")", count: 50)
        #expect(Self.evaluate(fine))
        // A long chain is one level, however long.
        let chain = Array(repeating: "a == 1", count: 20_000).joined(separator: " AND ")
        #expect(Self.evaluate(chain, [], ["a": 1]))
    }

    @Test func theErrorDescriptionNamesTheOffsetAndMarksIt() throws {
        let error = try #require(Self.refusal("big > 3 AND SUBQUERY(x, $y, TRUEPREDICATE)"))
        #expect(error.offset == 12)
        #expect(
            error.description
                == "predicate format error at offset 12: SUBQUERY is not supported in "
                + "\"big > 3 AND \u{2192}SUBQUERY(x, $y, TRUEPREDICATE)\""
        )
    }

    @Test func validatedThrowsOrReturnsAWorkingPredicate() throws {
        let predicate = try NSPredicate.validated(format: "%K ENDSWITH %@", NSMetadataItemFSNameKey, ".txt")
        #expect(predicate.evaluate(with: Self.file))
        let listed = try NSPredicate.validated(format: "%K > %@", argumentArray: [NSMetadataItemFSSizeKey, 1])
        #expect(listed.evaluate(with: Self.file))
        #expect(throws: PredicateFormatError.self) {
            try NSPredicate.validated(format: "ANY x == 1", argumentArray: nil)
        }
    }

    // MARK: The probe

    @Test func theProbeTellsFormatPredicatesFromOpaqueOnes() {
        let format = NSPredicate(format: "%K == %@", "name", "a")
        guard case .parsed(let parsed) = predicateParseResult(format) else {
            Issue.record("a format predicate was not recognised")
            return
        }
        #expect(
            parsed.root
                == .comparison(
                    PredicateFormatComparison(
                        left: .keyPath("name"),
                        comparator: .equal,
                        options: [],
                        right: .value(.string("a"))
                    )
                )
        )
        let block = NSPredicate { _, _ in true }
        #expect(predicateParseResult(block) == .opaque)
        #expect(predicateParseResult(NSPredicate(value: true)) == .opaque)
        #expect(predicateParseResult(NSCompoundPredicate(andPredicateWithSubpredicates: [format])) == .opaque)
        // A block that evaluates a format predicate with the object it was given is still the app's own block.
        let wrapping = NSPredicate { object, bindings in format.evaluate(with: object, substitutionVariables: bindings)
        }
        #expect(predicateParseResult(wrapping) == .opaque)
        #expect(predicateParseResult(wrapping, sample: ["name": "a"]) == .opaque)
    }

    @Test func aSampleObjectCarriesTheProbeInTheBindings() {
        let format = NSPredicate(format: "name == 'a'")
        guard case .parsed = predicateParseResult(format, sample: ["name": "a"]) else {
            Issue.record("a format predicate was not recognised with a sample")
            return
        }
        // A block that force-casts its object is given the sample, never the probe.
        let casting = NSPredicate { object, _ in (object as! [String: Any])["name"] != nil }
        #expect(predicateParseResult(casting, sample: ["name": "a"]) == .opaque)
        #expect(format.evaluate(with: ["name": "a"], substitutionVariables: ["other": 1]))
    }
}
