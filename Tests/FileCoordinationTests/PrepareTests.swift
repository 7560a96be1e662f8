import Dispatch
import Foundation
import Logging
import Testing

@testable import FileCoordination

/// `prepare(forReadingItemsAt:…byAccessor:)` and its completion handler (issue 30; docs/SEMANTICS.md, "prepare and
/// its completion handler"): the call returns when the batch block returns, the batch lasts until the handler is
/// called, from any thread, once, and a handler released uncalled ends it with a warning.
@Suite(.timeLimit(.minutes(1))) struct PrepareTests {
    @Test func aWriterWaitsForTheBatchUntilItsHandlerIsCalledFromAnotherThread() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt", "one")
        let coordinator = NSFileCoordinator()
        var kept: (@Sendable () -> Void)?
        var error: NSError?
        coordinator.prepare(forReadingItemsAt: [], options: [], writingItemsAt: [file], options: [], error: &error) {
            completionHandler in kept = completionHandler
        }
        #expect(error == nil)
        let handler = try #require(kept)

        // Another coordinator's write waits for the batch: its own deadline passes first.
        let blocked = NSFileCoordinator()
        blocked.timeout = .milliseconds(300)
        var ran = false
        blocked.coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(!ran)
        #expect(error?.code == FileCoordinationError.Code.timedOut.rawValue, "\(String(describing: error))")

        // The batch's own coordinator, on another thread after prepare returned, is part of the batch.
        let nested = spawn {
            var nestedError: NSError?
            coordinator.coordinate(writingItemAt: file, options: [], error: &nestedError) { url in
                try? Data("nested".utf8).writeClosingOnExec(to: url)
            }
            #expect(nestedError == nil)
        }
        #expect(nested.wait(seconds: patience), "a call of the batch's coordinator waited for its own batch")

        // A write waiting for the batch proceeds once the handler is called, from yet another thread.
        let writer = spawn {
            var writeError: NSError?
            NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &writeError) { url in
                try? Data("two".utf8).writeClosingOnExec(to: url)
            }
            #expect(writeError == nil)
        }
        #expect(writer.staysUnsignalled(), "the write went past a batch whose handler was not called")
        spawn { handler() }
        #expect(writer.wait(seconds: patience))
        #expect(try String(contentsOf: file, encoding: .utf8) == "two")
        // A second call does nothing (the batch is over; another batch on the item is not ended by it).
        handler()
        var second: (@Sendable () -> Void)?
        coordinator.prepare(forReadingItemsAt: [], options: [], writingItemsAt: [file], options: [], error: &error) {
            completionHandler in second = completionHandler
        }
        handler()
        blocked.coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(!ran, "an old handler called again ended a newer batch")
        second?()
    }

    @Test(arguments: InjectedClientTests.Arbiter.allCases)
    func aHandlerReleasedUncalledEndsTheBatchWithAWarning(_ arbiter: InjectedClientTests.Arbiter) throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt", "one")
        let log = LogCapture()
        let (client, other, stop) = try InjectedClientTests.clients(arbiter, logger: log.logger)
        defer { stop() }
        client.batchHandlerWarningDelay = .milliseconds(50)

        // Kept and not called: a warning names the batch after the delay; the item stays claimed.
        let coordinator = NSFileCoordinator(filePresenter: nil, client: client)
        coordinator.purposeIdentifier = "batch-under-test"
        let kept = Locked<(@Sendable () -> Void)?>(nil)
        var error: NSError?
        coordinator.prepare(forReadingItemsAt: [file], options: [], writingItemsAt: [], options: [], error: &error) {
            completionHandler in kept.set(completionHandler)
        }
        #expect(error == nil)
        #expect(log.wait(for: "has not been called"), "\(log.lines)")
        #expect(log.lines.contains { $0.contains("batch-under-test") && $0.contains("read \(file.path)") })
        let writer = NSFileCoordinator(filePresenter: nil, client: other)
        writer.timeout = .milliseconds(200)
        var ran = false
        writer.coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(!ran, "a write went past a batch whose handler is kept")

        // Released without being called: the batch ends, with a warning naming the purpose and the items.
        kept.set(nil)
        #expect(log.wait(for: "released without being called"), "\(log.lines)")
        #expect(log.lines.contains { $0.contains("released") && $0.contains("batch-under-test") })
        writer.timeout = .seconds(patience)
        writer.coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(ran)
        #expect(error == nil)

        // A block that drops its handler at once: prepare returns and the items are free.
        coordinator.prepare(forReadingItemsAt: [], options: [], writingItemsAt: [file], options: [], error: &error) {
            _ in
        }
        ran = false
        writer.coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(ran)
        #expect(log.lines.filter { $0.contains("released without being called") }.count == 2)
    }
}

/// Log lines a client wrote, for tests that check its warnings.
final class LogCapture: @unchecked Sendable {
    private let condition = NSCondition()
    private var captured: [String] = []

    var lines: [String] { condition.withLock { captured } }

    /// A logger whose messages (with their metadata) land here.
    var logger: @Sendable () -> Logger {
        let handler = Handler(capture: self)
        return { Logger(label: "test") { _ in handler } }
    }

    fileprivate func append(_ line: String) {
        condition.withLock {
            captured.append(line)
            condition.broadcast()
        }
    }

    /// Waits (bounded) until a line contains `text`.
    func wait(for text: String) -> Bool {
        let deadline = Date(timeIntervalSinceNow: patience)
        return condition.withLock {
            while !captured.contains(where: { $0.contains(text) }) {
                if !condition.wait(until: deadline) { return false }
            }
            return true
        }
    }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            capture.append("\(event.level) \(event.message) \(event.metadata ?? [:])")
        }
    }
}
