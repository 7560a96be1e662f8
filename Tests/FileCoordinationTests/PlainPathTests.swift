import FCCore
import Foundation
import Testing

@testable import FileCoordination

/// The canonicaliser's cached way takes only plain paths (`PathCanonicalizer.isPlain`, a byte scan since issue 23's
/// profile): every other path takes the full walk, so both ways must agree on which paths are plain.
@Suite struct PlainPathTests {
    @Test(arguments: [
        ("/a", true), ("/a/b.txt", true), ("/a/.hidden/b", true), ("/a/.../b", true), ("/a./b", true),
        ("/a/é", true), ("/é/b", true), ("/a/b\u{301}", true), ("/a/\u{301}b", true),
        ("/a//b", false), ("/a/./b", false), ("/a/../b", false), ("/a/.", false), ("/a/..", false), ("/.", false),
    ])
    func aPathIsPlainWithoutEmptyOrDotComponents(_ path: String, _ plain: Bool) {
        #expect(PathCanonicalizer.isPlain(path.utf8[...]) == plain, "\(path)")
    }

    /// A component that starts with a combining mark: the walk splits at the slash's byte (a split at `Character`s
    /// keeps the mark with the slash), so the key has the name as its own component, and the cached answer is the
    /// walk's.
    @Test func aComponentStartingWithACombiningMarkCanonicalisesAlikeTwice() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let name = "\u{301}x"
        let file = try dir.file(name)
        let first = try PathCanonicalizer.shared.canonicalize(file.path, followingFinalLink: true)
        let second = try PathCanonicalizer.shared.canonicalize(file.path, followingFinalLink: true)
        #expect(first.key == second.key && first.identity == second.identity)
        #expect(first.identity != nil, "the file was not found through its own path")
        #expect(first.key.lastComponent == Array(name.utf8))
    }

    /// A `String` may hold a NUL byte, which no file name can: the canonicaliser refuses it with its own error.
    @Test func aPathWithANULByteIsRefused() {
        #expect(throws: CanonicalizationError.containsNUL) {
            try PathCanonicalizer.shared.canonicalize("/tmp/a\u{0}b", followingFinalLink: true)
        }
    }
}
