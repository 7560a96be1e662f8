import FCCore
import Foundation

/// Between the URLs apps use and the canonical paths the arbiter compares (SEMANTICS.md §4).
enum URLMapping {
    /// The canonical path of a `file:` URL: standardised (`.`, `..`, repeated and trailing slashes) and with the
    /// symbolic links of its existing components resolved.
    ///
    /// - Throws: ``FileCoordinationError`` with `.unsupportedURL` for another scheme or a path that stays relative.
    static func canonicalPath(_ url: URL) throws(FileCoordinationError) -> ItemPath {
        guard url.isFileURL else {
            throw FileCoordinationError(
                .unsupportedURL,
                "Only file: URLs can be coordinated, not \(url.absoluteString). Make the URL with "
                    + "URL(fileURLWithPath:).",
                url: url
            )
        }
        // swift-corelibs-foundation's `standardizedFileURL` resolves a relative path (`file:docs/a.txt`) against the
        // current directory; such a URL names no item by itself, so it is refused before standardising.
        // (`URL(fileURLWithPath:)` with a relative path has the current directory as base: its absolute URL is.)
        guard url.absoluteURL.path.hasPrefix("/") else {
            throw FileCoordinationError(
                .unsupportedURL,
                "The path \(url.path) is relative; coordinate an absolute file: URL, made with "
                    + "URL(fileURLWithPath:).",
                url: url
            )
        }
        let path = resolvingSymlinksInExistingComponents(url.standardizedFileURL.path)
        do {
            return try ItemPath(absolute: path)
        } catch {
            throw FileCoordinationError(
                .unsupportedURL,
                "The path \(url.path) is \(error); coordinate an absolute file: URL.",
                url: url
            )
        }
    }

    /// `path` (absolute, standardised) with the symbolic links of its longest existing prefix resolved and the
    /// components that do not exist (yet, or any more) kept as they are.
    ///
    /// swift-corelibs-foundation's `resolvingSymlinksInPath()` resolves nothing when the last component does not
    /// exist, so a new file (or a moved one's old URL) spelled through a link would name another item than the same
    /// file once it exists.
    static func resolvingSymlinksInExistingComponents(_ path: String) -> String {
        var prefix = path
        var missing: [Substring] = []
        while prefix != "/", !FileManager.default.fileExists(atPath: prefix),
            let slash = prefix.lastIndex(of: "/")
        {
            missing.append(prefix[prefix.index(after: slash)...])
            prefix = slash == prefix.startIndex ? "/" : String(prefix[..<slash])
        }
        let resolved = URL(fileURLWithPath: prefix).resolvingSymlinksInPath().path
        guard !missing.isEmpty else { return resolved }
        return (resolved == "/" ? "" : resolved) + "/" + missing.reversed().joined(separator: "/")
    }

    /// A file URL for a canonical path.
    static func url(_ path: ItemPath, isDirectory: Bool? = nil) -> URL {
        if let isDirectory { return URL(fileURLWithPath: path.description, isDirectory: isDirectory) }
        return URL(fileURLWithPath: path.description)
    }

    /// The URL to hand back for `path`: the caller's own spelling when it still names that path, else a new URL.
    static func url(for path: ItemPath, spelledAs original: URL, canonical: ItemPath) -> URL {
        path == canonical ? original : url(path)
    }
}
