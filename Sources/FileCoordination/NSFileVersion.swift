import FCCore
import FCToolkit
import FCVersionStore
public import Foundation
import Logging

/// A version of a file (docs/SEMANTICS.md §8), with Apple's API and Swift signatures: the current version (the file
/// itself), other versions kept in the version store, and conflict versions that a sync tool added
/// (``addConflictVersionOfItem(at:withContentsOf:savingComputer:originator:options:)``).
///
/// As on Apple platforms, `NSFileVersion` does not coordinate by itself: add, remove, resolve and replace inside a
/// coordinated write of the item, so that its presenters (the writer's own too) and those of enclosing directories
/// hear `presentedItemDidGain(_:)`, `presentedItemDidLose(_:)` and `presentedItemDidResolveConflict(_:)` (and the
/// subitem callbacks), in every process. Outside a coordinated write the change is made and nobody is told.
///
/// What Apple refuses with an exception is a thrown `CocoaError(.featureUnsupported)` here (``remove()`` of the
/// current version), or a documented no-op (setting ``isResolved`` to `false`, ``isDiscardable`` back to `false` or
/// on the current version), never a crash. Errors of the store are `CocoaError`s: `.fileNoSuchFile` for a version
/// or item that is gone, `.fileReadNoSuchFile` for contents that cannot be read, `.fileWriteUnknown` otherwise, each
/// with a message that says what happened.
///
/// - Important: Instances may be passed between threads; ``isResolved`` and ``isDiscardable`` are set through the
///   store, which serialises changes.
// @unchecked: an open class (not checkable); its state is `let`s and `Locked` flags.
open class NSFileVersion: NSObject, @unchecked Sendable {
    /// Options of ``addOfItem(at:withContentsOf:options:)``.
    public struct AddingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// The contents may be moved into the store instead of copied.
        public static let byMoving = AddingOptions(rawValue: 1 << 0)
    }

    /// Options of ``replaceItem(at:options:)``.
    public struct ReplacingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// The contents are moved out of the store, and the version removed.
        public static let byMoving = ReplacingOptions(rawValue: 1 << 0)
    }

    /// Where the version's contents are stored (read-only; not to be shown to users). The item's own URL for the
    /// current version.
    public let url: URL
    /// An object that finds this version again: archive it, and later pass it to
    /// ``version(itemAt:forPersistentIdentifier:)``. An `NSString` here.
    public let persistentIdentifier: any NSCoding
    /// The name to show for the version: the item's file name when the version was made.
    public let localizedName: String?
    /// The name of the computer that saved the version (conflict versions a sync tool added).
    public let localizedNameOfSavingComputer: String?
    /// The person whose change the version holds, when a sync tool named one; `nil` otherwise.
    public let originatorNameComponents: PersonNameComponents?
    /// When the version's contents were last modified.
    public let modificationDate: Date?
    /// `true` when the version was made because two writers conflicted.
    public let isConflict: Bool
    /// Every version here has its contents on this computer.
    public let hasLocalContents: Bool = true
    /// No thumbnails are kept.
    public let hasThumbnail: Bool = false

    /// The identifier as a string: what `persistentIdentifier` holds (`current:<path>` for a current version).
    let identifier: String
    /// The item's canonical path when this instance was made.
    let itemPath: String?
    private let resolved: Locked<Bool>
    private let discardable: Locked<Bool>

    /// Creates a version description (for the library and tests: apps get versions from the store).
    init(
        url: URL,
        identifier: String,
        localizedName: String? = nil,
        localizedNameOfSavingComputer: String? = nil,
        originator: String? = nil,
        modificationDate: Date? = nil,
        isConflict: Bool = false,
        isResolved: Bool = true,
        isDiscardable: Bool = false,
        itemPath: String? = nil
    ) {
        self.url = url
        self.identifier = identifier
        self.persistentIdentifier = NSString(string: identifier)
        self.localizedName = localizedName
        self.localizedNameOfSavingComputer = localizedNameOfSavingComputer
        self.originatorNameComponents = originator.map { name in
            var components = PersonNameComponents()
            components.nickname = name
            return components
        }
        self.modificationDate = modificationDate
        self.isConflict = isConflict
        self.resolved = Locked(isResolved)
        self.discardable = Locked(isDiscardable)
        self.itemPath = itemPath
    }

    convenience init(_ stored: StoredVersion) {
        self.init(
            url: URL(fileURLWithPath: stored.contentsPath),
            identifier: stored.id,
            localizedName: stored.name,
            localizedNameOfSavingComputer: stored.savingComputer,
            originator: stored.originator,
            modificationDate: stored.modificationDate,
            isConflict: stored.isConflict,
            isResolved: stored.isResolved,
            isDiscardable: stored.isDiscardable,
            itemPath: stored.itemPath
        )
    }

    /// `true` for the version that is the file itself.
    var isCurrent: Bool { identifier.hasPrefix(Self.currentPrefix) }
    static let currentPrefix = "current:"

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSFileVersion else { return false }
        return other.identifier == identifier
    }

    open override var hash: Int { identifier.hashValue }

    // MARK: Finding versions

    /// The version that is the file's current contents, or `nil` if there is no file at `url`.
    open class func currentVersionOfItem(at url: URL) -> NSFileVersion? {
        guard let path = try? URLMapping.canonicalPath(url).description,
            let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        else { return nil }
        return NSFileVersion(
            url: url,
            identifier: currentPrefix + path,
            localizedName: url.lastPathComponent,
            modificationDate: attributes[.modificationDate] as? Date,
            itemPath: path
        )
    }

    /// The item's other versions, oldest first (never the current one), or `nil` if there is no file at `url`
    /// or the store cannot be read.
    /// A store that cannot be read is logged with its reason (the app's logger): `nil` alone does not say why.
    open class func otherVersionsOfItem(at url: URL) -> [NSFileVersion]? {
        guard let path = existingPath(url) else { return nil }
        do {
            return try VersionStoreAccessPoint.access().versions(of: path).map(NSFileVersion.init)
        } catch {
            CoordinationClient.shared.logger().error(
                "the versions of an item could not be listed: \(error)",
                metadata: ["item.path": "\(path)"]
            )
            return nil
        }
    }

    /// The item's conflict versions not yet resolved, or `nil` if there is no file at `url` or the store cannot be
    /// read.
    open class func unresolvedConflictVersionsOfItem(at url: URL) -> [NSFileVersion]? {
        otherVersionsOfItem(at: url)?.filter { $0.isConflict && !$0.isResolved }
    }

    /// Hands `completionHandler` the versions whose contents are elsewhere: there are none here (an empty list),
    /// or `nil` and an error if there is no file at `url`. Called on a global queue.
    @preconcurrency
    open class func getNonlocalVersionsOfItem(
        at url: URL,
        completionHandler: @escaping @Sendable ([NSFileVersion]?, (any Error)?) -> Void
    ) {
        let exists = existingPath(url) != nil
        DispatchQueue.global().async {
            if exists {
                completionHandler([], nil)
            } else {
                completionHandler(nil, noSuchFile(url))
            }
        }
    }

    /// The version of the item at `url` with `persistentIdentifier` (an object from ``persistentIdentifier``,
    /// possibly archived and unarchived), or `nil` if it is gone.
    open class func version(itemAt url: URL, forPersistentIdentifier persistentIdentifier: Any) -> NSFileVersion? {
        let identifier: String
        switch persistentIdentifier {
        case let string as String: identifier = string
        case let string as NSString: identifier = string as String
        default: return nil
        }
        if identifier.hasPrefix(currentPrefix) {
            guard let current = currentVersionOfItem(at: url), current.identifier == identifier else { return nil }
            return current
        }
        guard let stored = try? VersionStoreAccessPoint.access().version(id: identifier) else { return nil }
        return NSFileVersion(stored)
    }

    // MARK: Adding

    /// Adds a version of the item at `url` with the contents at `contentsURL` (which may be `url` itself), copied
    /// into the store (reflinked where the file system can) or, with `.byMoving`, moved there. Do it inside a
    /// coordinated write of `url`, so that presenters hear of it.
    open class func addOfItem(
        at url: URL,
        withContentsOf contentsURL: URL,
        options: NSFileVersion.AddingOptions = []
    ) throws -> NSFileVersion {
        try add(url, contentsURL, byMoving: options.contains(.byMoving), conflict: nil)
    }

    /// A new directory in which to prepare contents to add with `.byMoving` (on the store's file system, so the
    /// move is a rename). Remove it when done. The store's own temporary folder when it cannot be had.
    open class func temporaryDirectoryURLForNewVersionOfItem(at url: URL) -> URL {
        if let path = try? VersionStoreAccessPoint.access().makeTemporaryDirectory() {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        let fallback = FileManager.default.temporaryDirectory.appendingPathComponent(
            "filecoord-version-\(UUID().uuidString)",
            isDirectory: true
        )
        try? FileManager.default.createDirectory(at: fallback, withIntermediateDirectories: true)
        return fallback
    }

    /// For sync tools (an extension of Apple's API): adds an unresolved conflict version of the item at `url` with
    /// the contents at `contentsURL`, naming the computer or device (`savingComputer`) and, if known, the person
    /// (`originator`) it came from. Document apps find it in ``unresolvedConflictVersionsOfItem(at:)``; do it inside
    /// a coordinated write of `url`, so that the item's presenters hear `presentedItemDidGain(_:)`.
    open class func addConflictVersionOfItem(
        at url: URL,
        withContentsOf contentsURL: URL,
        savingComputer: String,
        originator: String? = nil,
        options: NSFileVersion.AddingOptions = []
    ) throws -> NSFileVersion {
        try add(
            url,
            contentsURL,
            byMoving: options.contains(.byMoving),
            conflict: ConflictOrigin(computer: savingComputer, originator: originator)
        )
    }

    private class func add(
        _ url: URL,
        _ contentsURL: URL,
        byMoving: Bool,
        conflict: ConflictOrigin?
    ) throws -> NSFileVersion {
        guard let path = existingPath(url) else { throw noSuchFile(url) }
        let stored = try storeCall(url) {
            try $0.add(item: path, contentsOf: contentsURL.path, byMoving: byMoving, conflict: conflict)
        }
        VersionNotifier.changed(path, .added(VersionID(stored.id)))
        return NSFileVersion(stored)
    }

    // MARK: Changing

    /// For conflict versions: whether the conflict is resolved; `true` for every other version. Setting `true`
    /// removes the version from ``unresolvedConflictVersionsOfItem(at:)`` and tells presenters (inside a coordinated
    /// write). Setting `false` is refused: a documented no-op (Apple raises an exception), logged.
    open var isResolved: Bool {
        get { resolved.withLock { $0 } }
        set {
            guard newValue else {
                CoordinationClient.shared.logger().warning(
                    "NSFileVersion.isResolved cannot be set back to false; ignored",
                    metadata: ["version.id": "\(identifier)"]
                )
                return
            }
            guard !isCurrent, resolved.withLock({ !$0 }) else { return }
            do {
                if let stored = try VersionStoreAccessPoint.access().markResolved(id: identifier) {
                    resolved.withLock { $0 = true }
                    if let path = Self.itemPathNow(stored) {
                        VersionNotifier.changed(path, .resolved(VersionID(identifier)))
                    }
                } else {
                    resolved.withLock { $0 = true }
                }
            } catch {
                // Apple's "unless setting fails": the version stays unresolved.
                CoordinationClient.shared.logger().error(
                    "NSFileVersion.isResolved could not be set: \(error)",
                    metadata: ["version.id": "\(identifier)"]
                )
            }
        }
    }

    /// Whether the store may delete the version when it needs room. Setting `true` can fail (logged, the value stays
    /// `false`); setting it back to `false`, or setting it on the current version, is a documented no-op (Apple
    /// raises an exception), logged.
    open var isDiscardable: Bool {
        get { discardable.withLock { $0 } }
        set {
            guard newValue, !isCurrent else {
                CoordinationClient.shared.logger().warning(
                    "NSFileVersion.isDiscardable can only be set to true, and not on the current version; ignored",
                    metadata: ["version.id": "\(identifier)"]
                )
                return
            }
            if (try? VersionStoreAccessPoint.access().markDiscardable(id: identifier)) == true {
                discardable.withLock { $0 = true }
            }
        }
    }

    /// Writes this version's contents to `url`, replacing the item there, and returns where the item is now (`url`,
    /// or `url` with this version's extension when it differs). With `.byMoving` the contents move out of the store
    /// and the version is removed (presenters are told it was lost). Do it inside a coordinated write of `url`.
    @discardableResult
    open func replaceItem(at url: URL, options: NSFileVersion.ReplacingOptions = []) throws -> URL {
        guard let path = try? URLMapping.canonicalPath(url).description else { throw Self.noSuchFile(url) }
        if isCurrent {
            // The file's own contents: replacing a file with itself, or copying it elsewhere.
            guard let source = itemPath, source != path else { return url }
            throw Self.unsupported("replaceItem(at:) of a current version onto another item is not supported")
        }
        let byMoving = options.contains(.byMoving)
        let result = try Self.storeCall(url) { try $0.replaceItem(at: path, with: identifier, byMoving: byMoving) }
        if byMoving { VersionNotifier.changed(itemPath ?? path, .removed(VersionID(identifier))) }
        return result == path ? url : URL(fileURLWithPath: result)
    }

    /// Removes this version from the store. Refused for the current version (`CocoaError(.featureUnsupported)`;
    /// Apple raises an exception). Do it inside a coordinated write of the item.
    open func remove() throws {
        if isCurrent {
            throw Self.unsupported("The current version of an item cannot be removed; remove the file instead")
        }
        guard let removed = try Self.storeCall(url, { try $0.remove(id: identifier) }) else {
            throw CocoaError(
                .fileNoSuchFile,
                userInfo: [NSLocalizedDescriptionKey: "The version \(identifier) was already removed."]
            )
        }
        if let path = Self.itemPathNow(removed) { VersionNotifier.changed(path, .removed(VersionID(identifier))) }
    }

    /// Removes every version of the item at `url` but the current one. Do it inside a coordinated write of `url`.
    open class func removeOtherVersionsOfItem(at url: URL) throws {
        guard let path = try? URLMapping.canonicalPath(url).description else { throw noSuchFile(url) }
        let removed = try storeCall(url) { try $0.removeAll(of: path) }
        for version in removed { VersionNotifier.changed(path, .removed(VersionID(version.id))) }
    }

    // MARK: Helpers

    private class func existingPath(_ url: URL) -> String? {
        guard let path = try? URLMapping.canonicalPath(url).description,
            FileManager.default.fileExists(atPath: path)
        else { return nil }
        return path
    }

    private class func itemPathNow(_ stored: StoredVersion) -> String? { stored.itemPath }

    static func noSuchFile(_ url: URL) -> CocoaError {
        CocoaError(
            .fileNoSuchFile,
            userInfo: [NSURLErrorKey: url, NSLocalizedDescriptionKey: "There is no file at \(url.path)."]
        )
    }

    static func unsupported(_ message: String) -> CocoaError {
        CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: message + "."])
    }

    /// Runs a store call, with its errors as `CocoaError`s.
    static func storeCall<T>(_ url: URL, _ body: (any VersionStoreAccess) throws -> T) throws -> T {
        do {
            return try body(try VersionStoreAccessPoint.access())
        } catch let error as VersionStoreError {
            let code: CocoaError.Code =
                switch error.code {
                case .noSuchFile: .fileReadNoSuchFile
                case .noSuchVersion: .fileNoSuchFile
                case .storeUnavailable, .ioFailure: .fileWriteUnknown
                }
            throw CocoaError(code, userInfo: [NSURLErrorKey: url, NSLocalizedDescriptionKey: error.message])
        }
    }
}
