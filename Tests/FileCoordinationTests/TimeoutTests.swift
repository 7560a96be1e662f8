import Dispatch
import FileCoordination
import Foundation
import Testing

/// A caller's own deadline (`NSFileCoordinator.timeout`; docs/SEMANTICS.md §6): a call still waiting when it is up
/// returns without running its accessor, with `timedOut` and what it waited for.
@Suite struct TimeoutTests {
    /// Holds a coordinated write of `file` on another thread until `release` is signalled.
    static func holdWrite(_ file: URL, until release: DispatchSemaphore) -> DispatchSemaphore {
        let holding = DispatchSemaphore(value: 0)
        Thread {
            var error: NSError?
            NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in
                holding.signal()
                _ = release.wait(timeout: .now() + 20)
            }
        }
        .start()
        return holding
    }

    @Test func aSynchronousReadStillWaitingAtItsTimeoutFailsWithoutRunning() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        #expect(Self.holdWrite(file, until: release).wait(timeout: .now() + 10) == .success)
        let coordinator = NSFileCoordinator()
        coordinator.timeout = .milliseconds(300)
        var error: NSError?
        var ran = false
        let start = ContinuousClock.now
        coordinator.coordinate(readingItemAt: file, options: [], error: &error) { _ in ran = true }
        let waited = ContinuousClock.now - start
        #expect(!ran)
        let failure = try #require(error)
        #expect(failure.domain == FileCoordinationError.errorDomain)
        #expect(failure.code == FileCoordinationError.Code.timedOut.rawValue)
        #expect(failure.localizedDescription.contains("was not granted within its timeout of 0.300 s"))
        #expect(failure.localizedDescription.contains("which is granted"), "\(failure.localizedDescription)")
        // Not before the timeout; the bound above it only catches a hang.
        #expect(waited >= .milliseconds(300) && waited < .seconds(10))
    }

    @Test func aCallGrantedInTimeRunsAsUsual() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let coordinator = NSFileCoordinator()
        coordinator.timeout = .seconds(30)
        var error: NSError?
        var ran = false
        coordinator.coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(ran && error == nil)
        #expect(coordinator.timeout == .seconds(30))
    }

    @Test func theItemIsFreeAfterATimedOutCall() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let release = DispatchSemaphore(value: 0)
        #expect(Self.holdWrite(file, until: release).wait(timeout: .now() + 10) == .success)
        let coordinator = NSFileCoordinator()
        coordinator.timeout = .milliseconds(100)
        var error: NSError?
        coordinator.coordinate(writingItemAt: file, options: [], error: &error) { _ in }
        #expect(error?.code == FileCoordinationError.Code.timedOut.rawValue)
        release.signal()
        // The timed-out claim left nothing behind: a new write is granted.
        var second: NSError?
        var ran = false
        NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &second) { _ in ran = true }
        #expect(ran && second == nil)
    }
}
