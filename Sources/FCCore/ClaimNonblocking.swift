/// Claims that must not wait (``ClaimRequest/nonblocking``, issue 43; docs/SEMANTICS.md §2 rule 9): `fccoord -n`,
/// as `flock -n`.
///
/// Such a claim is looked at like any other; where another claim would wait, it is refused with
/// ``ClaimFailure/wouldWait(_:)``, naming what held it back. What holds it back is a conflicting claim it is not
/// exempt from (rule 4) that is granted or being prepared, or that arrived earlier and still waits (rule 6: FIFO), or
/// a closed host gate (another host holds the shared folder, §14): the claims of another process or host, whose end
/// nobody can tell in advance.
///
/// Not waiting for a claim, and so waited for:
/// - presenters asked to relinquish, save or accommodate (the claim is then being prepared: no claim holds it back),
///   up to the presenter timeout, and the claims a presenter makes from its callback while it answers (rule 5: they
///   pass the claim they answer);
/// - leases being recalled (§13): the recall is the arbiter's own round trip, bounded by the presenter timeout. When
///   the holder returns the lease, the claims it declares still running are the holder's claims like any other, and
///   refuse the claim if they conflict; a recall left unanswered refuses it too (its holder may be running claims).
///
/// So the claim is never parked: it is looked at on every event while a lease it waits for is recalled, and it is
/// never queued behind a claim (the simulator's invariant 10). A claim declared as held ignores the flag (it runs
/// already).
extension Arbiter {
    /// Refuses `claim`, a claim that must not wait and that something holds back, if a claim (not only a lease
    /// being recalled) is what holds it back; recalls the leases that do. `true` when it was refused: it is gone from
    /// ``claims``, and the pass drops it from ``pendingOrder``. O(the conflicting claims).
    func refuseIfWaitingForClaims(_ claim: ClaimRecord) -> Bool {
        var leasesBeingRecalled: [LeaseID] = []
        var heldBackBy: ClaimRecord?
        for blocker in startBlockers(claim) {
            if let id = blocker.id.lease, let lease = leases[id],
                lease.state == .held || lease.state == .recallDue || lease.state == .recalled
            {
                leasesBeingRecalled.append(id)
            } else {
                heldBackBy = blocker
                break
            }
        }
        guard let heldBackBy else {
            for lease in leasesBeingRecalled { requestRecall(lease) }
            return false
        }
        let report: String
        if heldBackBy.id.isHostGate {
            report = "\(describe(claim)) would wait for \(describe(heldBackBy.request.client))"
        } else {
            report = "\(describe(claim)) would wait for \(describe(heldBackBy)), which is \(heldBackBy.phase)"
        }
        log(.info, report, ["claim.id": "\(claim.id.rawValue)"])
        fail(claim, .wouldWait(report))
        return true
    }
}
