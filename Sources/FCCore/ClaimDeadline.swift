/// A caller's own deadline (``ClaimRequest/timeout``, docs/SEMANTICS.md §6: a waiting caller can always get out).
///
/// The timer `.claimDeadline(id)` starts when the claim arrives (`requestClaim(_:)`) and is cancelled when it is
/// granted or removed; if it fires first, the claim fails with ``ClaimFailure/timedOut(_:)`` and a report of what it
/// still waited for, in the deadlock detector's words (``Arbiter/edges(from:)``).
extension Arbiter {
    func cancelDeadline(_ claim: ClaimRecord) {
        guard claim.deadlineArmed else { return }
        claim.deadlineArmed = false
        effects.append(.cancelTimer(.claimDeadline(claim.id)))
    }

    /// A claim's own deadline passed before it was granted: it fails, saying what it still waited for.
    func deadlinePassed(_ id: ClaimID) {
        guard let claim = claims[id], claim.phase != .granted else { return }
        claim.deadlineArmed = false
        let timeout = claim.request.timeout.map { " within its timeout of \(seconds($0))" } ?? ""
        let (lines, more) = boundedLines(edges(from: .claim(id)))
        let waits = lines.map { "  \($0)" } + (more > 0 ? ["  and \(more) more claims it waited for"] : [])
        let report =
            "\(describe(claim)) was not granted\(timeout)"
            + (waits.isEmpty ? "." : "; it still waited, one line per edge:\n" + waits.joined(separator: "\n"))
        log(.notice, report, ["claim.id": "\(id.rawValue)"])
        fail(claim, .timedOut(report))
    }
}
