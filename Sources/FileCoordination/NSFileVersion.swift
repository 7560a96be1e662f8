public import Foundation

/// A version of a file, as presenters hear of it (`presentedItemDidGain(_:)` and the like).
///
/// This is the value the version callbacks carry: the version store that adds, lists, replaces and removes versions
/// (SEMANTICS.md §8) comes with the daemon's version store, in a later issue; until then no version messages are sent.
///
/// - Important: Instances are immutable and may be passed between threads.
open class NSFileVersion: NSObject, @unchecked Sendable {
    /// Where the version's contents are stored, or `nil` if they are gone.
    public let url: URL?
    /// An identifier that finds this version again (`NSFileVersion.version(itemAt:forPersistentIdentifier:)`).
    public let persistentIdentifier: String
    /// The name to show for the version.
    public let localizedName: String?
    /// The name of the computer that saved the version (conflict versions).
    public let localizedNameOfSavingComputer: String?
    /// When the version's contents were last modified.
    public let modificationDate: Date?
    /// `true` when the version was made because two writers conflicted.
    public let isConflict: Bool

    /// Creates a version description.
    public init(
        url: URL?,
        persistentIdentifier: String,
        localizedName: String? = nil,
        localizedNameOfSavingComputer: String? = nil,
        modificationDate: Date? = nil,
        isConflict: Bool = false
    ) {
        self.url = url
        self.persistentIdentifier = persistentIdentifier
        self.localizedName = localizedName
        self.localizedNameOfSavingComputer = localizedNameOfSavingComputer
        self.modificationDate = modificationDate
        self.isConflict = isConflict
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSFileVersion else { return false }
        return other.persistentIdentifier == persistentIdentifier
    }

    open override var hash: Int { persistentIdentifier.hashValue }
}
