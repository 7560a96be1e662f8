import FCToolkit
public import Foundation

/// One item to read or write in ``NSFileCoordinator/coordinate(with:queue:byAccessor:)``: Apple's
/// `NSFileAccessIntent`.
///
/// Use ``url`` inside the accessor: it is updated when the item was moved while the access waited.
///
/// - Important: Thread-safe; ``url`` is updated by the coordinator before the accessor runs.
// @unchecked: an NSObject subclass; its state is `let`s: a `Locked` URL and the access.
public final class NSFileAccessIntent: NSObject, @unchecked Sendable {
    private let currentURL: Locked<URL>
    let access: IntentAccess

    enum IntentAccess {
        case reading(NSFileCoordinator.ReadingOptions)
        case writing(NSFileCoordinator.WritingOptions)
    }

    private init(url: URL, access: IntentAccess) {
        self.currentURL = Locked(url)
        self.access = access
    }

    /// An intent to read the item at `url`.
    public class func readingIntent(
        with url: URL,
        options: NSFileCoordinator.ReadingOptions = []
    ) -> NSFileAccessIntent {
        NSFileAccessIntent(url: url, access: .reading(options))
    }

    /// An intent to write the item at `url`.
    public class func writingIntent(
        with url: URL,
        options: NSFileCoordinator.WritingOptions = []
    ) -> NSFileAccessIntent {
        NSFileAccessIntent(url: url, access: .writing(options))
    }

    /// The URL to use inside the accessor; it follows moves made while the access waited.
    public var url: URL { currentURL.withLock { $0 } }

    func update(url: URL) {
        currentURL.withLock { $0 = url }
    }
}
