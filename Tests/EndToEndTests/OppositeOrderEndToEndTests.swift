// Two processes taking the same two items in opposite order through the two-URL methods: the arbiter grants a
// multi-item claim all at once or not at all, so the classic lock-ordering deadlock cannot happen (docs/SEMANTICS.md
// §2).

import Foundation
import Testing

@Suite(.timeLimit(.minutes(1)))
struct OppositeOrderEndToEndTests {
    @Test("Opposite-order two-URL writes from two processes: one waits for the other, none deadlocks")
    func oppositeOrderTwoURLWritesNeverDeadlock() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            let x = try env.file("x.txt", "x")
            let y = try env.file("y.txt", "y")
            let a = try await env.host("A")
            let b = try await env.host("B")

            // A holds both; B, asking for them the other way round, waits for all of A's claim, not half of it.
            try a.send("write2 \(x) \(y) hold")
            try await a.waitFor("holding write2 \(x)")
            try b.send("write2 \(y) \(x)")
            #expect(try await b.staysWithout("granted write2"), "B was granted while A held both items")
            try a.send("release")
            try await a.waitFor("done write2 \(x)")
            try await b.waitFor("done write2 \(y)")

            // Many rounds at once from both sides, each call on its own thread.
            let rounds = 40
            for _ in 0..<rounds {
                try a.send("write2 \(x) \(y)")
                try b.send("write2 \(y) \(x)")
            }
            try await a.waitFor("done write2 \(x)", count: rounds + 1)
            try await b.waitFor("done write2 \(y)", count: rounds + 1)
            #expect(!(a.lines + b.lines).contains { $0.text.hasPrefix("failed") })
            #expect(!daemon.log().contains("deadlock found"))

            let json = try await env.runTool("fcdump", ["--json"])
            let dump = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
            let statistics = try #require(dump["statistics"] as? [String: Any])
            #expect(statistics["deadlocksBroken"] as? Int == 0)
            #expect((dump["claims"] as? [Any])?.isEmpty == true, "claims left: \(json.output)")
        }
    }
}
