import FileCoordination
import Foundation
import Testing

/// hydrixos/DeadlockExample in one process: two presenters of one file on serial queues, each making a coordinated
/// read inside `presentedItemDidChange`. Apple's daemon hangs forever; here one read fails with the deadlock error,
/// the other completes, and both queues run on (SEMANTICS.md §6).
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
        try Data("xy".utf8).write(to: file)
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
            try? Data("abc".utf8).write(to: url)
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
            #expect(failure.localizedDescription.contains("queue is held by its own callback"))
        }
        // Both queues run on.
        for presenter in [a, b] {
            let ran = DispatchSemaphore(value: 0)
            presenter.presentedItemOperationQueue.addOperation { ran.signal() }
            #expect(ran.wait(timeout: .now() + 5) == .success)
        }
    }
}
