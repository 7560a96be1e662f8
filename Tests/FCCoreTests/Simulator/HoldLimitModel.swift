import FCCore
import FCTestSupport

/// Invariant 9 of the simulator (issue 42; docs/SEMANTICS.md §2 rule 8): a claim's longest hold.
///
/// In one seed of three some claims carry a ``ClaimRequest/maximumHold``, and the simulator fires their timers at
/// random (the host would when the time passes), and now and then one for a claim that has none or has ended (a late
/// timer, which must change nothing). Checked after every event:
/// - a claim with a limit ends before its timer fired only of its own accord (its client's finish or end, a host
///   gate's command); one the arbiter ends by itself had its timer fired, and a claim that was not granted waited for
///   it (conflicting, not exempt);
/// - no claim that is not granted waits for a granted claim whose limit passed, and no draining host gate does
///   (issue 40's gates, in the seeds that have both): it ended first.
struct HoldLimitModel {
    /// Granted claims whose limit's timer runs, from the arbiter's effects.
    private(set) var armed: Set<ClaimID> = []
    /// Granted claims whose limit passed.
    private(set) var overdue: Set<ClaimID> = []
    /// Claims ended by the rule, for the report.
    private(set) var endedByRule = 0

    /// Follows the arbiter's timers; returns the claims whose timer was cancelled (they ended).
    private mutating func record(_ effects: [ArbiterEffect]) -> [ClaimID] {
        var cancelled: [ClaimID] = []
        for effect in effects {
            switch effect {
            case .startTimer(.claimHoldLimit(let id), _): armed.insert(id)
            case .cancelTimer(.claimHoldLimit(let id)):
                armed.remove(id)
                cancelled.append(id)
            default: break
            }
        }
        return cancelled
    }

    /// Whether `event` ends `holder` of its own accord: its client's finish or end, or a host gate's command.
    private static func endsByItself(_ event: ArbiterEvent, _ holder: ClaimRequest) -> Bool {
        switch event {
        case .claimFinished(let id, _, _): return id == holder.id
        case .clientDisconnected(let client), .clientClosed(let client, _): return client == holder.client
        case .hostGate: return true  // a closing gate may report claims lost (issue 40)
        default: return false
        }
    }

    /// The timer to fire next: an armed one, or (one time in five) a late one for `late`.
    mutating func timerToFire(late: ClaimID?, using rng: inout SplitMix64) -> (ClaimID, due: Bool)? {
        if let late, armed.isEmpty || rng.chance(20) { return armed.contains(late) ? nil : (late, false) }
        guard let id = armed.sorted().randomElement(using: &rng) else { return nil }
        armed.remove(id)
        overdue.insert(id)
        return (id, true)
    }

    /// Whether a claim of `waiting` and `holder` conflict, by the spec or through one file's two names.
    private static func waitsFor(
        _ waiting: ArbiterSnapshot.Claim,
        _ holder: ArbiterSnapshot.Claim,
        packageExtensions: Set<[UInt8]>
    ) -> Bool {
        guard waiting.request.id != holder.request.id, !SpecModel.exempt(waiting.request, holder.request) else {
            return false
        }
        if SpecModel.conflict(waiting, holder, packageExtensions: packageExtensions) { return true }
        for a in waiting.request.items {
            for b in holder.request.items where a.identity != nil && a.identity == b.identity {
                if a.access.isWrite || b.access.isWrite { return true }
            }
        }
        return false
    }

    /// The checks after `event`, from the snapshots before it (`nil` when no claim was overdue) and after it.
    /// Returns the violations, and the claims the rule ended (as they were before the event).
    mutating func check(
        after event: ArbiterEvent,
        effects: [ArbiterEffect],
        requests: [ClaimID: ClaimRequest],
        before: ArbiterSnapshot?,
        drainingGatesBefore: Set<ClaimID>,
        arbiter: Arbiter,
        packageExtensions: Set<[UInt8]>
    ) -> (violations: [String], ended: [ArbiterSnapshot.Claim]) {
        var violations: [String] = []
        var ended: [ArbiterSnapshot.Claim] = []
        // A claim whose limit has not passed ends only of its own accord (its timer is cancelled then).
        for id in record(effects) where !overdue.contains(id) {
            guard let request = requests[id], !Self.endsByItself(event, request) else { continue }
            violations.append("\(id) ended before its hold limit passed, after \(event)")
        }
        let after = arbiter.snapshot()
        let live = Dictionary(after.claims.map { ($0.request.id, $0) }, uniquingKeysWith: { a, _ in a })
        for id in overdue.sorted() where live[id] == nil {
            overdue.remove(id)
            guard let before, let holder = before.claims.first(where: { $0.request.id == id }),
                !Self.endsByItself(event, holder.request)
            else { continue }
            endedByRule += 1
            ended.append(holder)
            // A move relocates waiting claims (rule 7) and adds the mover's new location to it: the mover's doing.
            if case .itemMoved = event { continue }
            // The claims that were not granted before the event (and the host gates that drained), where they were
            // then and where they are now, and a claim that arrived with it.
            var candidates = before.claims.filter {
                $0.phase != .granted || drainingGatesBefore.contains($0.request.id)
            }
            candidates += candidates.compactMap { live[$0.request.id] }
            if case .claimRequested(let request) = event, let arrived = live[request.id] { candidates.append(arrived) }
            if !candidates.contains(where: { Self.waitsFor($0, holder, packageExtensions: packageExtensions) }) {
                violations.append("\(id) ended by its hold limit with no claim waiting for it, after \(event)")
            }
        }
        guard !overdue.isEmpty else { return (violations, ended) }
        for claim in after.claims where claim.phase != .granted {
            for blocker in arbiter.blockers(of: claim.request.id)
            where overdue.contains(blocker) && arbiter.phase(of: blocker) == .granted {
                violations.append("\(claim.request.id) waits for \(blocker), granted past its hold limit")
            }
        }
        // A draining host gate waits for every claim granted in its folder (issue 40): none of them is overdue.
        for gate in arbiter.hostGateSnapshots() where gate.draining {
            guard let gateClaim = live[gate.claim] else { continue }
            for id in overdue {
                guard let holder = live[id], holder.phase == .granted,
                    SpecModel.conflict(gateClaim, holder, packageExtensions: packageExtensions)
                else { continue }
                violations.append("the draining host gate of \(gate.folder) waits for \(id), past its hold limit")
            }
        }
        return (violations, ended)
    }
}
