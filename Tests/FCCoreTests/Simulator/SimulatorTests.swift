import FCCore
import Foundation
import Testing

/// Runs the seeded simulator (Simulation.swift).
///
/// - `FC_SIM_SCHEDULES`: how many schedules in all (default 10,000, what CI runs), split over four shards that
///   Swift Testing runs in parallel.
/// - `FC_SIM_STEPS`: random steps per schedule before the drain (default 80).
/// - `FC_SIM_BASE_SEED`: the first seed (default fixed, so CI is deterministic).
/// - `FC_SIM_SEED`: replay one seed alone and print its full trace.
///
/// Replay a failure: `FC_SIM_SEED=<seed> swift test --filter SimulatorTests`.
@Suite struct SimulatorTests {
    static let shards = 4
    static let environment = ProcessInfo.processInfo.environment
    static let steps = environment["FC_SIM_STEPS"].flatMap(Int.init) ?? 80

    @Test(arguments: 0..<shards)
    func randomSchedulesKeepEveryInvariant(shard: Int) {
        guard Self.environment["FC_SIM_SEED"] == nil else { return }
        let schedules = Self.environment["FC_SIM_SCHEDULES"].flatMap(Int.init) ?? 10_000
        let base = Self.environment["FC_SIM_BASE_SEED"].flatMap(UInt64.init) ?? 0x5EED_0000
        var ran = 0
        for index in stride(from: shard, to: schedules, by: Self.shards) {
            var simulation = Simulation(seed: base + UInt64(index), steps: Self.steps)
            do {
                try simulation.run()
            } catch {
                Issue.record(
                    "simulator: \(error)\nreplay: FC_SIM_SEED=\(error.seed) swift test --filter SimulatorTests"
                )
                return
            }
            ran += 1
        }
        print("simulator shard \(shard): \(ran) schedules of \(Self.steps) steps kept every invariant")
    }

    @Test func replayOneSeed() {
        guard let seed = Self.environment["FC_SIM_SEED"].flatMap(UInt64.init) else { return }
        var simulation = Simulation(seed: seed, steps: Self.steps, recordTrace: true)
        do {
            try simulation.run()
            print(simulation.trace.joined(separator: "\n"))
            print("simulator: seed \(seed) passed")
        } catch {
            print(error.trace.joined(separator: "\n"))
            Issue.record("simulator: \(error)")
        }
    }

    /// The same seed gives the same schedule: what makes a printed seed worth replaying.
    @Test func aSeedReplaysExactly() throws {
        var first = Simulation(seed: 42, steps: Self.steps, recordTrace: true)
        var second = Simulation(seed: 42, steps: Self.steps, recordTrace: true)
        try first.run()
        try second.run()
        #expect(first.trace == second.trace)
        #expect(first.trace.count > 10)
    }
}
