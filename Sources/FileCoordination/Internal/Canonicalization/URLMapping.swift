import FCCore
import Foundation

/// Between the URLs apps use and the canonical paths the arbiter compares (docs/SEMANTICS.md §4).
///
/// The canonical form is made by ``PathCanonicalizer`` (Internal/Canonicalization), in the caller's thread, with
/// FCSystem's syscalls and no Foundation URL objects; URLs handed back are respelled by ``Respelling``.
enum URLMapping {
    /// The canonical path of a `file:` URL: `.`, `..`, repeated and trailing slashes removed, the symbolic links of
    /// its existing components resolved (the last one only when `followingFinalLink`), names in case-insensitive
    /// directories case-folded.
    ///
    /// - Throws: ``FileCoordinationError`` with `.unsupportedURL` for another scheme or a path that stays relative,
    ///   `.unresolvablePath` for a symbolic link cycle or more than 40 links (`ELOOP`).
    static func canonicalPath(_ url: URL, followingFinalLink: Bool = true) throws(FileCoordinationError) -> ItemPath {
        try canonical(url, followingFinalLink: followingFinalLink).key
    }

    /// The canonicaliser's full answer for a `file:` URL: its canonical path (``CanonicalPath/key``), its spelling
    /// on disk, whether a final link was followed, its identity. See ``canonicalPath(_:followingFinalLink:)``.
    static func canonical(
        _ url: URL,
        followingFinalLink: Bool
    ) throws(FileCoordinationError) -> CanonicalPath {
        guard url.isFileURL else {
            throw FileCoordinationError(
                .unsupportedURL,
                "Only file: URLs can be coordinated, not \(url.absoluteString). Make the URL with "
                    + "URL(fileURLWithPath:).",
                url: url
            )
        }
        // Read from the URL's string when it can be (``plainFilePath(of:)``), and it has no trailing slash (`path`
        // drops one, and so must this).
        if let plain = plainFilePath(of: url), plain.withBytes({ $0.last != UInt8(ascii: "/") }) {
            return try canonical(plain, of: url, followingFinalLink: followingFinalLink)
        }
        // A relative path (`file:docs/a.txt`) names no item by itself, so it is refused. (`URL(fileURLWithPath:)`
        // with a relative path has the current directory as base: its absolute URL is absolute.)
        let given = url.baseURL == nil ? url.path : url.absoluteURL.path
        guard given.hasPrefix("/") else {
            throw FileCoordinationError(
                .unsupportedURL,
                "The path \(url.path) is relative; coordinate an absolute file: URL, made with "
                    + "URL(fileURLWithPath:).",
                url: url
            )
        }
        return try canonical(PathBytes(given), of: url, followingFinalLink: followingFinalLink)
    }

    /// The absolute path of `url` read from its string (`file:///a/b` gives `/a/b`), when that string alone tells it:
    /// no base URL, the scheme `file` (any case), an empty host, and no `%`, `?` or `#`, so that the path as written
    /// is the path decoded. `nil` otherwise: the caller asks the URL (`isFileURL`, `path`), which costs about 1,400
    /// instructions more (issue 39: a fifth of a leased read), spent only for the URLs this cannot read.
    static func plainFilePath(of url: URL) -> PathBytes? {
        guard url.baseURL == nil else { return nil }
        let string = url.relativeString
        let plain: Bool? = string.utf8.withContiguousStorageIfAvailable { bytes in
            // "file://" then the path's "/": an empty host.
            guard bytes.count > 8, bytes[4] == UInt8(ascii: ":"), bytes[5] == UInt8(ascii: "/"),
                bytes[6] == UInt8(ascii: "/"), bytes[7] == UInt8(ascii: "/"),
                bytes[0] | 0x20 == UInt8(ascii: "f"), bytes[1] | 0x20 == UInt8(ascii: "i"),
                bytes[2] | 0x20 == UInt8(ascii: "l"), bytes[3] | 0x20 == UInt8(ascii: "e")
            else { return false }
            for byte in bytes[7...]
            where byte == UInt8(ascii: "%") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") {
                return false
            }
            return true
        }
        guard plain == true else { return nil }
        return PathBytes(string, droppingFirst: 7)
    }

    /// The canonicaliser's full answer for `given`, the absolute path of the `file:` URL `url` (named in errors).
    static func canonical(
        _ given: PathBytes,
        of url: URL,
        followingFinalLink: Bool
    ) throws(FileCoordinationError) -> CanonicalPath {
        let canonicalizer = PathCanonicalizer.shared
        let canonical: CanonicalPath
        do {
            canonical = try canonicalizer.canonicalize(given, followingFinalLink: followingFinalLink)
        } catch {
            let given = given.path
            switch error {
            case .tooManyLinks(let links):
                throw FileCoordinationError(
                    .unresolvablePath,
                    "The path \(given) cannot be resolved: its symbolic links form a cycle or a chain longer than "
                        + "\(PathCanonicalizer.maximumLinks) links (ELOOP, after \(links) links). The call was not "
                        + "coordinated and its accessor did not run; fix or remove the links.",
                    url: url
                )
            case .relative:
                throw FileCoordinationError(
                    .unsupportedURL,
                    "The path \(given) is relative; coordinate an absolute file: URL.",
                    url: url
                )
            case .containsNUL:
                throw FileCoordinationError(
                    .unsupportedURL,
                    "The path \(url.path) contains a NUL byte, which no file name can hold; coordinate an absolute "
                        + "file: URL.",
                    url: url
                )
            }
        }
        // A name spelled as its key (the common case) needs no record, whatever the folders' case rules.
        // (The case rules first: with no case-insensitive folder, the usual machine, the bytes are not compared.)
        if canonicalizer.caseSensitivity.anyInsensitive,
            !given.withBytes({ canonical.key.bytes.elementsEqual($0) })
        {
            SpellingBook.shared.record(given.path, for: canonical.key)
        }
        return canonical
    }

    /// Remembers how this process spelled an item it renamed in place (a case-only rename) before the rename.
    static func rememberRename(of path: ItemPath, spelledAs old: URL) {
        SpellingBook.renames.record(old.path, for: path)
    }

    /// A file URL for a canonical path, spelled as this process spelled it (``Respelling``).
    static func url(_ path: ItemPath, isDirectory: Bool? = nil, role: Respelling.Role = .item) -> URL {
        let spelling = Respelling.spelling(of: path, role: role)
        if let isDirectory { return URL(fileURLWithPath: spelling, isDirectory: isDirectory) }
        return URL(fileURLWithPath: spelling)
    }

    /// A file URL for a canonical path delivered to `presenter`, whose canonical path is `presenterPath`: the part
    /// of the path its own URL covers is spelled as that URL.
    static func url(_ path: ItemPath, for presenterURL: URL?, presenterPath: ItemPath?, role: Respelling.Role) -> URL {
        URL(
            fileURLWithPath: Respelling.spelling(
                of: path,
                role: role,
                presenterURL: presenterURL?.path,
                presenterPath: presenterPath
            )
        )
    }

    /// The URL to hand back for `path`: the caller's own spelling when it still names that path, else a new URL.
    static func url(for path: ItemPath, spelledAs original: URL, canonical: ItemPath) -> URL {
        path == canonical ? original : url(path)
    }
}
