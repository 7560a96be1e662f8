import FCCore
import Testing

/// The components of a path, as strings.
private func names(_ path: ItemPath) -> [String] {
    path.components.map { String(decoding: $0, as: UTF8.self) }
}

@Suite("ItemPath: canonical absolute paths (docs/SEMANTICS.md §4)")
struct ItemPathTests {
    // MARK: Lexical normalisation

    @Test(
        "lexical normalisation",
        arguments: [
            ("/", [String]()),
            ("/a/b", ["a", "b"]),
            ("/a/./b", ["a", "b"]),
            ("/./a/.", ["a"]),
            ("/a/../b", ["b"]),
            ("/a/b/..", ["a"]),
            ("/a/b/../../c/./d/..", ["c"]),
            ("//a///b", ["a", "b"]),
            ("/a/b/", ["a", "b"]),
            ("/a/b//", ["a", "b"]),
            ("////", [String]()),
            ("/...", ["..."]),
            ("/a/..b/.c/c.", ["a", "..b", ".c", "c."]),
        ]
    )
    func normalises(_ input: String, _ expected: [String]) throws {
        let parsed = try ItemPath(absolute: input)
        #expect(names(parsed) == expected)
        #expect(parsed.depth == expected.count)
        #expect(parsed.isRoot == expected.isEmpty)
        #expect(parsed.description == "/" + expected.joined(separator: "/"))
    }

    @Test(
        "`..` at the root stays at the root",
        arguments: ["/..", "/../..", "/../", "/./..", "/a/../..", "/a/../../.."]
    )
    func dotDotAtRoot(_ input: String) throws {
        let parsed = try ItemPath(absolute: input)
        #expect(parsed == .root)
        #expect(parsed.isRoot)
        #expect(parsed.bytes == Array("/".utf8))
    }

    @Test func dotDotAtRootThenDescends() throws {
        #expect(names(try ItemPath(absolute: "/../a/b")) == ["a", "b"])
        #expect(names(try ItemPath(absolute: "/a/../../b")) == ["b"])
    }

    @Test func spellingsOfOneItemAreEqualAndHashAlike() throws {
        let spellings = ["/d/f.txt", "/d//f.txt", "/d/./f.txt", "/d/x/../f.txt", "//d/f.txt/", "/../d/f.txt"]
        let parsed = try spellings.map { try ItemPath(absolute: $0) }
        #expect(Set(parsed).count == 1)
        #expect(parsed.allSatisfy { $0 == path("/d/f.txt") })
        #expect(parsed.allSatisfy { $0.bytes == Array("/d/f.txt".utf8) })
    }

    @Test func bytesAndStringInitialisersAgree() throws {
        #expect(try ItemPath(absolute: Array("/a/./b/".utf8)) == ItemPath(absolute: "/a/./b/"))
        #expect(try ItemPath(absolute: "/a/b") == ItemPath(components: [Array("a".utf8), Array("b".utf8)]))
        // Bytes without contiguous storage take the copying path, with the same result and the same errors.
        let scattered = "/a/./b/../c//".utf8.lazy.map { $0 }
        #expect(try ItemPath(absolute: scattered) == ItemPath(absolute: "/a/c"))
        #expect(throws: ItemPathError.containsNUL) { try ItemPath(absolute: "/a\0b".utf8.lazy.map { $0 }) }
    }

    @Test func byteCountIsTheLengthOfTheSpelledPath() throws {
        for text in ["/", "/a", "/a/bc/def", "/d/f.txt/"] {
            let parsed = try ItemPath(absolute: text)
            #expect(parsed.byteCount == parsed.bytes.count, "\(text)")
        }
    }

    @Test func copyBytesWritesTheSpelledPath() throws {
        for text in ["/", "/a", "/a/bc/def"] {
            let parsed = try ItemPath(absolute: text)
            let copied = [UInt8](unsafeUninitializedCapacity: parsed.byteCount) { buffer, count in
                parsed.copyBytes(into: buffer)
                count = parsed.byteCount
            }
            #expect(copied == parsed.bytes, "\(text)")
        }
    }

    // MARK: Rejected paths

    @Test func emptyPathIsRejected() {
        #expect(throws: ItemPathError.empty) { try ItemPath(absolute: "") }
        #expect(throws: ItemPathError.empty) { try ItemPath(absolute: [UInt8]()) }
    }

    @Test("relative paths are rejected", arguments: ["a", "a/b", "./a", ".", "..", "../a", " /a", "~/a", "file:///a"])
    func relativePathIsRejected(_ input: String) {
        #expect(throws: ItemPathError.relative) { try ItemPath(absolute: input) }
    }

    @Test(
        "a NUL byte anywhere is rejected",
        arguments: ["/a\u{0}b", "/\u{0}", "/a/b\u{0}", "/a/\u{0}/..", "/\u{0}/.."]
    )
    func nulIsRejected(_ input: String) {
        #expect(throws: ItemPathError.containsNUL) { try ItemPath(absolute: input) }
    }

    @Test func errorsDescribeThemselves() {
        #expect(ItemPathError.empty.description == "the path is empty")
        #expect(ItemPathError.relative.description.contains("relative"))
        #expect(ItemPathError.containsNUL.description.contains("NUL"))
    }

    // MARK: Raw bytes

    @Test func unicodeNormalisationFormsAreDifferentPaths() throws {
        // "é" precomposed (NFC, C3 A9) and decomposed (NFD, 65 CC 81). Swift's String calls them equal; Linux does not.
        let nfc = "/d/caf\u{E9}.txt"
        let nfd = "/d/cafe\u{301}.txt"
        #expect(nfc == nfd)  // The premise: canonical equivalence in String.
        let a = try ItemPath(absolute: nfc)
        let b = try ItemPath(absolute: nfd)
        #expect(a != b)
        #expect(Set([a, b]).count == 2)
        #expect(a.lastComponent == [0x63, 0x61, 0x66, 0xC3, 0xA9, 0x2E, 0x74, 0x78, 0x74])
        #expect(b.lastComponent == [0x63, 0x61, 0x66, 0x65, 0xCC, 0x81, 0x2E, 0x74, 0x78, 0x74])
        // Ordered by bytes: "e" (0x65) sorts before 0xC3.
        #expect(b < a)
        #expect(!(a < b))
    }

    @Test func namesAreCaseSensitive() {
        #expect(path("/d/My Text") != path("/d/my text"))
    }

    @Test func nonUTF8BytesAreKept() throws {
        let parsed = try ItemPath(absolute: [0x2F, 0x61, 0x2F, 0xFF, 0xFE])
        #expect(parsed.components == [[0x61], [0xFF, 0xFE]])
        #expect(parsed.bytes == [0x2F, 0x61, 0x2F, 0xFF, 0xFE])
        #expect(parsed.description == "/a/\u{FFFD}\u{FFFD}")
        #expect(parsed != path("/a/\u{FFFD}\u{FFFD}"))
    }

    // MARK: Ordering

    @Test func orderingIsByComponentsThenLength() {
        #expect(path("/a") < path("/a/b"))
        #expect(path("/a/b") < path("/b"))
        #expect(path("/a/z") < path("/b"))
        #expect(path("/a/b") < path("/a-b"))  // Component "a" < "a-b"; a string compare would say "/a-b" < "/a/b".
        #expect(path("/a") < path("/aa"))
        #expect(path("/Z") < path("/a"))  // Bytes, not locale.
        #expect(ItemPath.root < path("/a"))
        #expect(!(path("/a") < path("/a")))
        #expect(!(path("/a/b") < path("/a")))
    }

    @Test func sortingGivesTheCanonicalOrder() {
        let shuffled = ["/b", "/a/b/c", "/a-b", "/", "/a", "/a/b", "/B", "/a/c"].map(path)
        let sorted = ["/", "/B", "/a", "/a/b", "/a/b/c", "/a/c", "/a-b", "/b"].map(path)
        #expect(shuffled.sorted() == sorted)
        #expect(shuffled.reversed().sorted() == sorted)
    }

    // MARK: Relations and derived paths

    @Test func relocatedMovesTheItemAndItsContents() {
        let from = path("/d/a")
        let to = path("/e/b")
        #expect(path("/d/a").relocated(from: from, to: to) == path("/e/b"))
        #expect(path("/d/a/x").relocated(from: from, to: to) == path("/e/b/x"))
        #expect(path("/d/a/x/y").relocated(from: from, to: to) == path("/e/b/x/y"))
        #expect(path("/d/ab").relocated(from: from, to: to) == nil)  // A name prefix is not a path prefix.
        #expect(path("/d").relocated(from: from, to: to) == nil)
        #expect(path("/e/b").relocated(from: from, to: to) == nil)
        #expect(path("/d/a/x").relocated(from: from, to: .root) == path("/x"))
        #expect(path("/x/y").relocated(from: .root, to: path("/r")) == path("/r/x/y"))
        #expect(path("/d/a/x").relocated(from: from, to: path("/d/a/sub")) == path("/d/a/sub/x"))
    }

    @Test(
        "pathExtension",
        arguments: [
            ("/d/f.txt", "txt" as String?),
            ("/d/a.tar.gz", "gz"),
            ("/d/Doc.rtfd", "rtfd"),
            ("/d/Doc.rtfd/f", nil),
            ("/d/f", nil),
            ("/d/.hidden", nil),
            ("/d/.x.y", "y"),
            ("/d/f.", nil),
            ("/d/..f", "f"),
            ("/", nil),
        ]
    )
    func pathExtension(_ input: String, _ expected: String?) {
        #expect(path(input).pathExtension == expected.map { Array($0.utf8) })
    }

    @Test func descendants() {
        #expect(path("/a/b").isDescendant(of: path("/a")))
        #expect(path("/a/b/c").isDescendant(of: path("/a")))
        #expect(path("/a").isDescendant(of: .root))
        #expect(!path("/a").isDescendant(of: path("/a")))
        #expect(!ItemPath.root.isDescendant(of: .root))
        #expect(!path("/ab").isDescendant(of: path("/a")))
        #expect(!path("/a").isDescendant(of: path("/a/b")))
        #expect(!path("/b/a").isDescendant(of: path("/a")))
        #expect(path("/a").isEqualOrDescendant(of: path("/a")))
        #expect(path("/a/b").isEqualOrDescendant(of: path("/a")))
        #expect(!path("/ab").isEqualOrDescendant(of: path("/a")))
    }

    @Test func parentAppendingAndPrefix() {
        #expect(path("/a/b").parent == path("/a"))
        #expect(path("/a").parent == .root)
        #expect(ItemPath.root.parent == nil)
        #expect(path("/a").appending(Array("b".utf8)) == path("/a/b"))
        #expect(path("/a/b/c").prefix(2) == path("/a/b"))
        #expect(path("/a/b/c").prefix(0) == .root)
        #expect(path("/a/b").lastComponent == Array("b".utf8))
        #expect(ItemPath.root.lastComponent == nil)
    }

    // MARK: Hashing

    /// The hash takes each component's bytes at once (not the synthesised byte-at-a-time one): equal paths hash
    /// alike, and paths that split the same bytes differently are told apart as sets see them.
    @Test func equalPathsHashAlikeAndSplitsOfTheSameBytesDiffer() throws {
        let a = try ItemPath(absolute: Array("/x/ab/c".utf8))
        let b = try ItemPath(absolute: Array("/x/a/bc".utf8))
        let c = try ItemPath(absolute: Array("/x/ab/./c".utf8))
        #expect(a == c && a.hashValue == c.hashValue)
        #expect(a != b && a.hashValue != b.hashValue)
        #expect(Set([a, b, c]).count == 2)
        #expect(ItemPath.root.hashValue == ItemPath(components: []).hashValue)
    }
}
