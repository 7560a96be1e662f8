import FCCore
import Testing

/// Paths for people (dumps, reports): two different paths never print the same (issue 11.7).
@Suite struct EscapedPathTests {
    private func path(_ bytes: [UInt8]) throws -> ItemPath {
        try ItemPath(absolute: Array("/d/".utf8) + bytes)
    }

    @Test func undecodableBytesAreEscapedAndStayApart() throws {
        let ff = try path(Array("bad".utf8) + [0xFF])
        let fe = try path(Array("bad".utf8) + [0xFE])
        #expect(ff.escapedDescription == "/d/bad\\xff")
        #expect(fe.escapedDescription == "/d/bad\\xfe")
        #expect(ff.description == fe.description, "the lossy description is why this exists")
    }

    @Test func controlCharactersAndBackslashesAreEscaped() throws {
        #expect(try path(Array("a\nb\u{1}c".utf8)).escapedDescription == "/d/a\\x0ab\\x01c")
        #expect(try path(Array("tab\there".utf8)).escapedDescription == "/d/tab\\x09here")
        #expect(try path([0x7F]).escapedDescription == "/d/\\x7f")
        // A name that spells an escape is not the escaped byte.
        #expect(try path(Array("bad\\xff".utf8)).escapedDescription == "/d/bad\\\\xff")
        #expect(try path([0xC2, 0x85]).escapedDescription == "/d/\\u{85}")
        #expect(try path(Array("\u{2028}".utf8)).escapedDescription == "/d/\\u{2028}")
    }

    @Test func validUTF8IsKeptAsItIs() throws {
        #expect(try path(Array("Résumé 📄.txt".utf8)).escapedDescription == "/d/Résumé 📄.txt")
        // NFC and NFD spellings are different names, and print differently.
        let nfc = try path(Array("\u{E9}".utf8))
        let nfd = try path(Array("e\u{301}".utf8))
        #expect(nfc.escapedDescription.utf8.count != nfd.escapedDescription.utf8.count)
        #expect(ItemPath.root.escapedDescription == "/")
    }

    @Test func overlongAndSurrogateSequencesAreEscaped() throws {
        #expect(try path([0xC0, 0xAF]).escapedDescription == "/d/\\xc0\\xaf")
        #expect(try path([0xED, 0xA0, 0x80]).escapedDescription == "/d/\\xed\\xa0\\x80")
        #expect(try path([0xE2, 0x82]).escapedDescription == "/d/\\xe2\\x82")
    }
}
