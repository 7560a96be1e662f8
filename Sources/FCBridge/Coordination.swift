import FCSystem
import FCToolkit
public import FileCoordination
import Foundation
import SystemPackage

/// One item of a coordinated call: a path and how it is accessed.
public struct CoordinatedItem: Sendable {
    /// What is done to the item.
    public enum Access: Sendable {
        case read(NSFileCoordinator.ReadingOptions)
        case write(NSFileCoordinator.WritingOptions)
    }

    /// The path as the caller gave it (absolute, or relative to the working directory).
    public var path: String
    public var access: Access

    public init(path: String, access: Access) {
        self.path = path
        self.access = access
    }

    /// The item's URL: a relative path is made absolute against the working directory, as a shell tool must.
    var url: URL { URL(fileURLWithPath: path) }
}

/// Settings of one coordinated call.
public struct CallSettings: Sendable {
    /// How long the call may wait for its claim; `nil` waits as long as it takes.
    public var timeout: Duration?
    /// The coordinator's purpose identifier; `nil` for a unique one.
    public var purpose: String?
    /// `true`: the call fails at once with ``BridgeError/Code/wouldWait`` instead of waiting for a conflicting claim
    /// of another coordinator (`fccoord -n`; docs/SEMANTICS.md §2 rule 9).
    public var nonblocking: Bool

    public init(timeout: Duration? = nil, purpose: String? = nil, nonblocking: Bool = false) {
        self.timeout = timeout
        self.purpose = purpose
        self.nonblocking = nonblocking
    }
}

/// Coordinated calls by plain paths, on ``NSFileCoordinator``'s public API: what `fccoord` and `libfilecoord` do.
///
/// - Important: Every method blocks the calling thread until its claim is granted and released. The body runs on
///   the calling thread while every claim is held; the paths it gets are the ones to use (an item that moved while
///   the call waited is passed where it is now).
public enum Coordination {
    /// A coordinator for one call with `settings`.
    public static func coordinator(_ settings: CallSettings) -> NSFileCoordinator {
        let coordinator = NSFileCoordinator(filePresenter: nil)
        if let purpose = settings.purpose, !purpose.isEmpty { coordinator.purposeIdentifier = purpose }
        coordinator.timeout = settings.timeout
        if settings.nonblocking { coordinator.refusesToWait = true }
        return coordinator
    }

    /// The coordinator a call runs on: `given` (a caller's own, whose purpose and cancellation then apply, with the
    /// call's timeout and whether it may wait), or a new one with `settings`.
    private static func coordinator(_ settings: CallSettings, given: NSFileCoordinator?) -> NSFileCoordinator {
        guard let given else { return coordinator(settings) }
        given.timeout = settings.timeout
        given.refusesToWait = settings.nonblocking
        return given
    }

    /// Runs `body` with the paths to use while `items` are claimed; returns its result, or the call's failure (the
    /// body then did not run).
    public static func access<T>(
        _ items: [CoordinatedItem],
        settings: CallSettings = CallSettings(),
        coordinator given: NSFileCoordinator? = nil,
        body: ([String]) -> T
    ) -> Result<T, BridgeError> {
        guard !items.isEmpty else { return .failure(BridgeError(.invalidArgument, "No path to coordinate.")) }
        let coordinator = self.coordinator(settings, given: given)
        var result: T?
        var error: NSError?
        switch (items.count, items.first!.access) {
        case (1, .read(let options)):
            coordinator.coordinate(readingItemAt: items[0].url, options: options, error: &error) { url in
                result = body([url.path])
            }
        case (1, .write(let options)):
            coordinator.coordinate(writingItemAt: items[0].url, options: options, error: &error) { url in
                result = body([url.path])
            }
        default:
            return accessMany(items, coordinator: coordinator, body: body)
        }
        if let error { return .failure(BridgeError(classifying: error)) }
        guard let result else { return .failure(BridgeError(.other, "The accessor did not run.")) }
        return .success(result)
    }

    /// Many items at once (``NSFileCoordinator/coordinate(with:queue:byAccessor:)``): the accessor, on a queue of
    /// its own, holds the claims while `body` runs on the calling thread.
    private static func accessMany<T>(
        _ items: [CoordinatedItem],
        coordinator: NSFileCoordinator,
        body: ([String]) -> T
    ) -> Result<T, BridgeError> {
        let intents = items.map { item in
            switch item.access {
            case .read(let options): NSFileAccessIntent.readingIntent(with: item.url, options: options)
            case .write(let options): NSFileAccessIntent.writingIntent(with: item.url, options: options)
            }
        }
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let granted = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        let failure = Locked<BridgeError?>(nil)
        coordinator.coordinate(with: intents, queue: queue) { error in
            if let error {
                failure.withLock { $0 = BridgeError(classifying: error) }
                granted.signal()
                return
            }
            granted.signal()
            released.wait()
        }
        granted.wait()
        if let failure = failure.withLock({ $0 }) { return .failure(failure) }
        let result = body(intents.map(\.url.path))
        released.signal()
        queue.waitUntilAllOperationsAreFinished()
        return .success(result)
    }

    /// Moves `source` to `destination` (replacing what is there) in a coordinated write of both, telling their
    /// presenters with ``NSFileCoordinator/item(at:didMoveTo:)``.
    public static func move(
        _ source: String,
        to destination: String,
        settings: CallSettings = CallSettings(),
        coordinator given: NSFileCoordinator? = nil
    ) -> Result<Void, BridgeError> {
        let coordinator = self.coordinator(settings, given: given)
        var error: NSError?
        var outcome: Result<Void, BridgeError> = .failure(BridgeError(.other, "The accessor did not run."))
        coordinator.coordinate(
            writingItemAt: URL(fileURLWithPath: source),
            options: .forMoving,
            writingItemAt: URL(fileURLWithPath: destination),
            options: .forReplacing,
            error: &error
        ) { from, to in
            do throws(Errno) {
                try FileSystemCalls.rename(FilePath(from.path), to: FilePath(to.path))
                coordinator.item(at: from, didMoveTo: to)
                outcome = .success(())
            } catch {
                outcome = .failure(
                    BridgeError(.io, "Cannot move \(from.path) to \(to.path): \(error).", errno: error.rawValue)
                )
            }
        }
        if let error { return .failure(BridgeError(classifying: error)) }
        return outcome
    }

    /// Deletes `path` (a directory with what is in it) in a coordinated write with `.forDeleting`, so that its
    /// presenters accommodate the deletion first.
    public static func delete(
        _ path: String,
        settings: CallSettings = CallSettings(),
        coordinator given: NSFileCoordinator? = nil
    ) -> Result<Void, BridgeError> {
        let coordinator = self.coordinator(settings, given: given)
        var error: NSError?
        var outcome: Result<Void, BridgeError> = .failure(BridgeError(.other, "The accessor did not run."))
        coordinator.coordinate(writingItemAt: URL(fileURLWithPath: path), options: .forDeleting, error: &error) {
            url in
            do {
                try FileManager.default.removeItem(at: url)
                outcome = .success(())
            } catch {
                let nsError = error as NSError
                let underlying = (nsError.userInfo[NSUnderlyingErrorKey] as? NSError)?.code ?? 0
                let number: Int32 =
                    nsError.code == CocoaError.fileNoSuchFile.rawValue
                    ? Errno.noSuchFileOrDirectory.rawValue : Int32(truncatingIfNeeded: underlying)
                outcome = .failure(
                    BridgeError(.io, "Cannot delete \(url.path): \(nsError.localizedDescription)", errno: number)
                )
            }
        }
        if let error { return .failure(BridgeError(classifying: error)) }
        return outcome
    }

    /// For sync tools: in a coordinated write of `path`, records the file at `contentsPath` as an unresolved conflict
    /// version of it from `savingComputer` (``NSFileVersion/addConflictVersionOfItem(at:withContentsOf:savingComputer:originator:options:)``).
    public static func addConflictVersion(
        of path: String,
        contentsOf contentsPath: String,
        savingComputer: String,
        settings: CallSettings = CallSettings(),
        coordinator given: NSFileCoordinator? = nil
    ) -> Result<Void, BridgeError> {
        let coordinator = self.coordinator(settings, given: given)
        var error: NSError?
        var outcome: Result<Void, BridgeError> = .failure(BridgeError(.other, "The accessor did not run."))
        coordinator.coordinate(writingItemAt: URL(fileURLWithPath: path), options: [], error: &error) { url in
            do {
                _ = try NSFileVersion.addConflictVersionOfItem(
                    at: url,
                    withContentsOf: URL(fileURLWithPath: contentsPath),
                    savingComputer: savingComputer
                )
                outcome = .success(())
            } catch {
                outcome = .failure(BridgeError(.io, "Cannot add a conflict version of \(url.path): \(error)"))
            }
        }
        if let error { return .failure(BridgeError(classifying: error)) }
        return outcome
    }
}
