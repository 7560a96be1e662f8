import Foundation
import Testing

@testable import FileCoordination

/// The canonicaliser's cached way takes only plain paths (`PathCanonicalizer.isPlain`, a byte scan since issue 23's
/// profile): every other path takes the full walk, so both ways must agree on which paths are plain.
@Suite struct PlainPathTests {
    @Test(arguments: [
        ("/a", true), ("/a/b.txt", true), ("/a/.hidden/b", true), ("/a/.../b", true), ("/a./b", true),
        ("/a/é", false), ("/é/b", false), ("/a/b\u{301}", true),
        ("/a//b", false), ("/a/./b", false), ("/a/../b", false), ("/a/.", false), ("/a/..", false), ("/.", false),
    ])
    func aPathIsPlainWithoutEmptyDotOrNonASCIIInitialComponents(_ path: String, _ plain: Bool) {
        #expect(PathCanonicalizer.isPlain(path.utf8[...]) == plain, "\(path)")
    }

    /// A component that starts with a combining mark: the walk keeps the mark with the slash before it, so such a
    /// path takes the walk every time, and the second (cached) answer is the first.
    @Test func aComponentStartingWithACombiningMarkCanonicalisesAlikeTwice() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let name = "\u{301}x"
        let file = try dir.file(name)
        let first = try PathCanonicalizer.shared.canonicalize(file.path, followingFinalLink: true)
        let second = try PathCanonicalizer.shared.canonicalize(file.path, followingFinalLink: true)
        #expect(first.key == second.key && first.identity == second.identity)
        #expect(first.identity != nil, "the file was not found through its own path")
    }
}
