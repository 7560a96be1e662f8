extension Arbiter {
    // MARK: Conflicts

    /// `true` when `a` and `b` never block each other (docs/SEMANTICS.md §2 rule 4).
    func exempt(_ a: ClaimRequest, _ b: ClaimRequest) -> Bool {
        // Nothing passes a lease (docs/SEMANTICS.md §13) or a host gate (§14), but a claim of the one purpose of a
        // lease's holder whose claims all have it (the preload library): no claim the holder decides in the lease
        // could conflict with it (rule 4), and holding it back made the holder wait for its own open files.
        if a.id.isReserved || b.id.isReserved {
            let (reserved, other) = a.id.isReserved ? (a, b) : (b, a)
            // Kept for a holder whose connection closed as well (its process may go on deciding in the lease).
            guard let lease = reserved.id.lease, !other.id.isReserved, reserved.purpose == other.purpose else {
                return false
            }
            return leases[lease]?.standsWithHolderPurpose == true
        }
        if a.client == b.client && a.coordinator == b.coordinator { return true }
        if let pa = a.filePresenter, pa == b.filePresenter { return true }
        return a.purpose == b.purpose
    }

    /// Calls `body` with every other live claim that has an item conflicting with an item of `claim`
    /// (rules 1 to 3; exemptions not applied). A claim may be reported more than once.
    func forEachConflicting(_ claim: ClaimRecord, _ body: (ClaimRecord) -> Void) {
        forEachConflicting(
            claim,
            until: { other in
                body(other)
                return true
            }
        )
    }

    /// ``forEachConflicting(_:_:)-(_,(ClaimRecord)->Void)`` that stops as soon as `body` returns `false`, so that a
    /// question answered by the first conflicting claim (is anything in the way? issue 11.2) costs what it reads,
    /// not the length of the queue on the item. Entries at a node are in arrival order, so the claim holding an item
    /// comes before the claims queued behind it.
    func forEachConflicting(_ claim: ClaimRecord, until body: (ClaimRecord) -> Bool) {
        statistics.conflictWalks += 1
        for entry in claim.entries {
            // Same node: readers share, a writer excludes.
            for ref in entry.node.entries where ref.claim != claim.id {
                guard let other = claims[ref.claim] else { continue }
                statistics.conflictVisits += 1
                if entry.access.isWrite || other.entries[ref.index].access.isWrite, !body(other) { return }
            }
            // Ancestors: only a deleting, moving or replacing writer covers what is inside it.
            var ancestor = entry.node.parent
            while let node = ancestor {
                if node.subtreeEntries > entry.node.subtreeEntries {
                    for ref in node.entries where ref.claim != claim.id {
                        guard let other = claims[ref.claim] else { continue }
                        statistics.conflictVisits += 1
                        if other.entries[ref.index].access.coversSubtree, !body(other) { return }
                    }
                }
                ancestor = node.parent
            }
            // Descendants: everything inside a deleting, moving or replacing writer's item.
            if entry.access.coversSubtree {
                var stopped = false
                tree.forEachDescendantWithEntries(of: entry.node) { node in
                    for ref in node.entries where !stopped && ref.claim != claim.id {
                        guard let other = claims[ref.claim] else { continue }
                        statistics.conflictVisits += 1
                        if !body(other) { stopped = true }
                    }
                }
                if stopped { return }
            }
        }
    }

    /// `true` when the presenter `claim` was created with owes a reply to `other` (rule 5).
    func answersRequest(_ claim: ClaimRecord, of other: ClaimRecord) -> Bool {
        guard let presenter = claim.request.filePresenter else { return false }
        return other.outstanding.values.contains(presenter) || other.plans[presenter] != nil
    }

    /// `true` when the presenter `claim` was created with owes a reply to some claim (rule 5).
    func isAnsweringRequest(_ claim: ClaimRecord) -> Bool {
        guard let presenter = claim.request.filePresenter else { return false }
        return requests.values.contains { $0.presenter == presenter }
    }

    /// The granted claims that `claim` is exempt from (same coordinator, same presenter, same purpose): the claim
    /// may have been made inside their accessors (a nested access, §5) or by a cooperating subsystem (rule 4).
    func exemptHolders(of claim: ClaimRecord) -> Set<ClaimID> {
        var holders: Set<ClaimID> = []
        for other in claims.values where other.phase == .granted && other.id != claim.id {
            if exempt(claim.request, other.request) { holders.insert(other.id) }
        }
        return holders
    }

    /// `true` when `waiting` waits, directly or through other waiting claims, for one of `holders`.
    ///
    /// Such a claim must not hold back a claim that is exempt from those holders: the holder's accessor may be
    /// waiting for that very claim, and queueing it would deadlock.
    func waitsTransitively(_ waiting: ClaimRecord, on holders: Set<ClaimID>) -> Bool {
        var stack = [waiting]
        var visited: Set<ClaimID> = [waiting.id]
        while let current = stack.popLast() {
            var found = false
            forEachConflicting(
                current,
                until: { (other: ClaimRecord) -> Bool in
                    guard !exempt(current.request, other.request) else { return true }
                    if other.phase != .waiting {
                        if holders.contains(other.id) { found = true }
                    } else if other.sequence < current.sequence, visited.insert(other.id).inserted {
                        stack.append(other)
                    }
                    return !found
                }
            )
            if found { return true }
        }
        return false
    }

    /// The claims that keep `claim` from starting: conflicting claims that are active (preparing or granted) or
    /// arrived earlier (rule 6), with two ways past claims that wait:
    /// - a claim made with a presenter while that presenter owes a reply jumps every waiting claim, and the preparing
    ///   claims it is answering (rule 5);
    /// - a claim exempt from a granted claim (a nested access by the same coordinator, or the same presenter or
    ///   purpose) passes waiting claims that wait for that granted claim, directly or transitively (§5).
    ///
    /// At most `limit`, the first found (the claims holding its items come before those queued behind them): a dump
    /// lists a few of each waiting claim's blockers, so that a queue of n claims costs O(n), not O(n²).
    public func blockers(of id: ClaimID, limit: Int = .max) -> [ClaimID] {
        guard let claim = claims[id] else { return [] }
        return startBlockers(claim, limit: limit).map(\.id)
    }

    /// The claims that keep `claim` from starting (``blockers(of:limit:)``), at most `limit`.
    func startBlockers(_ claim: ClaimRecord, limit: Int = .max) -> [ClaimRecord] {
        guard limit > 0 else { return [] }
        var result: [ClaimRecord] = []
        if let lease = leaseHoldingBackOtherNames(claim) {
            result.append(lease)
            if result.count >= limit { return result }
        }
        var seen: Set<ClaimID> = []
        let answering = claim.madeWhileAnswering && isAnsweringRequest(claim)
        var holders: Set<ClaimID>?
        forEachConflicting(
            claim,
            until: { (other: ClaimRecord) -> Bool in
                guard !seen.contains(other.id), !exempt(claim.request, other.request) else { return true }
                if other.id.isHostGate, passesDrainingGate(claim, other) { return true }
                seen.insert(other.id)
                if other.phase != .waiting {
                    if answering && other.phase == .preparing && answersRequest(claim, of: other) { return true }
                    result.append(other)
                } else if other.sequence < claim.sequence {
                    if answering { return true }
                    if holders == nil { holders = exemptHolders(of: claim) }
                    if let holders, !holders.isEmpty, waitsTransitively(other, on: holders) { return true }
                    result.append(other)
                }
                return result.count < limit
            }
        )
        return result
    }

    /// `true` when something keeps `claim` from starting: ``startBlockers(_:limit:)`` without building the list,
    /// for the re-evaluation of every waiting claim on every event (issue 11.2): it allocates nothing and usually
    /// stops at the first entry of the item, the claim that holds it.
    func hasStartBlocker(_ claim: ClaimRecord) -> Bool { firstStartBlocker(claim) != nil }

    /// The first claim found that keeps `claim` from starting, or `nil`.
    func firstStartBlocker(_ claim: ClaimRecord) -> ClaimRecord? {
        if let lease = leaseHoldingBackOtherNames(claim) { return lease }
        let answering = claim.madeWhileAnswering && isAnsweringRequest(claim)
        var holders: Set<ClaimID>?
        var blocker: ClaimRecord?
        forEachConflicting(
            claim,
            until: { (other: ClaimRecord) -> Bool in
                guard !exempt(claim.request, other.request) else { return true }
                if other.id.isHostGate, passesDrainingGate(claim, other) { return true }
                if other.phase != .waiting {
                    if answering && other.phase == .preparing && answersRequest(claim, of: other) { return true }
                    blocker = other
                } else if other.sequence < claim.sequence {
                    if answering { return true }
                    if holders == nil { holders = exemptHolders(of: claim) }
                    if let holders, !holders.isEmpty, waitsTransitively(other, on: holders) { return true }
                    blocker = other
                }
                return blocker == nil
            }
        )
        return blocker
    }

    /// `true` when a granted claim conflicts with `claim` (checked again before granting, for rule 5).
    func hasGrantedConflict(_ claim: ClaimRecord) -> Bool {
        var found = leaseHoldingBackOtherNames(claim) != nil
        forEachConflicting(
            claim,
            until: { (other: ClaimRecord) -> Bool in
                if other.phase == .granted && !exempt(claim.request, other.request)
                    && !(other.id.isHostGate && passesDrainingGate(claim, other))
                {
                    found = true
                }
                return !found
            }
        )
        return found
    }
}
