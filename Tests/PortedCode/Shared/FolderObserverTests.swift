// The folder observer of Shared/FolderObserver.swift hears its folder's changes through `presentedItemDidChange()`
// alone, as on macOS (issue 37): a coordinated write of a new file, a coordinated write of an existing one, a
// coordinated move inside the folder, and an uncoordinated write seen by the daemon's watcher.

import Foundation
import Testing

#if canImport(FileCoordination)
import FileCoordination
#endif

@Suite(.serialized)
struct FolderObserverTests {
    /// Counts the observer's calls and waits for the next one.
    final class Changes: @unchecked Sendable {
        private let condition = NSCondition()
        private var count = 0

        func record() {
            condition.lock()
            count += 1
            condition.broadcast()
            condition.unlock()
        }

        /// The count once no call came for 300 ms: a step's calls are all in before the next step starts.
        func settled() -> Int {
            condition.lock()
            defer { condition.unlock() }
            while condition.wait(until: Date(timeIntervalSinceNow: 0.3)) {}
            return count
        }

        /// Waits until more than `seen` calls were counted (or 10 s passed); returns the count.
        func wait(past seen: Int) -> Int {
            let deadline = Date(timeIntervalSinceNow: 10)
            condition.lock()
            defer { condition.unlock() }
            while count <= seen && condition.wait(until: deadline) {}
            return count
        }
    }

    private func write(_ text: String, to url: URL, options: NSFileCoordinator.WritingOptions = []) {
        var error: NSError?
        let mover = NSFileCoordinator(filePresenter: nil)
        mover.coordinate(writingItemAt: url, options: options, error: &error) { url in
            try? text.write(to: url, atomically: false, encoding: .utf8)
        }
    }

    /// Runs `body` on a thread of its own and waits without blocking a thread of Swift's pool: the library's default
    /// completion-handler callbacks (here `accommodatePresentedSubitemDeletion`, which this observer does not
    /// implement) run their `async` forms on that pool, which blocked tests on a 2-core machine would exhaust.
    private func onOwnThread(_ body: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            Thread {
                do {
                    try body()
                    done.resume()
                } catch {
                    done.resume(throwing: error)
                }
            }.start()
        }
    }

    @Test func aFolderObserverHearsWritesCreationsMovesAndUncoordinatedChanges() async throws {
        try await onOwnThread { try self.observe() }
    }

    private func observe() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("observed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let existing = folder.appendingPathComponent("existing.txt")
        try "old".write(to: existing, atomically: false, encoding: .utf8)
        let changes = Changes()
        let observer = FolderObserver(folder: folder) { changes.record() }
        defer { observer.stop() }

        var seen = 0
        write("new", to: folder.appendingPathComponent("new.txt"))
        #expect(changes.wait(past: seen) > seen, "a coordinated creation in the folder")
        seen = changes.settled()

        write("changed", to: existing)
        #expect(changes.wait(past: seen) > seen, "a coordinated write of a file in the folder")
        seen = changes.settled()

        let source = folder.appendingPathComponent("new.txt")
        let destination = folder.appendingPathComponent("renamed.txt")
        var error: NSError?
        let mover = NSFileCoordinator(filePresenter: nil)
        mover.coordinate(
            writingItemAt: source,
            options: .forMoving,
            writingItemAt: destination,
            options: .forReplacing,
            error: &error
        ) { from, to in
            try? FileManager.default.moveItem(at: from, to: to)
            mover.item(at: from, didMoveTo: to)
        }
        #expect(error == nil)
        #expect(changes.wait(past: seen) > seen, "a coordinated move inside the folder")
        seen = changes.settled()

        // Uncoordinated: only the daemon's watcher sees it (in process, nobody does: docs/SEMANTICS.md §9).
        if ProcessInfo.processInfo.environment["FILECOORD_ARBITER"] != "in-process" {
            let handle = try FileHandle(forWritingTo: existing)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(" and more".utf8))
            try handle.close()
            #expect(changes.wait(past: seen) > seen, "an uncoordinated write of a file in the folder")
        }
    }
}
