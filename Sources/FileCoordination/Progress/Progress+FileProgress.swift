public import Foundation

// File progress across processes (issue 44; docs/SEMANTICS.md §16): Apple's `Progress` publishing and subscribing
// API, which swift-corelibs-foundation lacks, with Apple's Swift signatures, carried between processes by
// filecoordd. A sync agent or a copy publishes a progress about a file; any process that subscribed to that file or
// to its folder receives a proxy `Progress` that follows it and can cancel, pause and resume it.

extension Progress {
    /// The closure ``addSubscriber(forFileURL:withPublishingHandler:)`` takes: called with a proxy of each matching
    /// publication; what it returns is called when that publication ends (unpublished, or its process gone).
    public typealias PublishingHandler = (Progress) -> Progress.UnpublishingHandler?
    /// Called once when a publication a subscriber was handed ends.
    public typealias UnpublishingHandler = () -> Void

    /// The item this progress is about (`userInfo[.fileURLKey]`): required for ``publish()``.
    public var fileURL: URL? {
        get { userInfo[.fileURLKey] as? URL }
        set {
            setUserInfoObject(newValue, forKey: .fileURLKey)
            ProgressCenter.shared.fileFieldsChanged(of: self)
        }
    }

    /// What is being done to the file (`userInfo[.fileOperationKindKey]`).
    public var fileOperationKind: Progress.FileOperationKind? {
        get { userInfo[.fileOperationKindKey] as? Progress.FileOperationKind }
        set {
            setUserInfoObject(newValue, forKey: .fileOperationKindKey)
            ProgressCenter.shared.fileFieldsChanged(of: self)
        }
    }

    /// How many files the operation covers (`userInfo[.fileTotalCountKey]`).
    public var fileTotalCount: Int? {
        get { Self.integer(userInfo[.fileTotalCountKey]) }
        set {
            setUserInfoObject(newValue.map { NSNumber(value: $0) }, forKey: .fileTotalCountKey)
            ProgressCenter.shared.fileFieldsChanged(of: self)
        }
    }

    /// How many of them are done (`userInfo[.fileCompletedCountKey]`).
    public var fileCompletedCount: Int? {
        get { Self.integer(userInfo[.fileCompletedCountKey]) }
        set {
            setUserInfoObject(newValue.map { NSNumber(value: $0) }, forKey: .fileCompletedCountKey)
            ProgressCenter.shared.fileFieldsChanged(of: self)
        }
    }

    /// Seconds probably left (`userInfo[.estimatedTimeRemainingKey]`).
    public var estimatedTimeRemaining: TimeInterval? {
        get { (userInfo[.estimatedTimeRemainingKey] as? NSNumber)?.doubleValue }
        set {
            setUserInfoObject(newValue.map { NSNumber(value: $0) }, forKey: .estimatedTimeRemainingKey)
            ProgressCenter.shared.fileFieldsChanged(of: self)
        }
    }

    /// Bytes per second (`userInfo[.throughputKey]`).
    public var throughput: Int? {
        get { Self.integer(userInfo[.throughputKey]) }
        set {
            setUserInfoObject(newValue.map { NSNumber(value: $0) }, forKey: .throughputKey)
            ProgressCenter.shared.fileFieldsChanged(of: self)
        }
    }

    private static func integer(_ value: Any?) -> Int? {
        switch value {
        case let number as NSNumber: number.intValue
        case let integer as Int: integer
        default: nil
        }
    }

    /// Whether this is a subscriber's proxy whose publication has ended.
    public var isOld: Bool { (self as? ProgressProxy)?.hasEnded ?? false }

    /// Makes this progress visible to subscribers of its ``fileURL`` and of the folder that holds it, in every
    /// process of the user, through filecoordd (started if needed, as the first coordinated call does).
    ///
    /// Set ``fileURL`` first (a progress without one is not published, and a warning is logged), and `kind`, the
    /// ``fileOperationKind`` and `isCancellable`/`isPausable` as they apply. The call returns at once: the message
    /// to the daemon goes from the library's own queue. From then on the library reads the progress's unit counts and
    /// flags every 100 ms (swift-corelibs-foundation has no key-value observing) and sends what changed, so that
    /// `completedUnitCount += 1` costs the publisher nothing more however often it runs; the file fields set
    /// through this extension's properties are sent when set. A subscriber's cancel, pause or resume calls
    /// `cancel()`, `pause()` or `resume()` here (whose handlers run as `Progress` runs them). Publishing twice is
    /// ignored. The publication ends with ``unpublish()`` or with the process.
    public func publish() {
        ProgressCenter.shared.publish(self)
    }

    /// Ends this progress's publication: every subscriber's unpublishing handler runs. Nothing happens if it is not
    /// published.
    public func unpublish() {
        ProgressCenter.shared.unpublish(self)
    }

    /// Subscribes to progress published, in any process of the user, about the item at `url` or about an item
    /// directly inside it (when `url` is a folder). `publishingHandler` is called with a proxy `Progress` for each
    /// publication that matches, now or later, on the library's progress queue (one serial queue per process, never
    /// the caller's). The proxy follows its publisher (unit counts, flags, `kind`, the file fields and the
    /// publisher's descriptions) a few times a second at most; its `cancel()`, `pause()` and `resume()` reach the
    /// publisher. The closure the handler returns runs when that publication ends.
    ///
    /// - Returns: The subscriber, to pass to ``removeSubscriber(_:)``.
    public class func addSubscriber(
        forFileURL url: URL,
        withPublishingHandler publishingHandler: @escaping Progress.PublishingHandler
    ) -> Any {
        ProgressCenter.shared.subscribe(at: url, handler: publishingHandler)
    }

    /// Ends a subscription made with ``addSubscriber(forFileURL:withPublishingHandler:)``: no more publishing
    /// handler calls, and no unpublishing handler calls for the proxies it was handed. Anything else is ignored.
    public class func removeSubscriber(_ subscriber: Any) {
        guard let token = subscriber as? ProgressSubscriber else { return }
        ProgressCenter.shared.unsubscribe(token)
    }
}

extension Progress.FileOperationKind {
    /// Use for indicating the progress represents an upload (macOS 13; swift-corelibs-foundation lacks it).
    public static let uploading = Progress.FileOperationKind(rawValue: "NSProgressFileOperationKindUploading")
    /// Use for indicating the progress represents a duplication (macOS 13; swift-corelibs-foundation lacks it).
    public static let duplicating = Progress.FileOperationKind(rawValue: "NSProgressFileOperationKindDuplicating")
}

/// What ``Progress/addSubscriber(forFileURL:withPublishingHandler:)`` returns.
final class ProgressSubscriber: Sendable {
    let id: UInt64
    init(id: UInt64) { self.id = id }
}
