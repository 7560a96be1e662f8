public import Foundation

/// A file's metadata as a metadata query hands it out, with Apple's Swift signatures (issue 44): the attributes of
/// NSMetadataAttributes.h that a local file system has (`NSMetadataItemFSNameKey`, `…DisplayNameKey`, `…URLKey`,
/// `…PathKey`, `…FSSizeKey`, `…FSCreationDateKey`, `…FSContentChangeDateKey`, `…ContentTypeKey`,
/// `…ContentTypeTreeKey`), read once when the item is made. A format predicate (`NSPredicate(format:)`) evaluates
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
    private let values: [String: any Sendable]

    /// The item for the file or folder at `url`, or `nil` when `url` is not a `file:` URL or names nothing.
    public convenience init?(url: URL) {
        guard url.isFileURL,
            let resources = try? url.resourceValues(forKeys: [
                .fileSizeKey, .contentModificationDateKey, .creationDateKey, .isDirectoryKey, .nameKey,
            ])
        else { return nil }
        let isDirectory = resources.isDirectory ?? false
        let values = Self.attributes(
            path: url.standardizedFileURL.path,
            name: resources.name ?? url.lastPathComponent,
            isDirectory: isDirectory,
            size: resources.fileSize.map { Int64($0) },
            modified: resources.contentModificationDate,
            created: resources.creationDate
        )
        self.init(values: values)
    }

    /// An item with these attribute values.
    init(values: [String: any Sendable]) {
        self.values = values
        super.init()
    }

    /// The value of the attribute `key` (one of the `NSMetadataItem…Key` names), or `nil` when the item has none.
    open func value(forAttribute key: String) -> Any? { values[key] }

    /// The values of the attributes `keys` the item has, by key.
    open func values(forAttributes keys: [String]) -> [String: Any]? {
        var found: [String: Any] = [:]
        for key in keys { if let value = values[key] { found[key] = value } }
        return found
    }

    /// The names of the attributes the item has.
    open var attributes: [String] { values.keys.sorted() }
}

extension NSMetadataItem: PredicateAttributeSource {
    func predicateValue(forKey key: String) -> Any? { value(forAttribute: key) }
}

extension NSMetadataItem {
    /// An item of a live query, from what the daemon read (issue 44): no file system call here.
    convenience init(path: String, size: Int64, isDirectory: Bool, modified: Date, created: Date) {
        let values = Self.attributes(
            path: path,
            name: (path as NSString).lastPathComponent,
            isDirectory: isDirectory,
            size: size,
            modified: modified,
            created: created
        )
        self.init(values: values)
    }

    /// The attributes of an item, in one place for both ways an item is made: the size of a file only, the type
    /// and its tree from the name.
    fileprivate static func attributes(
        path: String,
        name: String,
        isDirectory: Bool,
        size: Int64?,
        modified: Date?,
        created: Date?
    ) -> [String: any Sendable] {
        let type = MetadataContentTypes.type(ofName: name, isDirectory: isDirectory)
        var values: [String: any Sendable] = [
            NSMetadataItemFSNameKey: name,
            NSMetadataItemDisplayNameKey: name,
            NSMetadataItemPathKey: path,
            NSMetadataItemURLKey: URL(fileURLWithPath: path, isDirectory: isDirectory),
            NSMetadataItemContentTypeKey: type,
            NSMetadataItemContentTypeTreeKey: MetadataContentTypes.tree(of: type),
        ]
        if !isDirectory, let size { values[NSMetadataItemFSSizeKey] = NSNumber(value: size) }
        if let modified { values[NSMetadataItemFSContentChangeDateKey] = modified }
        if let created { values[NSMetadataItemFSCreationDateKey] = created }
        return values
    }
}
