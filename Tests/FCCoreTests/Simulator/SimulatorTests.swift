import FCCore
import Foundation
import Testing

/// Runs the seeded simulator (Simulation.swift).
///
/// - `FC_SIM_SCHEDULES`: how many schedules in all (default 10,000, what CI runs), split over four shards that
///   Swift Testing runs in parallel. It must be a positive number: 0 or a bad value fails, so that a run that checked
///   nothing never passes.
/// - `FC_SIM_STEPS`: random steps per schedule before the drain (default 80).
/// - `FC_SIM_BASE_SEED`: the first seed (default fixed, so CI is deterministic).
/// - `FC_SIM_SEED`: replay one seed alone and print its full trace; the random schedules are then skipped (reported
///   as skipped). Unset, ``replayOneSeed()`` replays the first seed of the random schedules.
///
/// Replay a failure: `FC_SIM_SEED=<seed> swift test --filter SimulatorTests`.
@Suite struct SimulatorTests {
    static let shards = 4
    static let environment = ProcessInfo.processInfo.environment
    static let steps = environment["FC_SIM_STEPS"].flatMap(Int.init) ?? 80
    static let baseSeed = environment["FC_SIM_BASE_SEED"].flatMap(UInt64.init) ?? 0x5EED_0000

    @Test(
        .enabled(if: environment["FC_SIM_SEED"] == nil, "FC_SIM_SEED is set: only that seed is replayed"),
        arguments: 0..<shards
    )
    func randomSchedulesKeepEveryInvariant(shard: Int) throws {
        let setting = Self.environment["FC_SIM_SCHEDULES"]
        let schedules = try #require(
            setting.map { Int($0) } ?? 10_000,
            "FC_SIM_SCHEDULES=\(setting ?? "") is not a number of schedules"
        )
        try #require(schedules > 0, "FC_SIM_SCHEDULES=\(schedules): a run of no schedules checks nothing")
        var ran = 0
        var leases = (grants: 0, recalls: 0, inProcess: 0, declared: 0, kept: 0)
        var otherNamesWritten = 0
        var echoes = (laterChanges: 0, echoesRepeated: 0)
        var gates = (commands: 0, drained: 0, failedAtGate: 0)
        var holdsEnded = 0
        var nonblocking = (granted: 0, refused: 0)
        var lateEchoes = (late: 0, checked: 0, pastRetention: 0)
        var watchesAvailableAgain = 0
        var rekeys = (recalls: 0, claims: 0)
        var onePurposeLeases = 0
        var appearancesChecked = 0
        var deadlockChecks = (cycles: 0, acyclic: 0)
        for index in stride(from: shard, to: schedules, by: Self.shards) {
            var simulation = Simulation(seed: Self.baseSeed + UInt64(index), steps: Self.steps)
            defer {
                leases.grants += simulation.leaseCounts.grants
                leases.recalls += simulation.leaseCounts.recalls
                leases.inProcess += simulation.leaseCounts.inProcess
                leases.declared += simulation.leaseCounts.declared
                leases.kept += simulation.leaseCounts.kept
                otherNamesWritten += simulation.otherNamesWritten
                echoes.laterChanges += simulation.echoCounts.laterChanges
                echoes.echoesRepeated += simulation.echoCounts.echoesRepeated
                gates.commands += simulation.gateCounts.commands
                gates.drained += simulation.gateCounts.drained
                gates.failedAtGate += simulation.gateCounts.failedAtGate
                holdsEnded += simulation.holds.endedByRule
                nonblocking.granted += simulation.nonblocking.granted
                nonblocking.refused += simulation.nonblocking.refused
                lateEchoes.late += simulation.lag.counts.late
                lateEchoes.checked += simulation.lag.counts.checked
                lateEchoes.pastRetention += simulation.lag.counts.pastRetention
                watchesAvailableAgain += simulation.watchesAvailableAgain
                rekeys.recalls += simulation.rekeyCounts.recalls
                rekeys.claims += simulation.rekeyCounts.claims
                onePurposeLeases += simulation.onePurposeLeases
                appearancesChecked += simulation.appearances.checked
                deadlockChecks.cycles += simulation.deadlockChecks.cycles
                deadlockChecks.acyclic += simulation.deadlockChecks.acyclic
            }
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
        print(
            "simulator shard \(shard): \(ran) schedules of \(Self.steps) steps kept every invariant; leases: "
                + "\(leases.grants) granted, \(leases.recalls) recalled, \(leases.inProcess) claims in process, "
                + "\(leases.declared) declared on return or reconnection, \(leases.kept) holders' connections "
                + "closed by the host; \(otherNamesWritten) writes of files with other names reported; "
                + "\(echoes.laterChanges) changes after a write reported, \(echoes.echoesRepeated) write echoes repeated; "
                + "host gates: \(gates.commands) commands, \(gates.drained) drains ended, \(gates.failedAtGate) claims "
                + "failed at a gate; \(holdsEnded) claims ended past their hold limit; claims that must not wait: "
                + "\(nonblocking.granted) granted, \(nonblocking.refused) refused; \(lateEchoes.late) write echoes read "
                + "late, \(lateEchoes.checked) of them checked, \(lateEchoes.pastRetention) past the retention; "
                + "\(watchesAvailableAgain) presenters told a failed watch was added; keys changed under "
                + "\(rekeys.recalls) leases recalled at once, \(rekeys.claims) claims of their holders keyed anew; "
                + "\(onePurposeLeases) leases standing with their holder's one purpose; \(appearancesChecked) first "
                + "changes of new files checked against their appearance; deadlock checks: \(deadlockChecks.cycles) "
                + "with a cycle, \(deadlockChecks.acyclic) without"
        )
        // Issue 23: a run that never granted, recalled or returned a lease with claims running checked nothing of it.
        if schedules >= 400 {
            #expect(leases.grants > 0 && leases.recalls > 0 && leases.declared > 0 && leases.kept > 0)
            #expect(otherNamesWritten > 0, "issue 26: no ended write of a file with other names was reported")
            #expect(echoes.laterChanges > 0 && echoes.echoesRepeated > 0, "issue 37: no write echo was told apart")
            #expect(gates.drained > 0 && gates.failedAtGate > 0, "issue 40: no host gate drained or failed a claim")
            #expect(holdsEnded > 0, "issue 42: no claim ended past its hold limit")
            #expect(
                nonblocking.granted > 0 && nonblocking.refused > 0,
                "issue 43: no claim that must not wait was granted, or none refused"
            )
            #expect(lateEchoes.pastRetention > 0, "invariant 11: no write echo read past its retention was checked")
            #expect(watchesAvailableAgain > 0, "no presenter was told that a directory's failed watch was added")
            #expect(onePurposeLeases > 0, "no lease was granted to a client whose claims all have one purpose")
            #expect(appearancesChecked > 0, "invariant 13: no new file's first change was checked")
            #expect(deadlockChecks.cycles > 0, "invariant 14: no deadlock check met a cycle")
            #expect(
                rekeys.recalls > 0 && rekeys.claims > 0,
                "no lease was recalled when keys changed below it, or no claim of its holder was keyed anew"
            )
        }
    }

    /// Replays `FC_SIM_SEED` with its full trace printed; unset, the first seed of the random schedules (its trace
    /// printed only if it fails), so that this test always checks a schedule.
    @Test func replayOneSeed() throws {
        let setting = Self.environment["FC_SIM_SEED"]
        let seed = try #require(
            setting.map { UInt64($0) } ?? Self.baseSeed,
            "FC_SIM_SEED=\(setting ?? "") is not a seed"
        )
        var simulation = Simulation(seed: seed, steps: Self.steps, recordTrace: true)
        do {
            try simulation.run()
            if setting != nil { print(simulation.trace.joined(separator: "\n")) }
            print("simulator: seed \(seed) passed")
        } catch {
            print(error.trace.joined(separator: "\n"))
            Issue.record("simulator: \(error)")
        }
        #expect(simulation.trace.count > 10, "seed \(seed) ran no schedule")
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

/// Runs the seeded cluster simulator (ClusterSimulation.swift): several hosts, one model store, host leases.
///
/// - `FC_CLUSTER_SIM_SCHEDULES`: how many schedules (default 400, what CI runs), over four shards. 0 or a bad value
///   fails.
/// - `FC_CLUSTER_SIM_SEED`: replay one seed and print its trace.
@Suite struct ClusterSimulatorTests {
    static let shards = 4
    static let environment = ProcessInfo.processInfo.environment
    static let baseSeed: UInt64 = 0xC1_0000

    @Test(
        .enabled(
            if: environment["FC_CLUSTER_SIM_SEED"] == nil,
            "FC_CLUSTER_SIM_SEED is set: only that seed is replayed"
        ),
        arguments: 0..<shards
    )
    func randomSchedulesKeepMutualExclusionAcrossHosts(shard: Int) throws {
        let setting = Self.environment["FC_CLUSTER_SIM_SCHEDULES"]
        let schedules = try #require(setting.map { Int($0) } ?? 400, "FC_CLUSTER_SIM_SCHEDULES=\(setting ?? "")")
        try #require(schedules > 0, "FC_CLUSTER_SIM_SCHEDULES=\(schedules): a run of no schedules checks nothing")
        var total = ClusterSimulation.Counts()
        var ran = 0
        for index in stride(from: shard, to: schedules, by: Self.shards) {
            var simulation = ClusterSimulation(seed: Self.baseSeed + UInt64(index))
            do {
                try simulation.run()
            } catch {
                Issue.record(
                    Comment(
                        rawValue: "cluster simulator: \(error)\n" + error.trace.joined(separator: "\n")
                            + "\nreplay: FC_CLUSTER_SIM_SEED=\(error.seed) swift test --filter ClusterSimulatorTests"
                    )
                )
                return
            }
            total.grants += simulation.counts.grants
            total.handovers += simulation.counts.handovers
            total.fences += simulation.counts.fences
            total.lost += simulation.counts.lost
            total.failed += simulation.counts.failed
            total.deletedAtOnce += simulation.counts.deletedAtOnce
            ran += 1
        }
        print(
            "cluster simulator shard \(shard): \(ran) schedules kept every invariant; grants \(total.grants), "
                + "handovers between hosts \(total.handovers), fences \(total.fences), claims reported lost "
                + "\(total.lost), claims failed \(total.failed), keys deleted with others at one revision "
                + "\(total.deletedAtOnce)"
        )
        // A run that never handed a folder over, never fenced or never lost a claim checked nothing of the rules.
        #expect(ran == 0 || (total.handovers > 0 && total.fences > 0 && total.lost > 0 && total.failed > 0))
        #expect(ran < 50 || total.deletedAtOnce > 1, "no two keys of a folder were deleted at one revision")
    }

    @Test(.enabled(if: environment["FC_CLUSTER_SIM_SEED"] != nil, "set FC_CLUSTER_SIM_SEED to replay a seed"))
    func replayOneSeed() throws {
        let seed = try #require(Self.environment["FC_CLUSTER_SIM_SEED"].flatMap(UInt64.init))
        var simulation = ClusterSimulation(seed: seed)
        defer { print(simulation.trace.joined(separator: "\n")) }
        try simulation.run()
    }
}
