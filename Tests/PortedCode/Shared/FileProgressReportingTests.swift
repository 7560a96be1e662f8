// The reporter and observer of Shared/FileProgressReporting.swift, through the daemon (issue 44): the observer is
// handed the download, follows it to the end, cancels a second one, and hears each end.

import Foundation
import Testing

#if canImport(FileCoordination)
import FileCoordination
#endif

@Suite(.serialized)
struct FileProgressReportingTests {
    /// What the observer saw, read from the test's thread.
    final class Seen: @unchecked Sendable {
        private let condition = NSCondition()
        private var proxies: [Progress] = []
        private var ended: [String] = []

        func handed(_ progress: Progress) {
            condition.lock()
            proxies.append(progress)
            condition.broadcast()
            condition.unlock()
        }

        func end(_ url: URL?) {
            condition.lock()
            ended.append(url?.lastPathComponent ?? "?")
            condition.broadcast()
            condition.unlock()
        }

        /// The newest proxy handed.
        var last: Progress? {
            condition.lock()
            defer { condition.unlock() }
            return proxies.last
        }

        /// Waits (10 s at most) until `done` holds of the proxies and the ended names.
        func wait(_ done: ([Progress], [String]) -> Bool) -> Bool {
            let deadline = Date(timeIntervalSinceNow: 10)
            condition.lock()
            defer { condition.unlock() }
            while !done(proxies, ended) {
                // Proxies change on the library's queue without a signal: look again every 10 ms.
                if !condition.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.01))) && Date() >= deadline {
                    return done(proxies, ended)
                }
            }
            return true
        }
    }

    @Test func anObserverFollowsADownloadAndCancelsAnother() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ported-progress-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let seen = Seen()
        let observer = FolderProgressObserver()
        observer.start(folder: folder, onProgress: seen.handed, onEnd: seen.end)
        defer { observer.stop() }

        let first = DownloadReporter(fileURL: folder.appendingPathComponent("a.bin"), byteCount: 1000)
        #expect(seen.wait { proxies, _ in proxies.count == 1 })
        first.received(400)
        first.received(600)
        #expect(seen.wait { proxies, _ in proxies.first?.completedUnitCount == 1000 })
        #expect(seen.wait { proxies, _ in proxies.first?.fileOperationKind == .downloading })
        first.finish()
        #expect(seen.wait { _, ended in ended == ["a.bin"] })

        let second = DownloadReporter(fileURL: folder.appendingPathComponent("b.bin"), byteCount: 10)
        #expect(seen.wait { proxies, _ in proxies.count == 2 })
        seen.last?.cancel()
        #expect(Self.eventually { second.wasCancelled })
        second.finish()
        #expect(seen.wait { _, ended in ended == ["a.bin", "b.bin"] })
    }

    private static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        while !condition() {
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }
}
