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
        let path = url.standardizedFileURL.resolvingSymlinksInPath().path
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
