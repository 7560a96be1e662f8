import Dispatch
import FCSystem
import FileCoordination
import Foundation
import Testing

// Shared helpers of the behaviour tests: a presenter that records every callback, unique temporary directories,
// threads, bounded waits and a deterministic way to let every presenter message already sent be delivered.
//
// Every test of this target shares the process's one arbiter (`CoordinationClient.shared`) and tests run in
// parallel: each test works in its own temporary directory and removes every presenter it adds.

/// A value behind a lock, shared between threads.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value { withLock { $0 } }

    func set(_ newValue: Value) { withLock { $0 = newValue } }
}

/// A presenter that records, in order, every callback it gets (and whatever the test adds with ``record(_:)``),
/// checks that each one runs on its own serial queue, and answers requests as configured.
///
/// Events: `relinquishToReader`, `relinquishToWriter`, `save`, `accommodateDeletion`,
/// `accommodateSubitemDeletion(<path>)`, `didChange`, `didMove(<path>)`, `subitemDidChange(<path>)`,
/// `subitemDidAppear(<path>)`, `subitemDidMove(<path> -> <path>)`, `reacquire`, and the version callbacks.
final class RecordingPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    /// How the presenter answers a relinquish request.
    enum Relinquish: Sendable {
        /// Calls the block at once, handing back a reacquirer that records `reacquire` (unless told not to).
        case immediately
        /// Keeps the block and never calls it (until ``releaseRelinquishBlocks()``).
        case never
    }

    typealias RelinquishBlock = @Sendable ((@Sendable () -> Void)?) -> Void

    let presentedItemOperationQueue: OperationQueue
    let presentedItemCallbacks: FilePresenterCallbacks
    let presentedItemIsPackage: Bool
    private let relinquish: Relinquish
    private let handsBackReacquirer: Bool
    private let saveError: (any Error)?
    private let accommodateError: (any Error)?
    private let followsMoves: Bool
    private let afterRelinquish: (@Sendable () -> Void)?
    private let beforeSave: (@Sendable () -> Void)?

    private let condition = NSCondition()
    private var currentURL: URL?
    private var log: [String] = []
    private var offQueue: [String] = []
    private var kept: [RelinquishBlock] = []

    init(
        url: URL?,
        callbacks: FilePresenterCallbacks = .all,
        isPackage: Bool = false,
        relinquish: Relinquish = .immediately,
        handsBackReacquirer: Bool = true,
        saveError: (any Error)? = nil,
        accommodateError: (any Error)? = nil,
        followsMoves: Bool = true,
        afterRelinquish: (@Sendable () -> Void)? = nil,
        beforeSave: (@Sendable () -> Void)? = nil
    ) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "RecordingPresenter \(url?.lastPathComponent ?? "nil")"
        self.presentedItemOperationQueue = queue
        self.currentURL = url
        self.presentedItemCallbacks = callbacks
        self.presentedItemIsPackage = isPackage
        self.relinquish = relinquish
        self.handsBackReacquirer = handsBackReacquirer
        self.saveError = saveError
        self.accommodateError = accommodateError
        self.followsMoves = followsMoves
        self.afterRelinquish = afterRelinquish
        self.beforeSave = beforeSave
    }

    /// Where the presenter is now: it follows `presentedItemDidMove(to:)` (unless told not to).
    var presentedItemURL: URL? {
        condition.lock()
        defer { condition.unlock() }
        return currentURL
    }

    /// Everything recorded so far, in order.
    var events: [String] {
        condition.lock()
        defer { condition.unlock() }
        return log
    }

    /// The callbacks that ran anywhere but on ``presentedItemOperationQueue`` (should stay empty).
    var offQueueCallbacks: [String] {
        condition.lock()
        defer { condition.unlock() }
        return offQueue
    }

    /// Appends an event (from a callback or from the test).
    func record(_ event: String) {
        condition.lock()
        log.append(event)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `event` has been recorded `count` times; `false` after `timeout` seconds.
    func wait(for event: String, count: Int = 1, timeout: TimeInterval = 5) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while log.filter({ $0 == event }).count < count {
            if !condition.wait(until: deadline) { return log.filter { $0 == event }.count >= count }
        }
        return true
    }

    /// Calls the relinquish blocks kept by a presenter made with `relinquish: .never`.
    func releaseRelinquishBlocks() {
        condition.lock()
        let blocks = kept
        kept = []
        condition.unlock()
        for block in blocks { block(nil) }
    }

    /// Records a callback and notes it if it is not running on the presenter's queue.
    private func callback(_ event: String) {
        let onQueue = OperationQueue.current === presentedItemOperationQueue
        condition.lock()
        log.append(event)
        if !onQueue { offQueue.append(event) }
        condition.broadcast()
        condition.unlock()
    }

    private func answer(_ block: @escaping RelinquishBlock) {
        switch relinquish {
        case .never:
            condition.lock()
            kept.append(block)
            condition.unlock()
        case .immediately:
            if handsBackReacquirer {
                block { [self] in callback("reacquire") }
            } else {
                block(nil)
            }
            afterRelinquish?()
        }
    }

    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        callback("relinquishToReader")
        answer(reader)
    }

    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        callback("relinquishToWriter")
        answer(writer)
    }

    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        callback("save")
        beforeSave?()
        completionHandler(saveError)
    }

    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        callback("accommodateDeletion")
        completionHandler(accommodateError)
    }

    func accommodatePresentedSubitemDeletion(
        at url: URL,
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        callback("accommodateSubitemDeletion(\(url.path))")
        completionHandler(accommodateError)
    }

    func presentedItemDidChange() { callback("didChange") }

    func presentedItemDidMove(to newURL: URL) {
        if followsMoves {
            condition.lock()
            currentURL = newURL
            condition.unlock()
        }
        callback("didMove(\(newURL.path))")
    }

    func presentedSubitemDidChange(at url: URL) { callback("subitemDidChange(\(url.path))") }

    func presentedSubitemDidAppear(at url: URL) { callback("subitemDidAppear(\(url.path))") }

    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {
        callback("subitemDidMove(\(oldURL.path) -> \(newURL.path))")
    }

    func presentedItemDidGain(_ version: NSFileVersion) { callback("didGainVersion") }

    func presentedItemDidLose(_ version: NSFileVersion) { callback("didLoseVersion") }

    func presentedItemDidResolveConflict(_ version: NSFileVersion) { callback("didResolveConflictVersion") }

    func presentedSubitem(at url: URL, didGain version: NSFileVersion) {
        callback("subitemDidGainVersion(\(url.path))")
    }

    func presentedSubitem(at url: URL, didLose version: NSFileVersion) {
        callback("subitemDidLoseVersion(\(url.path))")
    }

    func presentedSubitem(at url: URL, didResolve version: NSFileVersion) {
        callback("subitemDidResolveConflictVersion(\(url.path))")
    }
}

/// Registers `presenters`, runs `body`, and removes them again whatever happens.
func withPresenters<T>(_ presenters: [any NSFilePresenter], _ body: () throws -> T) rethrows -> T {
    for presenter in presenters { NSFileCoordinator.addFilePresenter(presenter) }
    defer {
        for presenter in presenters { NSFileCoordinator.removeFilePresenter(presenter) }
    }
    return try body()
}

extension Data {
    /// Writes the bytes to `url` through an `O_CLOEXEC` descriptor (`FileSystemCalls.writeFile`), as the tests write
    /// every file: Foundation's `write(to:)` leaves its descriptor to a child that another test spawns meanwhile, and
    /// the file's `IN_CLOSE_WRITE` then comes when that child exits, after a presenter registered later, or after a
    /// coordinated write's end: an extra `presentedItemDidChange` (stop 55's and 56's CI runs, under load).
    func writeClosingOnExec(to url: URL) throws {
        try FileSystemCalls.writeFile(url.path, Array(self))
    }
}

/// A unique temporary directory (symbolic links of its path resolved, so that callback URLs compare equal).
struct TempDirectory {
    let url: URL
    /// The test's own folder, holding `url`: nothing else is ever created in it.
    private let container: URL

    /// The directory is made one level down in a folder of its own, never directly in the shared temporary folder:
    /// the daemon watches the folder that holds a presented directory (issue 13), so a directory made in a folder
    /// that another test's presenter already has watched could be reported as new after this test's presenter of it
    /// registered (the watcher reads the kernel's events a moment later), an extra `presentedItemDidChange`.
    init() throws {
        let base = FileManager.default.temporaryDirectory.resolvingSymlinksInPath()
        container = base.appendingPathComponent("fc-tests-\(UUID().uuidString)", isDirectory: true)
        url = container.appendingPathComponent("dir", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A file in the directory, written with `contents` (or left absent when `contents` is `nil`).
    func file(_ name: String, _ contents: String? = "contents") throws -> URL {
        let file = url.appendingPathComponent(name, isDirectory: false)
        // Through an O_CLOEXEC descriptor: Foundation's Data.write(to:) leaves the descriptor to a child another test
        // spawns meanwhile, and the file's IN_CLOSE_WRITE then comes late, to a presenter registered after it.
        if let contents { try FileSystemCalls.writeFile(file.path, Array(contents.utf8)) }
        return file
    }

    /// A subdirectory, created.
    func directory(_ name: String) throws -> URL {
        let directory = url.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    func remove() {
        try? FileManager.default.removeItem(at: container)
    }
}

/// Lets every presenter message sent so far be delivered and run, without sleeping.
///
/// The in-process arbiter hands its effects, in order, to one delivery queue, which puts each message on its
/// presenter's queue. A coordinated write on a fresh item with its own presenter cannot be granted before that
/// presenter's relinquish request has gone through the delivery queue, so when it returns every message emitted
/// before it is on its presenter's queue; waiting for those queues then runs them.
func settle(_ presenters: RecordingPresenter...) {
    settle(presenters)
}

/// ``settle(_:)-(RecordingPresenter...)`` for an array.
func settle(_ presenters: [RecordingPresenter]) {
    let sentinelURL = FileManager.default.temporaryDirectory.resolvingSymlinksInPath()
        .appendingPathComponent("fc-sentinel-\(UUID().uuidString)")
    let sentinel = RecordingPresenter(url: sentinelURL)
    var error: NSError?
    withPresenters([sentinel]) {
        NSFileCoordinator().coordinate(writingItemAt: sentinelURL, options: [], error: &error) { _ in }
    }
    #expect(error == nil)
    #expect(sentinel.events.first == "relinquishToWriter")
    for presenter in presenters { presenter.presentedItemOperationQueue.waitUntilAllOperationsAreFinished() }
}

/// Runs `body` on a new thread; the semaphore is signalled when it returns.
@discardableResult
func spawn(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        done.signal()
    }
    thread.start()
    return done
}

extension DispatchSemaphore {
    /// Waits at most `seconds`; `true` when signalled in time.
    func wait(seconds: Double) -> Bool {
        wait(timeout: .now() + seconds) == .success
    }

    /// `true` when not signalled within ``stillBlocked`` seconds: what must wait is still waiting. A signal that did
    /// come is put back, for the wait that follows.
    func staysUnsignalled() -> Bool {
        guard wait(seconds: stillBlocked) else { return true }
        signal()
        return false
    }
}

/// How long a test waits for something that must happen before calling it a failure (never needed to pass).
let patience: Double = 10

/// How long a test waits to see that something does not happen (a blocked call stays blocked).
let stillBlocked: Double = 0.2
