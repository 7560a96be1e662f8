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
    /// The claim said it waits at a closed host gate (``ArbiterEffect/hostGateWanted(_:)``): once is enough.
    var askedHostGate = false
    /// Steps still to send, per presenter, while preparing.
    var plans: [PresenterID: [PresenterMessageKind]] = [:]
    /// Requests sent and not answered yet.
    var outstanding: [RequestID: PresenterID] = [:]
    /// Presenters that relinquished with a reacquirer, to run when the claim ends.
    var reacquirers: [(presenter: PresenterID, request: RequestID)] = []
    /// Moves reported inside the accessor, to avoid telling presenters twice.
    var moves: [(from: ItemPath, to: ItemPath)] = []
    /// Notifications already sent on behalf of this claim: each at most once per presenter.
    var sentNotifications: Set<PresenterMessageKey> = []
    /// `true` when the presenter the claim was made with owed a reply when the claim arrived (rule 5).
    var madeWhileAnswering = false
    /// How many deadlock checks this claim has had armed (the delay doubles after each long-wait report).
    var deadlockChecks = 0
    /// `true` while a deadlock-check timer runs for this claim.
    var deadlockCheckArmed = false
    /// The active claim this waiting claim is parked on (``Arbiter/park(_:on:)``), if it is.
    var parkedOn: ClaimID?
    /// When the claim arrived and when it was granted, on the host's clock (``Arbiter/handle(_:at:)``), for the
    /// wait times in deadlock reports; `nil` when the host gives no time.
    var arrivedAt: Duration?
    var grantedAt: Duration?
    /// For a granted preparation whose batch block returned: when it did (the host's time, `.zero` without one).
    /// The claim then waits for its completion handler (``ArbiterEvent/preparationReturned(_:)``).
    var batchReturnedAt: Duration?
    /// `true` while the timer of the claim's own deadline runs (``ClaimRequest/timeout``).
    var deadlineArmed = false
    /// `true` while the timer of the claim's longest hold runs (``ClaimRequest/maximumHold``).
    var holdLimitArmed = false
    /// File-system events under the claim's written items read while it was granted, to judge when it ends: an
    /// echo of the write, or a change made after its accessor returned whose event beat the finish (issue 37).
    var held = HeldEvents()

    init(request: ClaimRequest, sequence: UInt64, entries: [ClaimEntry]) {
        self.request = request
        self.sequence = sequence
        self.entries = entries
    }

    var id: ClaimID { request.id }
}

extension Arbiter {
    // MARK: Request

    /// Takes a claim in: `otherNames` are items after the request's own (the other names of the files it names,
    /// Arbiter+Identity.swift), ordered like them and never named in its grant.
    func requestClaim(_ request: ClaimRequest, otherNames: [ClaimItem] = []) {
        statistics.claimsRequested += 1
        let owner = client(request.client)
        if claims[request.id] != nil {
            log(.warning, "claim id reused while live; refused", ["claim.id": "\(request.id.rawValue)"])
            effects.append(.fail(request.id, client: request.client, .invalidRequest("claim id already in use")))
            statistics.claimsFailed += 1
            return
        }
        if request.id.isReserved {
            log(.warning, "claim with a lease's or host gate's id refused", ["claim.id": "\(request.id.rawValue)"])
            effects.append(.fail(request.id, client: request.client, .invalidRequest("claim id out of range")))
            statistics.claimsFailed += 1
            return
        }
        if request.items.isEmpty {
            log(.warning, "claim with no items refused", ["claim.id": "\(request.id.rawValue)"])
            effects.append(
                .fail(request.id, client: request.client, .invalidRequest("a claim needs at least one item"))
            )
            statistics.claimsFailed += 1
            return
        }
        // A claim declared as held runs already (after a daemon's crash, or with a lease's return): a cancelled
        // coordinator cannot stop it, and refusing it would let conflicting claims in while it runs.
        if !request.isHeld && owner.cancelledCoordinators.contains(request.coordinator) {
            effects.append(.fail(request.id, client: request.client, .cancelled))
            statistics.claimsFailed += 1
            return
        }
        nextSequence += 1
        let entry = { (item: ClaimItem) in
            ClaimEntry(path: item.path, access: item.access, node: self.tree.effectiveNode(item.path))
        }
        // Without other names (the usual case) no concatenated copy: one allocation per claim fewer (CoreBenchmarks'
        // malloc thresholds).
        let entries = otherNames.isEmpty ? request.items.map(entry) : (request.items + otherNames).map(entry)
        let claim = ClaimRecord(request: request, sequence: nextSequence, entries: entries)
        claim.arrivedAt = now
        if request.isHeld {
            // Declared again after a restart: granted already, in its client; nobody to ask, nothing to wait for.
            claim.phase = .granted
            claim.grantedAt = now
            claims[request.id] = claim
            owner.claims.insert(request.id)
            for (index, entry) in entries.enumerated() {
                tree.addEntry(EntryRef(claim: request.id, index: index), at: entry.node)
            }
            log(.info, "claim declared again as held", ["claim.id": "\(request.id.rawValue)"])
            noteHeldClaimInsideGate(claim)
            // Its longest hold counts from now (a stopped daemon's stand-in for a preloaded program's claim): a held
            // claim is bounded as a granted one is.
            armHoldLimit(claim)
            return
        }
        claim.madeWhileAnswering = isAnsweringRequest(claim)
        if let timeout = request.timeout {
            claim.deadlineArmed = true
            effects.append(.startTimer(.claimDeadline(request.id), after: timeout))
        }
        claims[request.id] = claim
        owner.claims.insert(request.id)
        for (index, entry) in entries.enumerated() {
            tree.addEntry(EntryRef(claim: request.id, index: index), at: entry.node)
        }
        pendingOrder.append(request.id)
    }

    // MARK: Progress

    /// Moves every claim that can go on one step further, in arrival order.
    ///
    /// A claim that starts preparing sends requests, and a claim made while its presenter owes a reply may then jump
    /// the queue (rule 5); a grant lets claims exempt from the granted one pass the claims that wait for it (§5). So
    /// a pass that started or granted anything while claims are pending is followed by another one.
    func reevaluatePending() {
        repeat {
            var started = true
            while started {
                started = false
                reevaluationPass(started: &started)
            }
        } while endOverdueHolds()
    }

    private func reevaluationPass(started: inout Bool) {
        var index = 0
        while index < pendingOrder.count {
            let id = pendingOrder[index]
            guard let claim = claims[id], claim.phase != .granted else {
                pendingOrder.remove(at: index)
                continue
            }
            if claim.phase == .waiting {
                if let blocker = firstStartBlocker(claim) {
                    // A claim that must not wait is refused here, unless only leases being recalled hold it back
                    // (ClaimNonblocking.swift).
                    if claim.request.nonblocking, refuseIfWaitingForClaims(claim) { continue }
                    noteOverdueHolds(blocking: claim)
                    // A claim that came to wait for a lease some other way than by arriving (a move): recall it.
                    if let lease = blocker.id.lease { requestRecall(lease) }
                    // A claim that came to wait at a closed host gate (after a move, or behind a claim that ended):
                    // the host asks the cluster for the folder.
                    if blocker.id.isHostGate, !claim.askedHostGate, let gate = hostGate(standingAs: blocker.id) {
                        claim.askedHostGate = true
                        effects.append(.hostGateWanted(gate.folder))
                    }
                    // Held back by a claim that is active: nothing but that claim's end (or a move, or a package
                    // declaration) can let it start, so it leaves the list looked at on every event (issue 11.2).
                    // Not a claim that must not wait: it is looked at again on every event, so that a recall left
                    // unanswered refuses it at once.
                    if blocker.phase != .waiting, !claim.madeWhileAnswering, !claim.request.nonblocking {
                        pendingOrder.remove(at: index)
                        park(claim, on: blocker)
                        continue
                    }
                } else {
                    startPreparing(claim)
                    if !claim.outstanding.isEmpty { started = true }
                }
            }
            if claims[id] == nil {
                // Failed while preparing: its presenter plans were empty and something refused.
                continue
            }
            if claim.phase == .preparing { noteOverdueHolds(blocking: claim) }
            if claim.phase == .preparing, claim.outstanding.isEmpty, claim.plans.isEmpty, !hasGrantedConflict(claim) {
                grant(claim)
                pendingOrder.remove(at: index)
                // A claim exempt from this one (nested, same presenter or purpose), queued earlier, may now pass
                // claims that wait for it (§5).
                if !pendingOrder.isEmpty { started = true }
                continue
            }
            index += 1
        }
    }

    // MARK: Parking (issue 11.2)

    /// Sets a waiting claim aside until `blocker`, an active claim that conflicts with it, ends: re-evaluating it
    /// before then could only find it blocked again, and a queue of a thousand claims on one item would be read on
    /// every event of every other item. Its deadlock check stays armed. Not for a claim made while its presenter
    /// owes a reply (rule 5): whether it may jump ahead changes with replies, not with the blocker.
    func park(_ claim: ClaimRecord, on blocker: ClaimRecord) {
        claim.parkedOn = blocker.id
        parked[blocker.id, default: []].append(claim.id)
        armDeadlockCheck(claim)
    }

    /// Puts the claims parked on `blocker` back among the claims looked at, in arrival order.
    func unpark(on blocker: ClaimID) {
        guard let waiting = parked.removeValue(forKey: blocker) else { return }
        let returning = waiting.compactMap { id -> ClaimRecord? in
            guard let claim = claims[id], claim.parkedOn == blocker else { return nil }
            claim.parkedOn = nil
            return claim
        }
        merge(returning)
    }

    /// Puts every parked claim back (their conflicts may have changed: a move, a package declared or undeclared).
    func unparkAll() {
        let keys = Array(parked.keys)
        for key in keys { unpark(on: key) }
    }

    /// Merges claims into ``pendingOrder`` by arrival (the list is kept in arrival order; ids of claims gone are
    /// dropped on the way).
    private func merge(_ returning: [ClaimRecord]) {
        guard !returning.isEmpty else { return }
        let current = pendingOrder.compactMap { claims[$0] }
        let incoming = returning.sorted { $0.sequence < $1.sequence }
        var merged: [ClaimID] = []
        merged.reserveCapacity(current.count + incoming.count)
        var (i, j) = (0, 0)
        while i < current.count || j < incoming.count {
            if j == incoming.count || (i < current.count && current[i].sequence < incoming[j].sequence) {
                merged.append(current[i].id)
                i += 1
            } else {
                merged.append(incoming[j].id)
                j += 1
            }
        }
        pendingOrder = merged
    }

    func grant(_ claim: ClaimRecord) {
        cancelDeadlockCheck(claim)
        cancelDeadline(claim)
        claim.phase = .granted
        claim.grantedAt = now
        armHoldLimit(claim)
        statistics.claimsGranted += 1
        // The grant names the requested items; entries after them are other names of the same files (issue 26).
        let paths = claim.entries.prefix(claim.request.items.count).map(\.path)
        effects.append(.grant(claim.id, client: claim.request.client, paths: paths))
    }

    // MARK: Ending

    func finishClaim(_ id: ClaimID, created: [ItemPath], outcome: WriteOutcome?) {
        guard let claim = claims[id] else {
            log(.debug, "finish of an unknown claim ignored", ["claim.id": "\(id.rawValue)"])
            return
        }
        guard claim.phase == .granted else {
            log(.warning, "finish of a claim that was never granted; treated as cancel", ["claim.id": "\(id.rawValue)"])
            fail(claim, .cancelled)
            return
        }
        completeGranted(claim, created: created, outcome: outcome)
    }

    func preparationReturned(_ id: ClaimID) {
        guard let claim = claims[id], claim.request.isPreparation, claim.phase == .granted,
            claim.batchReturnedAt == nil
        else {
            log(.debug, "batch return of no granted preparation ignored", ["claim.id": "\(id.rawValue)"])
            return
        }
        claim.batchReturnedAt = now ?? .zero
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
        guard let claim = claims[id] else {
            log(.debug, "cancel of an unknown claim ignored", ["claim.id": "\(id.rawValue)"])
            return
        }
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

    /// Ends a granted claim: notifications for what it wrote, then reacquirers; then the file-system events held
    /// while it ran are judged again (``Arbiter/releaseHeldEvents(of:)``). `outcome`: what the write left behind, as
    /// its client saw it (`nil` when unknown: a client gone, or one that does not say).
    func completeGranted(_ claim: ClaimRecord, created: [ItemPath], outcome: WriteOutcome? = nil) {
        if !claim.request.isPreparation {
            notifyAfterAccess(claim, created: created)
            recordEchoes(of: claim, created: created, outcome: outcome)
            reportWritesToFilesWithOtherNames(claim)
            forgetDeletedNames(of: claim)
        }
        sendReacquirers(claim)
        remove(claim)
        releaseHeldEvents(of: claim)
    }

    func remove(_ claim: ClaimRecord) {
        unpark(on: claim.id)
        cancelHoldLimit(claim)
        if claim.phase != .granted {
            cancelDeadlockCheck(claim)
            cancelDeadline(claim)
        }
        for (index, entry) in claim.entries.enumerated() {
            tree.removeEntry(EntryRef(claim: claim.id, index: index), at: entry.node)
        }
        forgetIdentities(of: claim)
        claims[claim.id] = nil
        clients[claim.request.client]?.claims.remove(claim.id)
    }
}
