// The main-queue deadlock (docs/SEMANTICS.md §6): an app whose presenter runs on OperationQueue.main makes a
// coordinated write of the presented file on the main thread. The presenter cannot relinquish until the main thread
// returns, which waits for the presenter: Apple's daemon hangs here; ours fails the write with the cycle.

import Foundation
import Testing

@Suite(.timeLimit(.minutes(1)))
struct MainQueueEndToEndTests {
    @Test("A coordinated write on the main thread to a presenter on the main queue fails with the cycle")
    func writeOnTheMainThreadToAMainQueuePresenterIsBroken() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "one")
            let app = try await env.host("app")
            let other = try await env.host("other")
            try await app.present("P", doc, "main-queue")

            let start = ContinuousClock.now
            try app.send("main write \(doc) two")
            let failure = try await app.waitFor("failed write \(doc)")
            let elapsed = ContinuousClock.now - start
            #expect(failure.text.contains("FileCoordinationErrorDomain 3 "), "\(failure.text)")
            // Found by the detector (its error, its report below) after its delay (1 s): without it the write would hang
            // (no presenter timeout here). The margin is wide for a loaded machine (10 s seen on CI, stop 53, with the
            // suite at its peak).
            #expect(elapsed < .seconds(25), "the deadlock took \(elapsed) to break")
            let report = app.lines.map(\.text).joined(separator: "\n")
            #expect(report.contains("deadlock found"), "\(report)")
            #expect(report.contains("is held by a coordinated call made on it"), "\(report)")
            #expect(report.contains("pid \(app.pid)"), "\(report)")
            // The failed write's accessor never ran.
            #expect(try String(contentsOfFile: doc, encoding: .utf8) == "one")

            // The main queue runs on: the presenter gets the request it could not answer, then answers a write
            // from another process, which completes.
            try await app.waitFor("presenter P relinquishToWriter")
            try other.send("write \(doc) three")
            try await other.waitFor("done write \(doc)")
            try await app.waitFor("presenter P relinquishToWriter", count: 2)
            #expect(try String(contentsOfFile: doc, encoding: .utf8) == "three")
        }
    }

    @Test("The same write from another thread of that app is no deadlock: the presenter relinquishes")
    func writeFromAnotherThreadOfTheAppIsGranted() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            let doc = try env.file("doc.txt", "one")
            let app = try await env.host("app")
            try await app.present("P", doc, "main-queue")
            try app.send("write \(doc) two")
            try await app.waitFor("done write \(doc)")
            #expect(app.presenterEvents("P").first == "relinquishToWriter")
            #expect(!app.lines.contains { $0.text.hasPrefix("failed") })
            #expect(!daemon.log().contains("deadlock found"))

            // fcdump shows which presenters share a serial queue (the main queue here), and which do not.
            try await app.present("Q", try env.file("other.txt", "x"), "main-queue")
            try await app.present("R", try env.file("third.txt", "x"))
            let tree = try await env.runTool("fcdump", [])
            #expect(
                tree.output.components(separatedBy: "queue shared with presenter#").count - 1 == 2,
                "\(tree.output)"
            )
        }
    }
}
