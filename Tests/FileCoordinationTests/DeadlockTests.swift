import FileCoordination
import Foundation
import Testing

/// hydrixos/DeadlockExample in one process: two presenters of one file on serial queues, each making a coordinated
/// read inside `presentedItemDidChange`. Apple's daemon hangs forever; here one read fails with the deadlock error,
/// the other completes, and both queues run on (docs/SEMANTICS.md §6).
@Suite struct DeadlockInOneProcessTests {
    final class ReadingPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
        let url: URL
        let presentedItemOperationQueue: OperationQueue = {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            return queue
        }()
        private let lock = NSLock()
        private var results: [Result<Void, NSError>] = []
        let finished = DispatchSemaphore(value: 0)

        init(url: URL) { self.url = url }
        var presentedItemURL: URL? { url }
        var outcomes: [Result<Void, NSError>] { lock.withLock { results } }

        func presentedItemDidChange() {
            var error: NSError?
            NSFileCoordinator(filePresenter: self).coordinate(
                readingItemAt: url,
                options: .withoutChanges,
                error: &error
            ) {
                _ in
            }
            lock.withLock { results.append(error.map { .failure($0) } ?? .success(())) }
            finished.signal()
        }
    }

    @Test func oneReadFailsWithTheDeadlockErrorAndBothQueuesRunOn() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fc-deadlock-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("test.txt")
        try Data("xy".utf8).writeClosingOnExec(to: file)
        let a = ReadingPresenter(url: file)
        let b = ReadingPresenter(url: file)
        NSFileCoordinator.addFilePresenter(a)
        NSFileCoordinator.addFilePresenter(b)
        defer {
            NSFileCoordinator.removeFilePresenter(a)
            NSFileCoordinator.removeFilePresenter(b)
        }
        let start = ContinuousClock.now
        var error: NSError?
        NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { url in
            try? Data("abc".utf8).writeClosingOnExec(to: url)
        }
        #expect(error == nil)
        #expect(a.finished.wait(timeout: .now() + 10) == .success)
        #expect(b.finished.wait(timeout: .now() + 10) == .success)
        #expect(ContinuousClock.now - start < .seconds(6))
        let outcomes = a.outcomes + b.outcomes
        let failures = outcomes.compactMap { outcome -> NSError? in
            if case .failure(let error) = outcome { return error }
            return nil
        }
        #expect(outcomes.count == 2)
        #expect(failures.count == 1, "outcomes: \(outcomes)")
        if let failure = failures.first {
            #expect(failure.domain == FileCoordinationError.errorDomain)
            #expect(failure.code == FileCoordinationError.Code.deadlock.rawValue)
            #expect(failure.localizedDescription.contains("deadlock found"))
            #expect(
                failure.localizedDescription.contains(
                    "is held by a coordinated call made in its presentedItemDidChange()"
                )
            )
        }
        // Both queues run on.
        for presenter in [a, b] {
            let ran = DispatchSemaphore(value: 0)
            presenter.presentedItemOperationQueue.addOperation { ran.signal() }
            #expect(ran.wait(timeout: .now() + 5) == .success)
        }
    }
}

/// Coordinated calls made on a presenter's serial queue outside its callbacks (an operation the app put there, or the
/// main queue's work): the call holds the queue, and every presenter on it, until it returns (docs/SEMANTICS.md §6).
@Suite struct QueueHeldByOtherWorkTests {
    final class QueuePresenter: NSObject, NSFilePresenter, @unchecked Sendable {
        let presentedItemURL: URL?
        let presentedItemOperationQueue: OperationQueue
        init(url: URL, queue: OperationQueue) {
            self.presentedItemURL = url
            self.presentedItemOperationQueue = queue
        }
    }

    static func serialQueue(_ name: String) -> OperationQueue {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = name
        return queue
    }

    /// Runs a coordinated write of `url` as an operation on `queue` and returns its error.
    static func write(_ url: URL, on queue: OperationQueue) -> NSError? {
        let outcome = Locked<NSError?>(nil)
        let done = DispatchSemaphore(value: 0)
        queue.addOperation {
            var error: NSError?
            NSFileCoordinator().coordinate(writingItemAt: url, options: [], error: &error) { _ in }
            outcome.set(error)
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else {
            Issue.record("the write on \(queue.name ?? "the queue") did not return")
            return nil
        }
        return outcome.current
    }

    @Test func aWriteFromWorkOnThePresentersOwnQueueFailsWithTheCycle() throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let file = try directory.file("doc.txt")
        let queue = Self.serialQueue("document")
        let presenter = QueuePresenter(url: file, queue: queue)
        NSFileCoordinator.addFilePresenter(presenter)
        defer { NSFileCoordinator.removeFilePresenter(presenter) }
        let error = try #require(Self.write(file, on: queue))
        #expect(error.domain == FileCoordinationError.errorDomain)
        #expect(error.code == FileCoordinationError.Code.deadlock.rawValue)
        #expect(error.localizedDescription.contains("is held by a coordinated call made on it"))
        // The queue runs on, and a write from elsewhere goes through.
        #expect(Self.write(file, on: OperationQueue()) == nil)
    }

    @Test func aWriteOnAQueueSharedWithTheAskedPresenterFailsWithTheCycle() throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let sidebarFile = try directory.file("sidebar.txt")
        let documentFile = try directory.file("doc.txt")
        let shared = Self.serialQueue("shared")
        let sidebar = QueuePresenter(url: sidebarFile, queue: shared)
        let document = QueuePresenter(url: documentFile, queue: shared)
        NSFileCoordinator.addFilePresenter(sidebar)
        NSFileCoordinator.addFilePresenter(document)
        defer {
            NSFileCoordinator.removeFilePresenter(sidebar)
            NSFileCoordinator.removeFilePresenter(document)
        }
        let error = try #require(Self.write(documentFile, on: shared))
        #expect(error.code == FileCoordinationError.Code.deadlock.rawValue)
        #expect(error.localizedDescription.contains("a serial queue it shares with"), "\(error.localizedDescription)")
    }

    /// Answers relinquish requests late, from another thread, so that a claim waits past the detection delay.
    final class SlowPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
        let presentedItemURL: URL?
        let presentedItemOperationQueue: OperationQueue
        init(url: URL, queue: OperationQueue) {
            self.presentedItemURL = url
            self.presentedItemOperationQueue = queue
        }
        func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
            DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) { writer(nil) }
        }
    }

    /// An intents call made on a presenter's queue returns at once: it holds nothing, so a slow answer from that
    /// presenter is a long wait, not a deadlock.
    @Test func anIntentsCallFromThePresentersQueueHoldsNothing() throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let file = try directory.file("doc.txt")
        let queue = Self.serialQueue("document")
        let presenter = SlowPresenter(url: file, queue: queue)
        NSFileCoordinator.addFilePresenter(presenter)
        defer { NSFileCoordinator.removeFilePresenter(presenter) }
        let outcome = Locked<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        queue.addOperation {
            NSFileCoordinator().coordinate(with: [.writingIntent(with: file)], queue: OperationQueue()) { error in
                outcome.set(error)
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(outcome.current == nil, "\(String(describing: outcome.current))")
    }

    @Test func aWriteFromWorkOnAConcurrentPresenterQueueIsNoDeadlock() throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let file = try directory.file("doc.txt")
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 4
        let presenter = QueuePresenter(url: file, queue: queue)
        NSFileCoordinator.addFilePresenter(presenter)
        defer { NSFileCoordinator.removeFilePresenter(presenter) }
        #expect(Self.write(file, on: queue) == nil)
    }
}
