public import FileCoordination
public import Foundation

// The document as its file's presenter. Every callback runs on `presentedItemOperationQueue` and returns without
// waiting for the work queue (CoordinatedDocument's threading rules).
extension CoordinatedDocument {
    /// The document's file, where it is now. Read from any thread; never blocks for long.
    public var presentedItemURL: URL? { fileURL }

    /// The callbacks the document answers: relinquishing to readers and writers, saving, deletion, moves, changes
    /// and versions.
    public var presentedItemCallbacks: FilePresenterCallbacks {
        [
            .relinquishToReader, .relinquishToWriter, .savePresentedItemChanges, .accommodatePresentedItemDeletion,
            .presentedItemDidMove, .presentedItemDidChange, .presentedItemDidGainVersion, .presentedItemDidLoseVersion,
            .presentedItemDidResolveConflictVersion,
        ]
    }

    /// Another program reads the file: counted in ``othersAccessing`` until it is done.
    public func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        countAccess(\.readers, until: reader)
    }

    /// Another program writes the file: counted in ``othersAccessing`` until it is done. The document's own saves
    /// wait for it (their coordinated writes are queued behind it); the change it makes is read afterwards, when the
    /// presenter hears that the file changed.
    public func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        countAccess(\.writers, until: writer)
    }

    /// Counts another program's access in `counter` and tells ``othersAccessing``, then lets it proceed
    /// (`proceed`) and counts it out when it is done.
    private func countAccess(
        _ counter: any WritableKeyPath<State, Int> & Sendable,
        until proceed: @escaping @Sendable ((@Sendable () -> Void)?) -> Void
    ) {
        emit(changeCount(counter, by: 1))
        proceed { [self] in emit(changeCount(counter, by: -1)) }
    }

    private func changeCount(_ counter: WritableKeyPath<State, Int>, by delta: Int) -> DocumentEvent {
        withState { state in
            state[keyPath: counter] += delta
            return DocumentEvent.othersAccessing(readers: state.readers, writers: state.writers)
        }
    }

    /// Another program wants the file as it should be: unsaved changes are written now, from the presenter queue,
    /// with a coordinator made for the document (its write goes before the access that asked).
    public func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        guard isOpen, hasUnsavedChanges else {
            completionHandler(nil)
            return
        }
        do {
            try saveNow(always: false)
            completionHandler(nil)
        } catch {
            completionHandler(error)
        }
    }

    /// The file is about to be deleted: the document closes (``DocumentCloseReason/deleted``).
    public func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        closeNow(.deleted)
        completionHandler(nil)
    }

    /// The file moved: the document follows it.
    public func presentedItemDidMove(to newURL: URL) {
        withState { $0.url = newURL.standardizedFileURL }
        emit(.moved(newURL))
    }

    /// The file changed (another program's coordinated write, or a change the daemon's watcher saw): read it again on
    /// the work queue, unless there are unsaved changes; close when the file is gone.
    public func presentedItemDidChange() {
        workQueue.async { [self] in
            guard isOpen else { return }
            guard FileManager.default.fileExists(atPath: fileURL.path) else {
                closeNow(.deleted)
                return
            }
            do {
                try reloadNow(dropUnsavedChanges: false)
            } catch {
                // Gone between the check and the read: a deletion without coordination.
                if !FileManager.default.fileExists(atPath: fileURL.path) { closeNow(.deleted) }
            }
        }
    }

    /// A version was added: reported when the conflict versions changed.
    public func presentedItemDidGain(_ version: NSFileVersion) {
        if version.isConflict { emit(.conflictVersionsChanged(count: conflictVersions.count)) }
    }

    /// A version was removed: reported when the conflict versions changed.
    public func presentedItemDidLose(_ version: NSFileVersion) {
        emit(.conflictVersionsChanged(count: conflictVersions.count))
    }

    /// A conflict was resolved: reported.
    public func presentedItemDidResolveConflict(_ version: NSFileVersion) {
        emit(.conflictVersionsChanged(count: conflictVersions.count))
    }
}
