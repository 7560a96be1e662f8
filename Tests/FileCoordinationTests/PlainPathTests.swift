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

    // MARK: The path read from a URL's string (issue 39)

    /// Where `plainFilePath(of:)` answers, it answers as `URL.path` does; it leaves to the URL what its string alone
    /// cannot tell (an escape, a query, a host, a base URL, another scheme).
    @Test(
        arguments: [
            ("file:///tmp/a.txt", "/tmp/a.txt"), ("FILE:///tmp/a", "/tmp/a"), ("File:///t/x", "/t/x"),
            ("file:///tmp/a%20b", nil), ("file:///tmp/a?b", nil), ("file:///tmp/a#b", nil),
            ("file://localhost/tmp/a", nil), ("file:/tmp/a", nil), ("http:///tmp/a", nil), ("file:///", nil),
            ("files:///tmp/a", nil),
        ] as [(String, String?)]
    )
    func aURLsPathIsReadFromItsStringOnlyWhenThatTellsIt(_ string: String, _ expected: String?) throws {
        let url = try #require(URL(string: string))
        let plain = URLMapping.plainFilePath(of: url)
        #expect(plain?.path == expected, "\(string)")
        if let plain { #expect(plain.path == url.path, "\(string): URL.path says \(url.path)") }
    }

    @Test func aURLMadeFromAPathIsReadFromItsString() throws {
        let url = URL(fileURLWithPath: "/tmp/dir").appendingPathComponent("file.txt")
        #expect(URLMapping.plainFilePath(of: url)?.path == "/tmp/dir/file.txt")
        #expect(URLMapping.plainFilePath(of: URL(fileURLWithPath: "/tmp/a b")) == nil, "an escaped space")
        let relative = URL(fileURLWithPath: "a.txt", relativeTo: URL(fileURLWithPath: "/tmp/"))
        #expect(URLMapping.plainFilePath(of: relative) == nil, "a URL with a base")
    }

    /// A path that is the tail of a longer string is the same key as the path on its own (the file cache is asked
    /// with the one and filled with the other), and hands `statx` its own bytes.
    @Test func aPathsBytesInALongerStringAreThePath() throws {
        let tail = PathBytes("file:///tmp/a/é.txt", droppingFirst: 7)
        let own = PathBytes("/tmp/a/é.txt")
        #expect(tail == own && own == tail)
        #expect(Set([tail, own]).count == 1)
        #expect(tail.count == own.count && tail.path == own.path)
        #expect(tail.withCString { String(cString: $0) } == "/tmp/a/é.txt")
        #expect(PathBytes("file:///tmp/a/e.txt", droppingFirst: 7) != own)
    }

    // MARK: A cached parent replaced by a link

    /// The caches keep a path's key while its parent, looked up as spelled, is the same directory. A folder renamed
    /// and a link to it put at its old name reach the same directory, but every name under the old one now has the
    /// new one's key: the caches must not answer with the old key (they followed the link, and did, before this
    /// test). A file still met its other name's claims by identity; a new item, with none, did not.
    @Test func aParentReplacedByALinkToItselfRenamedIsWalkedAgain() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let root = dir.url.path
        try FileManager.default.createDirectory(atPath: root + "/d", withIntermediateDirectories: true)
        let file = try dir.file("d/f")
        let canonicalizer = PathCanonicalizer.shared
        for _ in 0..<2 {  // The second call is answered from the caches.
            _ = try canonicalizer.canonicalize(file.path, followingFinalLink: true)
            _ = try canonicalizer.canonicalize(root + "/d/new", followingFinalLink: true)
        }
        try FileManager.default.moveItem(atPath: root + "/d", toPath: root + "/e")
        try FileManager.default.createSymbolicLink(atPath: root + "/d", withDestinationPath: "e")
        let target = try canonicalizer.canonicalize(root + "/e", followingFinalLink: true).key
        let fileKey = try canonicalizer.canonicalize(file.path, followingFinalLink: true).key
        let newKey = try canonicalizer.canonicalize(root + "/d/new", followingFinalLink: true).key
        #expect(fileKey == target.appending(Array("f".utf8)), "the file cache kept the old key: \(fileKey)")
        #expect(newKey == target.appending(Array("new".utf8)), "the parent cache kept the old key: \(newKey)")
    }

    /// A folder the parent cache does not hold is walked from the root, even when the folder above it is cached. That
    /// one's check (a `statx` of it as spelled) cannot see an ancestor above it renamed and replaced by a link to its
    /// new place: its own items keep the old key until the entry goes (docs/ARCHITECTURE.md §8). A walk that resumed
    /// from it (tried and reverted in stop 61) gave the old key to every new folder below it too, and cached it there.
    @Test func aNewFolderUnderAStaleCachedOneIsWalkedFromTheRoot() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let root = dir.url.path
        try FileManager.default.createDirectory(atPath: root + "/a/b", withIntermediateDirectories: true)
        let canonicalizer = PathCanonicalizer.shared
        _ = try canonicalizer.canonicalize(root + "/a/b/f", followingFinalLink: true)  // `a/b` cached as a parent.
        try FileManager.default.moveItem(atPath: root + "/a", toPath: root + "/z")
        try FileManager.default.createSymbolicLink(atPath: root + "/a", withDestinationPath: "z")
        try FileManager.default.createDirectory(atPath: root + "/z/b/new", withIntermediateDirectories: true)
        let target = try canonicalizer.canonicalize(root + "/z/b/new", followingFinalLink: true).key
        let key = try canonicalizer.canonicalize(root + "/a/b/new/x", followingFinalLink: true).key
        #expect(key == target.appending(Array("x".utf8)), "the stale folder's key spread to a new one: \(key)")
    }

    /// A URL whose path the leased claim asks of the URL (an escape in it) is decoded as `URL.path` decodes it, the
    /// spelling the file system is handed: `%2F` is no slash. It claimed `a/b` for the file `a%2Fb` before.
    @Test(arguments: [
        ("file:///tmp/x/a%2Fb", "/tmp/x/a%2Fb"), ("file:///tmp/x/a%20b", "/tmp/x/a b"),
        ("file:///tmp/x/a%00b", "/tmp/x/a%00b"), ("file:///tmp/x/dir%20/", "/tmp/x/dir%20/"),
    ])
    func anEscapedPathIsTheOneTheFileSystemIsHanded(_ string: String, _ expected: String) throws {
        let url = try #require(URL(string: string))
        #expect(NSFileCoordinator.askedPath(of: url) == expected)
        if !expected.hasSuffix("/") {
            #expect(url.withUnsafeFileSystemRepresentation { String(cString: $0!) } == expected)
        }
    }
}
