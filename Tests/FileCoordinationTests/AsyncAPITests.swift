import FileCoordination
import Foundation
import Testing

/// The Swift-concurrency conveniences: `read(at:)`, `write(at:)` and `FilePresenterEvents`.
@Suite struct AsyncAPITests {
    private static func temporaryFile(_ contents: String = "one") throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fc-async-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("note.txt")
        try Data(contents.utf8).writeClosingOnExec(to: file)
        return file
    }

    @Test func readReturnsTheAccessorsValue() async throws {
        let file = try Self.temporaryFile("hello")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let text = try await NSFileCoordinator().read(at: file) { url in try String(contentsOf: url, encoding: .utf8) }
        #expect(text == "hello")
    }

    @Test func writeIsReportedToAnEventStreamPresenter() async throws {
        let file = try Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let events = FilePresenterEvents(url: file)
        NSFileCoordinator.addFilePresenter(events)
        try await NSFileCoordinator().write(at: file) { url in try Data("two".utf8).writeClosingOnExec(to: url) }
        var seen: [FilePresenterEvent] = []
        for await event in events {
            seen.append(event)
            if seen.count == 3 { break }
        }
        NSFileCoordinator.removeFilePresenter(events)
        events.finish()
        #expect(seen == [.relinquishedToWriter, .changed, .reacquired])
    }

    @Test func aWriteStillWaitingAtItsTimeoutThrowsTimedOut() async throws {
        let file = try Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        #expect(TimeoutTests.holdWrite(file, until: release).wait(timeout: .now() + 10) == .success)
        let ran = AsyncTestFlag()
        do {
            try await NSFileCoordinator().write(at: file, timeout: .milliseconds(200)) { _ in ran.set() }
            Issue.record("the write did not time out")
        } catch let error as FileCoordinationError {
            #expect(error.code == .timedOut)
            #expect(error.message.contains("within its timeout of 0.200 s"), "\(error.message)")
        }
        #expect(!ran.value)
    }

    @Test func cancellingTheTaskWhileItWaitsThrowsUserCancelled() async throws {
        let file = try Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            var error: NSError?
            NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in
                holding.signal()
                // Held until the task's result is in, however late the task starts: a busy cooperative pool can
                // start it after any short hold would have ended, and the read would then rightly be granted.
                _ = release.wait(timeout: .now() + 300)
            }
        }
        holder.start()
        #expect(holding.wait(timeout: .now() + 10) == .success)
        let ran = AsyncTestFlag()
        let task = Task {
            try await NSFileCoordinator().read(at: file) { _ in ran.set() }
        }
        // Cancelled while it waits or before it starts: either way its claim is cancelled, never granted.
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        let result = await task.result
        release.signal()
        #expect(!ran.value)
        #expect(throws: CocoaError.self) { try result.get() }
        if case .failure(let error as CocoaError) = result { #expect(error.code == .userCancelled) }
    }

    @Test func aNonFileURLIsRefusedWithAClearError() async throws {
        let url = try #require(URL(string: "https://example.com/doc.txt"))
        await #expect {
            try await NSFileCoordinator().read(at: url) { _ in 1 }
        } throws: { error in
            (error as? FileCoordinationError)?.code == .unsupportedURL
        }
    }
}

/// A flag set from any thread.
final class AsyncTestFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var isSet = false
    func set() { lock.withLock { isSet = true } }
    var value: Bool { lock.withLock { isSet } }
}
