public import Foundation

/// A ``CoordinatedDocument`` holding UTF-8 text: the simplest subclass, usable as it is (the `notes` example edits
/// one) or as a model for your own.
///
/// - Important: ``text`` may be read and set from any thread: it is kept under the document's contents lock.
// @unchecked: `storedText` is read and written only with the contents lock held (`withContents`, `edit`, and the read
// and save hooks, which the document calls with it held).
open class PlainTextDocument: CoordinatedDocument, @unchecked Sendable {
    private var storedText = ""

    /// The text. Setting it counts an unsaved change and schedules the autosave (``CoordinatedDocument/edit(_:)``).
    public var text: String {
        get { withContents { storedText } }
        set { edit { storedText = newValue } }
    }

    /// Reads the file as UTF-8 (bytes that are not UTF-8 are replaced with U+FFFD).
    open override func read(from data: Data) throws {
        storedText = String(decoding: data, as: UTF8.self)
    }

    /// The text as UTF-8.
    open override func dataForSaving() throws -> Data {
        Data(storedText.utf8)
    }
}
