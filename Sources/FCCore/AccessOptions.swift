/// `NSFileCoordinator.ReadingOptions`, with Apple's raw values.
public struct ReadingOptions: OptionSet, Hashable, Sendable {
    /// The option bits, with Apple's values.
    public var rawValue: UInt
    /// Creates options from their bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// Presenters are not asked to save before the read.
    public static let withoutChanges = ReadingOptions(rawValue: 1 << 0)
    /// The accessor gets a symbolic link's target (resolved outside the core).
    public static let resolvesSymbolicLink = ReadingOptions(rawValue: 1 << 1)
    /// Only metadata that is available at once is read.
    public static let immediatelyAvailableMetadataOnly = ReadingOptions(rawValue: 1 << 2)
    /// The read is for uploading a snapshot.
    public static let forUploading = ReadingOptions(rawValue: 1 << 3)
}

/// `NSFileCoordinator.WritingOptions`, with Apple's raw values.
public struct WritingOptions: OptionSet, Hashable, Sendable {
    /// The option bits, with Apple's values.
    public var rawValue: UInt
    /// Creates options from their bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// The write deletes the item.
    public static let forDeleting = WritingOptions(rawValue: 1 << 0)
    /// The write moves or renames the item.
    public static let forMoving = WritingOptions(rawValue: 1 << 1)
    /// Presenters are asked to save before the write.
    public static let forMerging = WritingOptions(rawValue: 1 << 2)
    /// The write replaces whatever is at the location; waiting claims do not follow moves of it.
    public static let forReplacing = WritingOptions(rawValue: 1 << 3)
    /// Only metadata independent of the contents is written.
    public static let contentIndependentMetadataOnly = WritingOptions(rawValue: 1 << 4)

    /// The options that make a write on a directory cover everything inside it (docs/SEMANTICS.md §2 rule 3).
    public static let subtreeOptions: WritingOptions = [.forDeleting, .forMoving, .forReplacing]
}

/// Read or write access to one item, with its options.
public enum Access: Hashable, Sendable, CustomStringConvertible {
    case read(ReadingOptions)
    case write(WritingOptions)

    /// `true` for a write.
    public var isWrite: Bool {
        if case .write = self { return true }
        return false
    }

    /// `true` for a write that deletes or replaces its item (`.forDeleting`, `.forReplacing`): presenters of the
    /// enclosing directories are asked to accommodate the deletion of a subitem first (docs/SEMANTICS.md §3).
    public var deletesItem: Bool {
        if case .write(let options) = self { return !options.isDisjoint(with: [.forDeleting, .forReplacing]) }
        return false
    }

    /// `true` for a write that covers a directory's contents: `.forDeleting`, `.forMoving` or `.forReplacing`.
    public var coversSubtree: Bool {
        if case .write(let options) = self { return !options.isDisjoint(with: .subtreeOptions) }
        return false
    }

    /// `read` or `write`, followed by the option names, for logs.
    public var description: String {
        switch self {
        case .read(let options):
            var names: [String] = []
            if options.contains(.withoutChanges) { names.append("withoutChanges") }
            if options.contains(.resolvesSymbolicLink) { names.append("resolvesSymbolicLink") }
            if options.contains(.immediatelyAvailableMetadataOnly) { names.append("immediatelyAvailableMetadataOnly") }
            if options.contains(.forUploading) { names.append("forUploading") }
            return names.isEmpty ? "read" : "read(\(names.joined(separator: ",")))"
        case .write(let options):
            var names: [String] = []
            if options.contains(.forDeleting) { names.append("forDeleting") }
            if options.contains(.forMoving) { names.append("forMoving") }
            if options.contains(.forMerging) { names.append("forMerging") }
            if options.contains(.forReplacing) { names.append("forReplacing") }
            if options.contains(.contentIndependentMetadataOnly) { names.append("contentIndependentMetadataOnly") }
            return names.isEmpty ? "write" : "write(\(names.joined(separator: ",")))"
        }
    }
}

/// One item of a claim.
public struct ClaimItem: Hashable, Sendable, CustomStringConvertible {
    /// The canonical path of the item.
    public var path: ItemPath
    /// How the item is accessed.
    public var access: Access
    /// The file the path named when the client canonicalised it (issue 26), `nil` for a directory or an item that
    /// does not exist: the claim also meets the claims and presenters of the file's other names.
    public var identity: ItemIdentity?
    /// The file had more than one name (`st_nlink` above 1) when the client canonicalised it (issue 26): its other
    /// names may lie outside any lease the client holds, or inside another client's, so a lease never decides the
    /// claim in process (``ClaimRequest/mayBeDecided(inLeaseOn:)``) and the arbiter meets it against every name.
    public var hasOtherNames: Bool

    /// Creates a claim item for a canonical path.
    public init(path: ItemPath, access: Access, identity: ItemIdentity? = nil, hasOtherNames: Bool = false) {
        self.path = path
        self.access = access
        self.identity = identity
        self.hasOtherNames = hasOtherNames
    }

    /// The access, then the path, for logs.
    public var description: String { "\(access) \(path)" }
}
