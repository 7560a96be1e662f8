import Foundation
import Testing

// Issue 12, the reader role (docs/ARCHITECTURE.md §8.1): a caller blocked in a synchronous call reads its own reply,
// so with no presenter in the process the connection's listener thread only watches for the connection's end and
// sleeps through every claim. Measured in an fc-testhost of its own (`listener-wakeups`), so that no other test's
// presenter or claim can wake its listener.

@Suite struct ReaderRoleEndToEndTests {
    /// Reads per phase: enough that a listener woken once per reply is unmistakable.
    static let reads = 200

    @Test("With no presenter, uncontended synchronous reads do not wake the listener; with a presenter they do")
    func readsDoNotWakeTheListenerWithoutPresenters() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let file = try env.file("read.txt", "text")
            let other = try env.file("presented.txt", "text")
            // A client that answers lease recalls (FILECOORD_LEASES=1, issue 23) has its listener read all the time,
            // by design: this is about the client without leases.
            let host = try await env.host("R", environment: ["FILECOORD_LEASES": "0"])
            try host.send("listener-wakeups \(file) \(other) \(Self.reads)")
            let line = try await host.waitFor(
                lineMatching: { $0.hasPrefix("listener-wakeups ") || $0.hasPrefix("failed listener-wakeups") },
                "with the listener's wake-ups",
                timeout: .seconds(60)
            )
            // `listener-wakeups idle I presenting P reads N`
            let words = line.text.split(separator: " ").map(String.init)
            guard words.count == 7, words[0] == "listener-wakeups", let idle = Int(words[2]),
                let presenting = Int(words[4])
            else {
                Issue.record("unexpected answer: \(line.text)")
                return
            }
            // Without the reader role the listener reads every grant: at least one wake-up per read. With it, the
            // listener sleeps in `poll` for a hang-up throughout (a few spare wake-ups are tolerated).
            #expect(idle <= 10, "the listener woke \(idle) times over \(Self.reads) reads without presenters")
            // The control: once a presenter is registered the listener reads the replies, so the measurement sees
            // the listener's wake-ups when there are any.
            #expect(
                presenting >= Self.reads / 2,
                "the listener woke only \(presenting) times over \(Self.reads) reads with a presenter registered"
            )
        }
    }
}
