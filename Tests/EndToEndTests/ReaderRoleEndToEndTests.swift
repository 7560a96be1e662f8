import Foundation
import Testing

// Issue 12, the reader role, and issue 38, one reader per connection (docs/ARCHITECTURE.md §8.1): a caller blocked in
// a synchronous call reads its own reply, in every configuration. Without leases and presenters the connection's
// listener thread only watches for the connection's end and sleeps through every claim; with leases on (the default)
// or a presenter it watches for data too, but reads only what no caller reads, and a reply its caller reads wakes it
// at most once per back-off. Measured in an fc-testhost of its own (`listener-wakeups`), so that no other test's
// presenter or claim can wake its listener; the control, reads through the intents API (whose replies no caller
// reads), shows that the measurement sees the listener's wake-ups and frames when there are any.

@Suite struct ReaderRoleEndToEndTests {
    /// Reads per phase: enough that a listener woken once per reply is unmistakable.
    static let reads = 200

    /// What `listener-wakeups` reported.
    struct Measurement {
        var idle: Int
        var presenting: Int
        var idleFrames: Int
        var presentingFrames: Int
        var control: Int
        var controlFrames: Int
    }

    /// Runs `listener-wakeups` in a new host with `environment`, against a daemon started with `daemonArguments`.
    static func measure(
        in env: TestEnvironment,
        environment: [String: String],
        daemonArguments: [String] = []
    ) async throws -> Measurement? {
        _ = try await env.startDaemon(arguments: daemonArguments)
        let file = try env.file("read.txt", "text")
        let other = try env.file("presented.txt", "text")
        let host = try await env.host("R", environment: environment)
        try host.send("listener-wakeups \(file) \(other) \(Self.reads)")
        let line = try await host.waitFor(
            lineMatching: { $0.hasPrefix("listener-wakeups ") || $0.hasPrefix("failed listener-wakeups") },
            "with the listener's wake-ups",
            timeout: .seconds(60)
        )
        // `listener-wakeups idle I presenting P reads N frames FI FP control C FC`
        let words = line.text.split(separator: " ").map(String.init)
        guard words.count == 13, words[0] == "listener-wakeups", let idle = Int(words[2]),
            let presenting = Int(words[4]), let idleFrames = Int(words[8]), let presentingFrames = Int(words[9]),
            let control = Int(words[11]), let controlFrames = Int(words[12])
        else {
            Issue.record("unexpected answer: \(line.text)")
            return nil
        }
        return Measurement(
            idle: idle,
            presenting: presenting,
            idleFrames: idleFrames,
            presentingFrames: presentingFrames,
            control: control,
            controlFrames: controlFrames
        )
    }

    /// The control of both tests: reads whose replies no caller reads wake the listener, which reads each.
    static func expectControl(_ seen: Measurement) {
        #expect(
            seen.control >= Self.reads / 2 && seen.controlFrames >= Self.reads / 2,
            "through the intents API, the listener woke \(seen.control) times and read \(seen.controlFrames) frames"
        )
    }

    @Test("Without leases or presenters, uncontended synchronous reads do not wake the listener")
    func readsDoNotWakeTheListenerWithoutPresenters() async throws {
        try await TestEnvironment.run { env in
            guard let seen = try await Self.measure(in: env, environment: ["FILECOORD_LEASES": "0"]) else { return }
            // Without the reader role the listener reads every grant: at least one wake-up per read. With it, the
            // listener sleeps in `poll` for a hang-up throughout (a few spare wake-ups are tolerated).
            #expect(seen.idle <= 10, "the listener woke \(seen.idle) times over \(Self.reads) reads without presenters")
            #expect(seen.idleFrames <= 10 && seen.presentingFrames <= 10, "frames read by the listener: \(seen)")
            Self.expectControl(seen)
        }
    }

    @Test("With leases on, the default, a blocked caller reads its own reply, with and without a presenter")
    func callersReadTheirRepliesWithLeasesOn() async throws {
        try await TestEnvironment.run { env in
            // The client answers recalls (the default); the daemon grants no lease, so that every read goes to it:
            // the path of a read in a folder no lease holds.
            guard
                let seen = try await Self.measure(
                    in: env,
                    environment: ["FILECOORD_LEASES": "1"],
                    daemonArguments: ["--no-leases"]
                )
            else { return }
            // Before issue 38 the listener read every frame while the client answered recalls, and woke the caller
            // through a semaphore: one frame per read at least. Now the caller reads its own grant; the listener
            // reads only a frame it found first (a few tolerated).
            #expect(
                seen.idleFrames <= 10,
                "the listener read \(seen.idleFrames) frames over \(Self.reads) reads without presenters"
            )
            #expect(
                seen.presentingFrames <= 10,
                "the listener read \(seen.presentingFrames) frames over \(Self.reads) reads with a presenter"
            )
            // How often the listener wakes here depends on how fast the reads come (woken by a reply its caller
            // reads, it looks again after its 5 ms back-off): a loaded machine's slow reads wake it about once each.
            // What it saves is a time, measured by the benchmarks (docs/ARCHITECTURE.md §8.1), not counted here.
            Self.expectControl(seen)
        }
    }
}
