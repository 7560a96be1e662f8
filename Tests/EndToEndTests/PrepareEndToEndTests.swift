// prepare(forReadingItemsAt:…byAccessor:) as Apple documents it (issue 30; docs/SEMANTICS.md, "prepare and its
// completion handler"): the call returns when its batch block returns; the items stay claimed until the completion
// handler is called, from any thread, the main queue included.

import Foundation
import Testing

@Suite(.timeLimit(.minutes(1)))
struct PrepareEndToEndTests {
    @Test("A writer in another process waits for the batch until its handler is called from another thread")
    func aWriterWaitsUntilTheHandlerIsCalled() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "one")
            let app = try await env.host("app")
            let other = try await env.host("other")
            try await app.present("P", doc)

            // The call returns although the handler is still to be called.
            try app.send("prepare \(doc) write")
            try await app.waitFor("batch prepare \(doc)")
            try await app.waitFor("returned prepare \(doc)")
            #expect(!app.lines.contains { $0.text.hasPrefix("failed prepare") }, "\(app.lines.map(\.text))")
            try await app.waitFor("presenter P relinquishToWriter")

            // The batch still holds the item: the other process's write waits for it.
            try other.send("write \(doc) two")
            #expect(try await other.staysWithout("granted write"), "the write went past an uncompleted batch")

            // fcdump shows the batch as waiting for its handler, with its age, and the write blocked by it.
            let json = try await env.runTool("fcdump", ["--json"])
            #expect(json.status == 0, "fcdump --json failed: \(json.error)")
            let dump = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
            let claims = try #require(dump["claims"] as? [[String: Any]])
            let batch = try #require(claims.first { $0["isPreparation"] as? Bool == true }, "\(claims)")
            let write = try #require(claims.first { $0["phase"] as? String == "waiting" }, "\(claims)")
            #expect(batch["phase"] as? String == "granted")
            #expect((batch["waitingForHandlerSeconds"] as? Double ?? -1) >= 0.3, "\(batch)")
            #expect(write["blockedBy"] as? [Int] == [try #require(batch["id"] as? Int)], "\(write)")
            #expect(write["waitingForHandlerSeconds"] is NSNull, "\(write)")
            let text = try await env.runTool("fcdump", [])
            #expect(text.output.contains("waiting for its completion handler for "), "\(text.output)")

            // The handler, called on the thread that reads the host's input, ends the batch: the write proceeds.
            try app.send("complete")
            try await app.waitFor("completed prepare")
            try await other.waitFor("done write \(doc)")
            #expect(try String(contentsOfFile: doc, encoding: .utf8) == "two")
            try await app.waitFor("presenter P reacquire")
        }
    }

    @Test("The handler called from the main queue after prepare returned on the main thread does not deadlock")
    func handlerOnTheMainQueueAfterPrepareOnTheMainThread() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "one")
            let app = try await env.host("app")
            let other = try await env.host("other")
            try app.send("main prepare \(doc) main-complete")
            try await app.waitFor("returned prepare \(doc)")
            try await app.waitFor("completed prepare \(doc)")
            // The batch is over: another process writes at once.
            try other.send("write \(doc) two")
            try await other.waitFor("done write \(doc)")
            #expect(!app.lines.contains { $0.text.hasPrefix("failed") }, "\(app.lines.map(\.text))")
        }
    }

    @Test("A handler that is never called ends the batch when it is released, with a warning naming the items")
    func aHandlerNeverCalledEndsTheBatchWhenReleased() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "one")
            let app = try await env.host("app")
            let other = try await env.host("other")
            try app.send("prepare \(doc) write drop")
            try await app.waitFor("returned prepare \(doc)")
            try other.send("write \(doc) two")
            try await other.waitFor("done write \(doc)")
            try await eventually("the warning in the app's log:\n\(app.standardError())") {
                app.standardError().contains("was released without being called")
                    && app.standardError().contains("write \(doc)")
            }
        }
    }
}
