public import Foundation

/// A file's metadata as a metadata query hands it out, with Apple's Swift signatures (issue 44): the attributes of
/// NSMetadataAttributes.h that a local file system has (`NSMetadataItemFSNameKey`, `…DisplayNameKey`, `…URLKey`,
/// `…PathKey`, `…FSSizeKey`, `…FSCreationDateKey`, `…FSContentChangeDateKey`, `…ContentTypeKey`,
/// `…ContentTypeTreeKey`), read once when the item is made (and each made into its value when asked for). A format predicate (`NSPredicate(format:)`) evaluates
/// against it by those names.
///
/// Differences from Apple: the attributes are read from the file system when the item is made, not from a Spotlight
/// index, so an item does not change after it was made (a query hands out a new item for a changed file); the content
/// type comes from the name's extension through a table of common types, `public.data`
/// for a file it does not know and `public.folder` for a folder; attributes Spotlight extracts from contents (authors,
/// pixel sizes) are not there.
///
/// - Important: Immutable once made: usable from any thread.
// @unchecked: every stored property is a `let` of Sendable values; NSObject's own state is not used.
open class NSMetadataItem: NSObject, @unchecked Sendable {
    private let path: String
    private let name: String
    private let isDirectory: Bool
    private let size: Int64?
    private let modified: Date?
    private let created: Date?
    /// The path's bytes as the daemon sent them (a Linux name is bytes; ``value(forAttribute:)``'s path is them
    /// decoded as UTF-8): what a query orders and finds its results by.
    let pathBytes: Data

    /// The item for the file or folder at `url`, or `nil` when `url` is not a `file:` URL or names nothing.
    public convenience init?(url: URL) {
        guard url.isFileURL,
            let resources = try? url.resourceValues(forKeys: [
                .fileSizeKey, .contentModificationDateKey, .creationDateKey, .isDirectoryKey, .nameKey,
            ])
        else { return nil }
        self.init(
            path: url.standardizedFileURL.path,
            name: resources.name ?? url.lastPathComponent,
            isDirectory: resources.isDirectory ?? false,
            size: resources.fileSize.map { Int64($0) },
            modified: resources.contentModificationDate,
            created: resources.creationDate
        )
    }

    /// An item with these values; its attributes are made from them when asked for (a query's item that its
    /// predicate refuses costs no `URL`, type or date tree).
    init(
        path: String,
        name: String,
        isDirectory: Bool,
        size: Int64?,
        modified: Date?,
        created: Date?,
        pathBytes: Data? = nil
    ) {
        self.path = path
        self.pathBytes = pathBytes ?? Data(path.utf8)
        self.name = name
        self.isDirectory = isDirectory
        self.size = isDirectory ? nil : size
        self.modified = modified
        self.created = created
        super.init()
    }

    /// The value of the attribute `key` (one of the `NSMetadataItem…Key` names), or `nil` when the item has none.
    open func value(forAttribute key: String) -> Any? {
        switch key {
        case NSMetadataItemPathKey: path
        case NSMetadataItemFSNameKey, NSMetadataItemDisplayNameKey: name
        case NSMetadataItemFSSizeKey: size.map { NSNumber(value: $0) }
        case NSMetadataItemFSContentChangeDateKey: modified
        case NSMetadataItemFSCreationDateKey: created
        case NSMetadataItemURLKey: URL(fileURLWithPath: path, isDirectory: isDirectory)
        case NSMetadataItemContentTypeKey: MetadataContentTypes.type(ofName: name, isDirectory: isDirectory)
        case NSMetadataItemContentTypeTreeKey:
            MetadataContentTypes.tree(of: MetadataContentTypes.type(ofName: name, isDirectory: isDirectory))
        default: nil
        }
    }

    /// The values of the attributes `keys` the item has, by key.
    open func values(forAttributes keys: [String]) -> [String: Any]? {
        var found: [String: Any] = [:]
        for key in keys { if let value = value(forAttribute: key) { found[key] = value } }
        return found
    }

    /// The names of the attributes the item has.
    open var attributes: [String] {
        var keys = [
            NSMetadataItemFSNameKey, NSMetadataItemDisplayNameKey, NSMetadataItemPathKey, NSMetadataItemURLKey,
            NSMetadataItemContentTypeKey, NSMetadataItemContentTypeTreeKey,
        ]
        if size != nil { keys.append(NSMetadataItemFSSizeKey) }
        if modified != nil { keys.append(NSMetadataItemFSContentChangeDateKey) }
        if created != nil { keys.append(NSMetadataItemFSCreationDateKey) }
        return keys.sorted()
    }
}

extension NSMetadataItem: PredicateAttributeSource {
    func predicateValue(forKey key: String) -> Any? { value(forAttribute: key) }
}

extension NSMetadataItem {
    /// An item of a live query, from what the daemon read (issue 44): no file system call here, and its name is the
    /// path's last component (the daemon's paths are absolute, with no trailing slash).
    convenience init(
        path: String,
        size: Int64,
        isDirectory: Bool,
        modified: Date,
        created: Date,
        pathBytes: Data? = nil
    ) {
        let name: String
        if let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")), path.utf8.index(after: slash) < path.utf8.endIndex {
            name = String(path[path.utf8.index(after: slash)...])
        } else {
            name = path
        }
        self.init(
            path: path,
            name: name,
            isDirectory: isDirectory,
            size: size,
            modified: modified,
            created: created,
            pathBytes: pathBytes
        )
    }
}
