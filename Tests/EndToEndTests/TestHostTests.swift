import Foundation
import Testing

// The test host itself (issue 11.8): what the other tests rely on must hold.

@Suite struct TestHostTests {
    @Test("A held write that fails leaves nothing to release: the next held write needs one release")
    func failedHoldLeavesNoReleaseBehind() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let file = try env.file("doc.txt", "text")
            let presenter = try await env.host("P")
            try await presenter.present("R", file, "refuse-save")
            let writer = try await env.host("W")
            // A merging write asks the presenter to save; it refuses, so the write fails without holding.
            try writer.send("write \(file) merged merging hold")
            _ = try await writer.waitFor("failed write \(file)")
            try writer.send("write \(file) second hold")
            _ = try await writer.waitFor("holding write \(file)")
            try writer.send("release")
            // Before, the failed write's semaphore was released instead, and this write kept holding.
            _ = try await writer.waitFor("done write \(file)")
        }
    }
}
