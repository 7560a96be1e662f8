public import Foundation

/// A version of a file, as presenters hear of it (`presentedItemDidGain(_:)` and the like).
///
/// Shaped as Apple's `NSFileVersion` (`url` is a `URL`, `persistentIdentifier` an `NSCoding` object), so that code
/// written for Apple platforms compiles against it. The version store that adds, lists, replaces and removes
/// versions (SEMANTICS.md §8) comes with the daemon's version store, in a later issue; until then no version messages
/// are sent.
///
/// - Important: Instances are immutable and may be passed between threads.
open class NSFileVersion: NSObject, @unchecked Sendable {
    /// Where the version's contents are stored.
    public let url: URL
    /// An object that finds this version again: archive it, and later pass it to
    /// `NSFileVersion.version(itemAt:forPersistentIdentifier:)`. An `NSString` here.
    public let persistentIdentifier: any NSCoding
    /// The name to show for the version.
    public let localizedName: String?
    /// The name of the computer that saved the version (conflict versions).
    public let localizedNameOfSavingComputer: String?
    /// When the version's contents were last modified.
    public let modificationDate: Date?
    /// `true` when the version was made because two writers conflicted.
    public let isConflict: Bool

    /// The identifier as a string: what `persistentIdentifier` holds.
    let identifier: String

    /// Creates a version description (for the library and tests: apps get versions from the store).
    init(
        url: URL,
        identifier: String,
        localizedName: String? = nil,
        localizedNameOfSavingComputer: String? = nil,
        modificationDate: Date? = nil,
        isConflict: Bool = false
    ) {
        self.url = url
        self.identifier = identifier
        self.persistentIdentifier = NSString(string: identifier)
        self.localizedName = localizedName
        self.localizedNameOfSavingComputer = localizedNameOfSavingComputer
        self.modificationDate = modificationDate
        self.isConflict = isConflict
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSFileVersion else { return false }
        return other.identifier == identifier
    }

    open override var hash: Int { identifier.hashValue }
}
