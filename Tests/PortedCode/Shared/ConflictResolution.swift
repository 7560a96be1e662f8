// Conflict handling written as macOS document apps write it (Apple's "Resolving Document Version Conflicts" pattern,
// as conflict pickers and NSFileVersion helpers in open-source apps do it): only Apple's API, no Linux-only call.

import Foundation

#if canImport(FileCoordination)
import FileCoordination
#endif

/// How a document app resolves the conflicts of its document.
enum ConflictResolver {
    /// Keeps whichever of the current version and the unresolved conflict versions is newest: replaces the file with
    /// a newer conflict version, marks every conflict resolved, and removes the other versions. Returns whether the
    /// file was replaced.
    static func resolveKeepingNewest(at url: URL) throws -> Bool {
        var coordinationError: NSError?
        var result: Result<Bool, Error> = .success(false)
        NSFileCoordinator(filePresenter: nil).coordinate(
            writingItemAt: url,
            options: .forMerging,
            error: &coordinationError
        ) { writingURL in
            result = Result {
                guard let current = NSFileVersion.currentVersionOfItem(at: writingURL),
                    let conflicts = NSFileVersion.unresolvedConflictVersionsOfItem(at: writingURL),
                    !conflicts.isEmpty
                else { return false }
                var replaced = false
                let newest = conflicts.max { a, b in
                    (a.modificationDate ?? .distantPast) < (b.modificationDate ?? .distantPast)
                }
                if let newest, let date = newest.modificationDate,
                    date > (current.modificationDate ?? .distantPast)
                {
                    try newest.replaceItem(at: writingURL, options: [])
                    replaced = true
                }
                for conflict in conflicts {
                    conflict.isResolved = true
                }
                try NSFileVersion.removeOtherVersionsOfItem(at: writingURL)
                return replaced
            }
        }
        if let coordinationError { throw coordinationError }
        return try result.get()
    }

    /// Names the devices that saved the unresolved conflict versions, as a conflict picker lists them.
    static func conflictDescriptions(at url: URL) -> [String] {
        (NSFileVersion.unresolvedConflictVersionsOfItem(at: url) ?? []).map { version in
            let device = version.localizedNameOfSavingComputer ?? "Unknown device"
            let name = version.localizedName ?? url.lastPathComponent
            return "\(name) — \(device)"
        }
    }

    /// Saves a snapshot of the document as a version (macOS "Browse All Versions"), inside a coordinated write.
    static func saveSnapshot(of url: URL) throws -> NSFileVersion? {
        var coordinationError: NSError?
        var saved: Result<NSFileVersion, Error>?
        NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: url, options: [], error: &coordinationError) {
            writingURL in
            saved = Result { try NSFileVersion.addOfItem(at: writingURL, withContentsOf: writingURL, options: []) }
        }
        if let coordinationError { throw coordinationError }
        return try saved?.get()
    }
}

/// A document presenter that reloads its conflict badge when versions come and go.
final class ConflictBadgePresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let presentedItemURL: URL?
    let presentedItemOperationQueue = OperationQueue()
    private let lock = NSLock()
    private var gained: [NSFileVersion] = []
    private var resolvedCount = 0

    init(url: URL) {
        presentedItemURL = url
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
    }

    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        // Nothing unsaved in this sketch: say so at once.
        completionHandler(nil)
    }

    func presentedItemDidGain(_ version: NSFileVersion) {
        lock.lock()
        defer { lock.unlock() }
        if version.isConflict { gained.append(version) }
    }

    func presentedItemDidResolveConflict(_ version: NSFileVersion) {
        lock.lock()
        defer { lock.unlock() }
        resolvedCount += 1
    }

    var conflictsGained: [NSFileVersion] {
        lock.lock()
        defer { lock.unlock() }
        return gained
    }

    var conflictsResolved: Int {
        lock.lock()
        defer { lock.unlock() }
        return resolvedCount
    }
}
