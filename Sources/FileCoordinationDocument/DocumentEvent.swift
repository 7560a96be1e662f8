public import Foundation

/// Something that happened to a ``CoordinatedDocument``, delivered in order on ``CoordinatedDocument/events``.
public enum DocumentEvent: Sendable, Equatable {
    /// The document read its file and presents it (after ``CoordinatedDocument/open()``).
    case opened
    /// The contents were written to the file (a save, an autosave, or a save another process asked for).
    case saved
    /// A save failed; the changes are still unsaved.
    case saveFailed(String)
    /// The contents were read again from the file: after ``CoordinatedDocument/revert()``, or because another
    /// program changed the file (coordinated or not) while the document had no unsaved changes.
    case reloaded
    /// Another program changed the file while the document had unsaved changes: nothing was read; save to keep
    /// this document's contents, or revert to take the file's.
    case changedOnDiskWithUnsavedChanges
    /// Other programs' coordinated accesses that hold the file now, as the document's presenter was told of them:
    /// readers and writers. Both 0 when they are done.
    case othersAccessing(readers: Int, writers: Int)
    /// The file moved (renamed, or a folder above it moved); the document follows it.
    case moved(URL)
    /// The unresolved conflict versions of the file changed; read ``CoordinatedDocument/conflictVersions``.
    case conflictVersionsChanged(count: Int)
    /// The document stopped presenting its file.
    case closed(DocumentCloseReason)
}

/// Why a ``CoordinatedDocument`` closed.
public enum DocumentCloseReason: Sendable, Equatable {
    /// ``CoordinatedDocument/close(saving:)`` was called.
    case closedByApp
    /// The file was deleted: by a coordinated delete (`.forDeleting`), or without coordination.
    case deleted
}
