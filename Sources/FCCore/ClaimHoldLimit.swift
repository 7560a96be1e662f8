/// A claim's longest hold (``ClaimRequest/maximumHold``, issue 42; docs/SEMANTICS.md §2 rule 8).
///
/// The timer `.claimHoldLimit(id)` starts when the claim is granted and is cancelled when it ends. When it fires, the
/// claim is *overdue*: from then on a claim that waits for it (conflicts with it, is not exempt from it and is not
/// granted), or a host gate that drains over it (another host waits for the folder, docs/SEMANTICS.md §14), ends it
/// at once, as if its client had finished it: presenters hear of the write and get their reacquirers, and the claims
/// that waited go on. Its client is not told (the preload library, the one client that asks for a limit, goes on
/// writing through the descriptor it opened, as it would without the library), and its later finish is ignored as a
/// finish of an unknown claim.
///
/// Checked when the timer fires (the claims waiting then) and for every claim not granted that a pass looks at while
/// some claim is overdue (the claims that come to wait later); a claim parked on another blocker is looked at again
/// when that blocker ends. The work is the claims conflicting with the overdue or the waiting claim, and nothing
/// while no claim is overdue. The ends happen after the pass that found them (``reevaluatePending()``).
extension Arbiter {
    /// Starts the timer of a granted claim's longest hold, when it has one.
    func armHoldLimit(_ claim: ClaimRecord) {
        guard let hold = claim.request.maximumHold else { return }
        claim.holdLimitArmed = true
        effects.append(.startTimer(.claimHoldLimit(claim.id), after: hold))
    }

    /// A claim ends: its timer, if it runs, is no longer needed, and it is overdue no more.
    func cancelHoldLimit(_ claim: ClaimRecord) {
        if claim.holdLimitArmed {
            claim.holdLimitArmed = false
            effects.append(.cancelTimer(.claimHoldLimit(claim.id)))
        }
        if !overdueHolds.isEmpty { overdueHolds.remove(claim.id) }
    }

    /// The claim has held for its longest hold: overdue, and ended now if a claim waits for it. A late timer (the
    /// claim ended, or is not granted) changes nothing.
    func holdLimitPassed(_ id: ClaimID) {
        guard let claim = claims[id], claim.phase == .granted, claim.holdLimitArmed else { return }
        claim.holdLimitArmed = false
        overdueHolds.insert(id)
        var waitedFor = false
        forEachConflicting(
            claim,
            until: { other in
                if other.phase != .granted || isDrainingGate(other), !exempt(other.request, claim.request) {
                    waitedFor = true
                }
                return !waitedFor
            }
        )
        if waitedFor { holdsToEnd.append(id) }
    }

    /// Whether `claim` stands for a host gate that drains: it waits for every claim granted in its folder.
    func isDrainingGate(_ claim: ClaimRecord) -> Bool {
        claim.id.isHostGate && hostGate(standingAs: claim.id)?.draining == true
    }

    /// A claim not granted, looked at in a pass, or a host gate that starts draining: the overdue claims it waits for
    /// are to end.
    func noteOverdueHolds(blocking waiting: ClaimRecord) {
        guard !overdueHolds.isEmpty else { return }
        forEachConflicting(
            waiting,
            { (other: ClaimRecord) -> Void in
                if other.phase == .granted, overdueHolds.contains(other.id), !exempt(waiting.request, other.request) {
                    holdsToEnd.append(other.id)
                }
            }
        )
    }

    /// Ends the overdue claims found waited for; `true` when it ended any (the claims that waited for them are looked
    /// at again).
    func endOverdueHolds() -> Bool {
        guard !holdsToEnd.isEmpty else { return false }
        let found = holdsToEnd
        holdsToEnd = []
        var ended = false
        for id in found {
            guard let claim = claims[id], claim.phase == .granted, overdueHolds.contains(id) else { continue }
            let hold = claim.request.maximumHold.map(seconds) ?? "?"
            log(
                .notice,
                "\(describe(claim)) held past its maximum hold of \(hold) while another claim waited for it: ended "
                    + "as if its client had finished it",
                ["claim.id": "\(id.rawValue)"]
            )
            statistics.holdsEnded += 1
            completeGranted(claim, created: [])
            ended = true
        }
        return ended
    }
}
