import FCCore
import Foundation

// The folders and items a query searches (issue 44): its scopes made canonical, and `searchItems` as paths.
extension NSMetadataQuery {
    /// The canonical folders `scopes` name.
    static func roots(of scopes: [Any]) throws(FileCoordinationError) -> [ItemPath] {
        var roots: [ItemPath] = []
        for scope in scopes {
            let url: URL
            switch scope {
            case let given as URL:
                url = given
            case let name as String where name == NSMetadataQueryUserHomeScope:
                url = FileManager.default.homeDirectoryForCurrentUser
            case let name as String where name.hasPrefix("kMDQueryScope") || name.hasPrefix("NSMetadataQuery"):
                throw FileCoordinationError(
                    .invalidRequest,
                    "the scope \(name) is not supported: live queries search local folders (give their URLs) and "
                        + "NSMetadataQueryUserHomeScope"
                )
            case let path as String:
                url = URL(fileURLWithPath: path)
            default:
                throw FileCoordinationError(.invalidRequest, "a search scope must be a URL or a path, not \(scope)")
            }
            roots.append(try URLMapping.canonicalPath(url))
        }
        return roots
    }

    /// The paths of ``searchItems``: `URL`s, path `String`s and `NSMetadataItem`s (others are left out), standardized.
    static func searchPaths(_ items: [Any]) -> [String] {
        items.compactMap { item -> String? in
            switch item {
            case let url as URL: url.isFileURL ? url.standardizedFileURL.path : nil
            case let path as String: URL(fileURLWithPath: path).standardizedFileURL.path
            case let metadata as NSMetadataItem: metadata.value(forAttribute: NSMetadataItemPathKey) as? String
            default: nil
            }
        }
    }

    /// Whether `item` is one of `paths` or lies inside one of them.
    static func isWithin(_ item: NSMetadataItem, _ paths: [String]) -> Bool {
        guard let path = item.value(forAttribute: NSMetadataItemPathKey) as? String else { return false }
        return paths.contains { path == $0 || path.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }
    }
}
