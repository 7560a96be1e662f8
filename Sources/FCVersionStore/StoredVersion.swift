public import Foundation

/// One version of an item in the ``VersionStore``: what `NSFileVersion` shows of it.
///
/// - Important: A value; may be passed between threads.
public struct StoredVersion: Sendable, Hashable {
    /// The store's name for the version (a UUID): its `persistentIdentifier`, unchanged when the item moves.
    public var id: String
    /// The item's path (absolute, canonical) now: it follows the item through moves.
    public var itemPath: String
    /// The item's file name when the version was added: the name of the contents in the store.
    public var name: String
    /// Where the version's contents are, inside the store (read-only for everyone but the store).
    public var contentsPath: String
    /// The computer or device the version came from (conflict versions added by a sync tool).
    public var savingComputer: String?
    /// The person whose change the version holds, when a sync tool named one.
    public var originator: String?
    /// When the contents were last modified before they were added.
    public var modificationDate: Date
    /// When the version was added.
    public var addedDate: Date
    /// The version was made because two writers conflicted.
    public var isConflict: Bool
    /// For conflict versions: resolved. Always `true` for other versions.
    public var isResolved: Bool
    /// The store may delete the version when it needs the room.
    public var isDiscardable: Bool
    /// Since when the item is gone (the version is purged after the store's retention); `nil` while it exists.
    public var itemGoneSince: Date?

    /// A version with every field given (for the store, and for the daemon's replies on the client's side).
    public init(
        id: String,
        itemPath: String,
        name: String,
        contentsPath: String,
        savingComputer: String?,
        originator: String?,
        modificationDate: Date,
        addedDate: Date,
        isConflict: Bool,
        isResolved: Bool,
        isDiscardable: Bool,
        itemGoneSince: Date?
    ) {
        self.id = id
        self.itemPath = itemPath
        self.name = name
        self.contentsPath = contentsPath
        self.savingComputer = savingComputer
        self.originator = originator
        self.modificationDate = modificationDate
        self.addedDate = addedDate
        self.isConflict = isConflict
        self.isResolved = isResolved
        self.isDiscardable = isDiscardable
        self.itemGoneSince = itemGoneSince
    }
}

/// Where a conflict version came from: what a sync tool knows of the other side.
public struct ConflictOrigin: Sendable, Hashable {
    /// The computer or device whose copy of the item conflicted (`localizedNameOfSavingComputer`).
    public var computer: String
    /// The person who made that copy's change, if known (`originatorNameComponents`).
    public var originator: String?

    public init(computer: String, originator: String? = nil) {
        self.computer = computer
        self.originator = originator
    }
}

/// What went wrong in the store, with a message that says what to do.
public struct VersionStoreError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure.
    public enum Code: Sendable, Equatable {
        /// The item or the contents to add do not exist.
        case noSuchFile
        /// No version with that identifier (removed meanwhile, or purged).
        case noSuchVersion
        /// The store's directory or index could not be opened or written.
        case storeUnavailable
        /// Copying, moving or flushing contents failed.
        case ioFailure
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
