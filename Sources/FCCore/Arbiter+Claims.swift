/// One item of a live claim.
struct ClaimEntry {
    /// Where the item is now (waiting claims follow moves, rule 7).
    var path: ItemPath
    var access: Access
    /// The node that stands for the item in conflict checks (the item, or its outermost package).
    var node: AccessNode
}

/// A live claim.
final class ClaimRecord {
    let request: ClaimRequest
    /// Arrival order; the FIFO of rule 6.
    let sequence: UInt64
    var phase: ClaimPhase = .waiting
    var entries: [ClaimEntry]
    /// Steps still to send, per presenter, while preparing.
    var plans: [PresenterID: [PresenterMessageKind]] = [:]
    /// Requests sent and not answered yet.
    var outstanding: [RequestID: PresenterID] = [:]
    /// Presenters that relinquished with a reacquirer, to run when the claim ends.
    var reacquirers: [(presenter: PresenterID, request: RequestID)] = []
    /// Moves reported inside the accessor, to avoid telling presenters twice.
    var moves: [(from: ItemPath, to: ItemPath)] = []

    init(request: ClaimRequest, sequence: UInt64, entries: [ClaimEntry]) {
        self.request = request
        self.sequence = sequence
        self.entries = entries
    }

    var id: ClaimID { request.id }
}

extension Arbiter {
    // MARK: Request

    func requestClaim(_ request: ClaimRequest) {
        statistics.claimsRequested += 1
        let owner = client(request.client)
        if claims[request.id] != nil {
            log(.warning, "claim id reused while live; refused", ["claim.id": "\(request.id.rawValue)"])
            effects.append(.fail(request.id, client: request.client, .invalidRequest("claim id already in use")))
            statistics.claimsFailed += 1
            return
        }
        if request.items.isEmpty {
            effects.append(.fail(request.id, client: request.client, .invalidRequest("a claim needs at least one item")))
            statistics.claimsFailed += 1
            return
        }
        if owner.cancelledCoordinators.contains(request.coordinator) {
            effects.append(.fail(request.id, client: request.client, .cancelled))
            statistics.claimsFailed += 1
            return
        }
        nextSequence += 1
        let entries = request.items.map { item in
            ClaimEntry(path: item.path, access: item.access, node: tree.effectiveNode(item.path))
        }
        let claim = ClaimRecord(request: request, sequence: nextSequence, entries: entries)
        claims[request.id] = claim
        owner.claims.insert(request.id)
        for (index, entry) in entries.enumerated() {
            tree.addEntry(EntryRef(claim: request.id, index: index), at: entry.node)
        }
        pendingOrder.append(request.id)
    }

    // MARK: Conflicts

    /// `true` when `a` and `b` never block each other (SEMANTICS.md §2 rule 4).
    func exempt(_ a: ClaimRequest, _ b: ClaimRequest) -> Bool {
        if a.client == b.client && a.coordinator == b.coordinator { return true }
        if let pa = a.filePresenter, pa == b.filePresenter { return true }
        return a.purpose == b.purpose
    }

    /// Calls `body` with every other live claim that has an item conflicting with an item of `claim`
    /// (rules 1 to 3; exemptions not applied). A claim may be reported more than once.
    func forEachConflicting(_ claim: ClaimRecord, _ body: (ClaimRecord) -> Void) {
        for entry in claim.entries {
            // Same node: readers share, a writer excludes.
            for ref in entry.node.entries where ref.claim != claim.id {
                guard let other = claims[ref.claim] else { continue }
                if entry.access.isWrite || other.entries[ref.index].access.isWrite { body(other) }
            }
            // Ancestors: only a deleting, moving or replacing writer covers what is inside it.
            var ancestor = entry.node.parent
            while let node = ancestor {
                if node.subtreeEntries > entry.node.subtreeEntries {
                    for ref in node.entries where ref.claim != claim.id {
                        guard let other = claims[ref.claim] else { continue }
                        if other.entries[ref.index].access.coversSubtree { body(other) }
                    }
                }
                ancestor = node.parent
            }
            // Descendants: everything inside a deleting, moving or replacing writer's item.
            if entry.access.coversSubtree {
                tree.forEachDescendantWithEntries(of: entry.node) { node in
                    for ref in node.entries where ref.claim != claim.id {
                        if let other = claims[ref.claim] { body(other) }
                    }
                }
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

    /// `true` when the claim's coordinator holds a granted claim: the call was made inside that claim's accessor
    /// (SEMANTICS.md §5, a nested read does not wait). Queueing it behind claims that wait for the outer access
    /// would deadlock, so it waits only for active conflicting claims.
    func isNested(_ claim: ClaimRecord) -> Bool {
        guard let owner = clients[claim.request.client] else { return false }
        return owner.claims.contains { id in
            guard id != claim.id, let other = claims[id] else { return false }
            return other.phase == .granted && other.request.coordinator == claim.request.coordinator
        }
    }

    /// `true` when the claim may pass claims that wait before it: a presenter's own access while it owes a reply
    /// (rule 5), or a nested access inside a granted one of the same coordinator (§5).
    func jumpsQueue(_ claim: ClaimRecord) -> Bool {
        isAnsweringRequest(claim) || isNested(claim)
    }

    /// The claims that keep `claim` from starting: conflicting claims that are active (preparing or granted) or
    /// arrived earlier. A write made by a presenter while it answers a request jumps the queue (rule 5), and so does
    /// a nested access inside a granted claim of the same coordinator.
    public func blockers(of id: ClaimID) -> [ClaimID] {
        guard let claim = claims[id] else { return [] }
        return startBlockers(claim).map(\.id)
    }

    func startBlockers(_ claim: ClaimRecord, stopAtFirst: Bool = false) -> [ClaimRecord] {
        var result: [ClaimRecord] = []
        var seen: Set<ClaimID> = []
        let jumping = jumpsQueue(claim)
        forEachConflicting(claim) { other in
            if stopAtFirst && !result.isEmpty { return }
            guard !seen.contains(other.id), !exempt(claim.request, other.request) else { return }
            seen.insert(other.id)
            if jumping {
                // Only granted claims, and active claims it is not answering, hold back a jumping claim.
                if other.phase == .granted || (other.phase == .preparing && !answersRequest(claim, of: other)) {
                    result.append(other)
                }
            } else if other.phase != .waiting || other.sequence < claim.sequence {
                result.append(other)
            }
        }
        return result
    }

    /// `true` when a granted claim conflicts with `claim` (checked again before granting, for rule 5).
    func hasGrantedConflict(_ claim: ClaimRecord) -> Bool {
        var found = false
        forEachConflicting(claim) { other in
            if !found && other.phase == .granted && !exempt(claim.request, other.request) { found = true }
        }
        return found
    }

    // MARK: Progress

    /// Moves every claim that can go on one step further, in arrival order.
    ///
    /// A claim that starts preparing sends requests, and a presenter that now owes a reply may let an earlier claim
    /// of its own jump the queue (rule 5); a grant lets nested claims of the same coordinator jump (§5). So a pass
    /// that started or granted anything that may matter is followed by another one.
    func reevaluatePending() {
        var started = true
        while started {
            started = false
            reevaluationPass(started: &started)
        }
    }

    private func reevaluationPass(started: inout Bool) {
        var index = 0
        while index < pendingOrder.count {
            let id = pendingOrder[index]
            guard let claim = claims[id], claim.phase != .granted else {
                pendingOrder.remove(at: index)
                continue
            }
            if claim.phase == .waiting, startBlockers(claim, stopAtFirst: true).isEmpty {
                startPreparing(claim)
                if !claim.outstanding.isEmpty { started = true }
            }
            if claims[id] == nil {
                // Failed while preparing: its presenter plans were empty and something refused.
                continue
            }
            if claim.phase == .preparing, claim.outstanding.isEmpty, claim.plans.isEmpty, !hasGrantedConflict(claim) {
                grant(claim)
                pendingOrder.remove(at: index)
                // A nested claim of the same coordinator, queued earlier, may now go ahead (§5).
                if clients[claim.request.client]?.claims.count ?? 0 > 1 { started = true }
                continue
            }
            index += 1
        }
    }

    func grant(_ claim: ClaimRecord) {
        claim.phase = .granted
        statistics.claimsGranted += 1
        effects.append(.grant(claim.id, client: claim.request.client, paths: claim.entries.map(\.path)))
    }

    // MARK: Ending

    func finishClaim(_ id: ClaimID, created: [ItemPath]) {
        guard let claim = claims[id] else {
            log(.debug, "finish of an unknown claim ignored", ["claim.id": "\(id.rawValue)"])
            return
        }
        guard claim.phase == .granted else {
            log(.warning, "finish of a claim that was never granted; treated as cancel", ["claim.id": "\(id.rawValue)"])
            fail(claim, .cancelled)
            return
        }
        completeGranted(claim, created: created)
    }

    func cancelCoordinator(_ clientID: ClientID, _ coordinator: CoordinatorID) {
        let owner = client(clientID)
        owner.cancelledCoordinators.insert(coordinator)
        for id in owner.claims.sorted() {
            guard let claim = claims[id], claim.request.coordinator == coordinator, claim.phase != .granted else {
                continue
            }
            fail(claim, .cancelled)
        }
    }

    func cancelClaim(_ id: ClaimID) {
        guard let claim = claims[id] else { return }
        guard claim.phase != .granted else { return }  // A running accessor finishes.
        fail(claim, .cancelled)
    }

    /// Fails a claim that is not granted: tells its client, and gives relinquished presenters their reacquirers.
    func fail(_ claim: ClaimRecord, _ failure: ClaimFailure) {
        abandon(claim, failure: failure)
    }

    /// Removes a claim that never ran. With a failure its client is told; without one (client gone) nobody is.
    func abandon(_ claim: ClaimRecord, failure: ClaimFailure?) {
        if let failure {
            statistics.claimsFailed += 1
            effects.append(.fail(claim.id, client: claim.request.client, failure))
        }
        // Replies still owed become orphans: a later relinquish with a reacquirer is reacquired at once.
        for requestID in claim.outstanding.keys.sorted() {
            requests[requestID]?.claim = nil
        }
        sendReacquirers(claim)
        remove(claim)
    }

    /// Ends a granted claim: notifications for what it wrote, then reacquirers.
    func completeGranted(_ claim: ClaimRecord, created: [ItemPath]) {
        notifyAfterAccess(claim, created: created)
        sendReacquirers(claim)
        remove(claim)
    }

    func remove(_ claim: ClaimRecord) {
        for (index, entry) in claim.entries.enumerated() {
            tree.removeEntry(EntryRef(claim: claim.id, index: index), at: entry.node)
        }
        claims[claim.id] = nil
        clients[claim.request.client]?.claims.remove(claim.id)
    }
}
