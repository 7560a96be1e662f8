/// One live lease (docs/SEMANTICS.md §13).
///
/// A lease stands in the arbiter's conflict checks as a granted claim of its holder: a write with `.forDeleting`
/// on the subtree (``LeaseID/claim``), from which no claim is exempt. So every claim that could conflict with any
/// claim the holder decides in process waits for the lease by the ordinary rules (FIFO, deadlines, deadlock
/// reports), and the lease's return replaces it with the claims the holder declares still running.
final class LeaseRecord {
    let id: LeaseID
    let client: ClientID
    let subtree: ItemPath
    var state: LeaseSnapshot.State = .held
    var grantedAt: Duration?
    var recalledAt: Duration?
    var minimumHoldPassed = false
    /// The lease's claim stands with its holder's one purpose (``ClientInfo/claimsShareOnePurpose``), which passes it.
    var standsWithHolderPurpose = false

    init(id: LeaseID, client: ClientID, subtree: ItemPath) {
        self.id = id
        self.client = client
        self.subtree = subtree
    }
}

extension Arbiter {
    // MARK: Grant

    /// Whether `request` would be granted at once, asking nobody and changing nothing but recording the claim: the
    /// arbiter holds no claim and no presenter, and the request is well formed and not from a cancelled coordinator.
    ///
    /// A lease's holder (the library's `LeaseTable`) grants such a claim without this arbiter and enters it, as a held
    /// claim, before anything else reaches the arbiter: the decision is the one ``handle(_:at:)`` would make (a grant
    /// of the requested items), without its bookkeeping for a claim nothing can meet (a quarter of a leased read in
    /// issue 23's profile). O(1).
    public func grantsAtOnce(_ request: ClaimRequest) -> Bool {
        !request.items.isEmpty && !request.isHeld
            && grantsAtOnce(request.id, of: request.client, coordinator: request.coordinator)
    }

    /// ``grantsAtOnce(_:)`` for a claim `id` of `client`'s `coordinator` that is not held, with items, given as its
    /// parts (a lease's straight path, which makes no request unless the claim leaves the lease).
    public func grantsAtOnce(_ id: ClaimID, of client: ClientID, coordinator: CoordinatorID) -> Bool {
        guard claims.isEmpty, presenters.isEmpty, !id.isReserved else { return false }
        return clients[client]?.cancelledCoordinators.contains(coordinator) != true
    }

    /// Enters a claim of the arbiter's own making (a lease's, a host gate's): a granted `.write(.forDeleting)` on
    /// `path` that nothing passes, in the access tree like any claim, so that the conflict walk, the FIFO, parking,
    /// deadlines and the deadlock detector treat it as any granted claim. Not in its client's claims.
    @discardableResult
    func enterStandingClaim(_ id: ClaimID, of client: ClientID, purpose: PurposeID, on path: ItemPath) -> ClaimRecord {
        let request = ClaimRequest(
            id: id,
            client: client,
            coordinator: CoordinatorID(0),
            purpose: purpose,
            items: [ClaimItem(path: path, access: .write(.forDeleting))]
        )
        nextSequence += 1
        let node = tree.effectiveNode(path)
        let claim = ClaimRecord(
            request: request,
            sequence: nextSequence,
            entries: [ClaimEntry(path: path, access: .write(.forDeleting), node: node)]
        )
        claim.phase = .granted
        claim.arrivedAt = now
        claim.grantedAt = now
        claims[id] = claim
        tree.addEntry(EntryRef(claim: id, index: 0), at: node)
        return claim
    }

    /// Grants `client` a lease on the directory of the item `finished` claimed, if the policy allows it and the
    /// client is alone there (docs/SEMANTICS.md §13.1): called after the client's claim ended, of `purpose`.
    func considerLease(for clientID: ClientID, item path: ItemPath, purpose: PurposeID) {
        guard let policy = configuration.leases, let record = clients[clientID], record.info.answersRecalls,
            !record.inBackoff, record.leases.count < policy.maximumLeasesPerClient
        else { return }
        let effective = tree.effectivePath(path)
        guard let subtree = effective.parent, subtree.depth >= 1, isAlone(subtree),
            !filesWithOtherNamesHeld, !isExcludedFromLeases(subtree)
        else { return }
        nextLease += 1
        let lease = LeaseRecord(id: LeaseID(nextLease), client: clientID, subtree: subtree)
        lease.grantedAt = now
        // A client whose claims all have one purpose: the lease stands with it (``exempt(_:_:)``).
        let standing = record.info.claimsShareOnePurpose ? purpose : PurposeID("\(lease.id)")
        enterStandingClaim(lease.id.claim, of: clientID, purpose: standing, on: subtree)
        lease.standsWithHolderPurpose = record.info.claimsShareOnePurpose
        leases[lease.id] = lease
        record.leases.insert(lease.id)
        statistics.leasesGranted += 1
        effects.append(.grantLease(lease.id, client: clientID, subtree: subtree))
        if policy.minimumHold > .zero {
            effects.append(.startTimer(.leaseMinimumHold(lease.id), after: policy.minimumHold))
        } else {
            lease.minimumHoldPassed = true
        }
        log(.debug, "lease granted", ["lease.id": "\(lease.id.rawValue)", "client.id": "\(clientID.rawValue)"])
    }

    /// `true` when nothing is at, under or above `subtree` that a lease on it could hide from: no claim of any client
    /// (the holder's own included: its in-process arbiter would not know it) at or under it, no claim on an
    /// ancestor, no presenter at, under or above it (they hear of writes inside it), and `subtree` inside no package.
    /// Reads only existing nodes: a refusal leaves the tree as it was.
    func isAlone(_ subtree: ItemPath) -> Bool {
        guard tree.effectivePath(subtree) == subtree else { return false }
        var node: AccessNode? = tree.root
        for component in subtree.components {
            guard let current = node else { return true }  // Nothing exists below: nothing at or under it.
            if !current.presenters.isEmpty || !current.entries.isEmpty || current.packageDeclarations > 0 {
                return false
            }
            node = current.children[component]
        }
        guard let target = node else { return true }
        return target.subtreeEntries == 0 && target.subtreePresenters == 0 && target.packageDeclarations == 0
    }

    /// Whether a live claim or presenter names a file that had other names (hard links; issue 26) when its client
    /// read it. A lease decides in process only claims on files with one name (``ClaimRequest/mayBeDecided(inLeaseOn:)``),
    /// but a file with one name then may gain a link later, outside the lease or inside another, and the holder's
    /// in-process claims never reach the identity index. So while such a claim or presenter lives no lease is
    /// granted, one that arrives recalls every lease (``recallAllLeases()``), and such a claim waits for every lease
    /// (``leaseHoldingBackOtherNames(_:)``); the running claims come back declared with their identities and are met
    /// as usual. A file with one name is met by its path, which a lease covers like any claim. O(1).
    var filesWithOtherNamesHeld: Bool { !identities.withOtherNames.isEmpty }

    /// Recalls every lease: a claim or presenter naming a file with other names arrived (``filesWithOtherNamesHeld``).
    func recallAllLeases() {
        for lease in leases.values.sorted(by: { $0.id < $1.id }) { requestRecall(lease.id) }
    }

    /// The lease claim that `claim` waits for because it names a file with other names, or `nil`: such a file's
    /// names may lie inside any lease, where its holder's in-process claims are unknown here, so the claim waits until
    /// every lease is returned (its own client's included: a lease's arbiter does not know its client's daemon
    /// claims). A claim declared as held runs already; one handed back into its own lease never reaches here.
    func leaseHoldingBackOtherNames(_ claim: ClaimRecord) -> ClaimRecord? {
        guard !leases.isEmpty, !claim.request.isHeld, claim.id.lease == nil,
            claim.request.items.contains(where: \.hasOtherNames)
        else { return nil }
        for lease in leases.values.sorted(by: { $0.id < $1.id }) {
            if let record = claims[lease.id.claim], !exempt(claim.request, record.request) { return record }
        }
        return nil
    }

    // MARK: Recall

    /// Recalls the leases a new claim conflicts with (its own client's included), except that a claim lying wholly
    /// inside a lease its own client holds, unrecalled, and that a lease may decide
    /// (``ClaimRequest/mayBeDecided(inLeaseOn:)``) is handed back to that client
    /// (``ArbiterEffect/claimInsideLease(_:client:lease:)``): it was sent before the grant reached the client, which
    /// decides it itself. Nothing else can conflict with
    /// it: anything that did would have recalled the lease.
    func recallLeases(conflictingWith id: ClaimID) {
        guard !leases.isEmpty, let claim = claims[id] else { return }
        var found: [LeaseID] = []
        forEachConflicting(claim) { (other: ClaimRecord) -> Void in
            if let lease = other.id.lease, !found.contains(lease) { found.append(lease) }
        }
        if found.count == 1, let lease = leases[found[0]], lease.client == claim.request.client, lease.state == .held,
            !claim.request.isHeld, claim.request.mayBeDecided(inLeaseOn: lease.subtree),
            claim.entries.allSatisfy({ $0.path == lease.subtree || $0.path.isDescendant(of: lease.subtree) })
        {
            statistics.claimsHandedToLeases += 1
            effects.append(.claimInsideLease(id, client: claim.request.client, lease: lease.id))
            remove(claim)
            return
        }
        for lease in found { requestRecall(lease) }
    }

    /// Recalls every held lease that some claim conflicts with: after a move, when claims may have followed an item
    /// into a leased subtree. O(leases × their depth); moves are rare.
    func recallLeasesInConflict() {
        for lease in leases.values.sorted(by: { $0.id < $1.id }) where lease.state == .held {
            guard let claim = claims[lease.id.claim] else { continue }
            var conflicting = false
            forEachConflicting(
                claim,
                until: { (_: ClaimRecord) -> Bool in
                    conflicting = true
                    return false
                }
            )
            if conflicting { requestRecall(lease.id) }
        }
    }

    /// `true` when `subtree` is at, under or above a subtree no lease may touch (``excludeLeases(around:)``).
    func isExcludedFromLeases(_ subtree: ItemPath) -> Bool {
        leaseExclusions.contains { subtree.isEqualOrDescendant(of: $0) || $0.isDescendant(of: subtree) }
    }

    /// From now on no lease is granted at, under or above `path`, and those there now are recalled (issue 26): the
    /// host's paths under `path` may be other names of files elsewhere that only the host maps (the daemon's
    /// document-portal mount, whose paths the daemon keys as the host files they export), so a lease's holder could
    /// not decide claims on them in its own process. At most ``maximumLeaseExclusions`` paths: one more excludes the
    /// root instead, so that no lease is granted to anyone from then on (safe, and bounded).
    ///
    /// - Returns: What the host must do (the recalls), in order.
    public func excludeLeases(around path: ItemPath) -> [ArbiterEffect] {
        effects = []
        if !leaseExclusions.contains(path) {
            if leaseExclusions.count < Self.maximumLeaseExclusions {
                leaseExclusions.append(path)
            } else {
                leaseExclusions = [.root]  // Every subtree is under the root: no lease any more.
            }
        }
        recallLeases(around: leaseExclusions.last == .root ? .root : path)
        let out = effects
        effects = []
        return out
    }

    /// Recalls the leases at, under or above a presenter's new path.
    func recallLeases(around path: ItemPath?) {
        guard !leases.isEmpty, let path else { return }
        for lease in leases.values.sorted(by: { $0.id < $1.id })
        where lease.subtree == path || path.isDescendant(of: lease.subtree) || lease.subtree.isDescendant(of: path) {
            requestRecall(lease.id)
        }
    }

    /// Recalls at once, minimum hold or not, every lease at, under or above `path`: the host's keys below `path`
    /// changed (a file system mounted or unmounted at `path` that folds names otherwise), so a holder that compares its
    /// own spellings with a lease's folder could decide there by keys no longer the others'.
    ///
    /// A lease whose folder lies below `path` is keyed by the old table, and its holder may have decided claims in it
    /// since the change, whatever the state of the lease (a recall it has not read yet decides nothing for it): their
    /// paths key otherwise now, outside the lease's folder as keyed. So its claim holds `path` too from now on, until
    /// the lease is returned with its running claims, keyed by the new table (``addStandingEntry(to:at:)``). A lease at
    /// or above `path` holds every new key below `path` already.
    ///
    /// - Returns: What the host must do (the recalls), in order.
    public func recallLeasesAtOnce(around path: ItemPath) -> [ArbiterEffect] {
        effects = []
        for lease in leases.values.sorted(by: { $0.id < $1.id })
        where lease.subtree == path || path.isDescendant(of: lease.subtree) || lease.subtree.isDescendant(of: path) {
            if lease.subtree.isDescendant(of: path), let claim = claims[lease.id.claim] {
                addStandingEntry(to: claim, at: path)
            }
            requestRecall(lease.id, atOnce: true)
        }
        let out = effects
        effects = []
        return out
    }

    /// Widens a claim of the arbiter's own making (``enterStandingClaim(_:of:purpose:on:)``) by a
    /// `.write(.forDeleting)` on `path`, unless it holds that already: what waits for the claim now waits for it at
    /// `path` too, and ``remove(_:)`` takes every entry with it. Claims granted at `path` before stay granted (the
    /// change that calls for this came from outside coordination). At most one entry per ancestor of the claim's
    /// first path.
    func addStandingEntry(to claim: ClaimRecord, at path: ItemPath) {
        guard !claim.entries.contains(where: { $0.path == path }) else { return }
        let node = tree.effectiveNode(path)
        claim.entries.append(ClaimEntry(path: path, access: .write(.forDeleting), node: node))
        tree.addEntry(EntryRef(claim: claim.id, index: claim.entries.count - 1), at: node)
    }

    /// Asks the holder for the lease back, now, or when its minimum hold time has passed; `atOnce` (a host gate
    /// closing over the lease: this host no longer decides there) does not wait for the minimum hold.
    func requestRecall(_ id: LeaseID, atOnce: Bool = false) {
        guard let lease = leases[id], lease.state == .held || (atOnce && lease.state == .recallDue) else { return }
        if lease.minimumHoldPassed || atOnce {
            sendRecall(lease)
        } else {
            lease.state = .recallDue
        }
    }

    private func sendRecall(_ lease: LeaseRecord) {
        lease.state = .recalled
        lease.recalledAt = now
        statistics.leaseRecalls += 1
        effects.append(.recallLease(lease.id, client: lease.client))
        if let timeout = configuration.presenterTimeout {
            effects.append(.startTimer(.leaseRecallReply(lease.id), after: timeout))
        }
        log(.debug, "lease recalled", ["lease.id": "\(lease.id.rawValue)", "client.id": "\(lease.client.rawValue)"])
        guard let policy = configuration.leases, let holder = clients[lease.client] else { return }
        holder.recalls += 1
        let backoff = min(policy.maximumBackoff, holder.backoff.map { $0 * 2 } ?? policy.initialBackoff)
        holder.backoff = backoff
        guard backoff > .zero else { return }  // A policy without back-off (benchmarks).
        if holder.inBackoff { effects.append(.cancelTimer(.leaseBackoff(lease.client))) }
        holder.inBackoff = true
        effects.append(.startTimer(.leaseBackoff(lease.client), after: backoff))
    }

    func leaseMinimumHoldPassed(_ id: LeaseID) {
        guard let lease = leases[id] else { return }
        lease.minimumHoldPassed = true
        switch lease.state {
        case .recallDue:
            sendRecall(lease)
        case .held:
            clients[lease.client]?.backoff = nil  // A quiet lease: the next recall starts the back-off afresh.
        case .recalled, .recallUnanswered, .holderDisconnected:
            break
        }
    }

    /// The holder did not return a recalled lease within the presenter timeout. Unlike a presenter's silence this
    /// cannot count as a yes: the holder may be running claims inside the lease (a process stopped in an accessor),
    /// so the lease keeps holding back what conflicts with it, and says so in dumps and reports (§13.3).
    func leaseRecallUnanswered(_ id: LeaseID) {
        guard let lease = leases[id], lease.state == .recalled else { return }
        lease.state = .recallUnanswered
        statistics.leaseRecallTimeouts += 1
        log(
            .warning,
            "lease holder did not answer its recall in time; its lease still holds back conflicting claims",
            ["lease.id": "\(id.rawValue)", "client.id": "\(lease.client.rawValue)", "item.path": "\(lease.subtree)"]
        )
    }

    // MARK: Return

    func leaseReturned(_ id: LeaseID, by clientID: ClientID, running: [ClaimRequest]) {
        guard clients[clientID] != nil else {
            // Nothing comes from a closed connection: its claims would outlive it (a kept lease waits for its time).
            log(.debug, "return of a lease by a disconnected client ignored", ["lease.id": "\(id.rawValue)"])
            return
        }
        guard let lease = leases[id], lease.client == clientID else {
            log(.debug, "return of an unknown lease ignored", ["lease.id": "\(id.rawValue)"])
            for request in running {
                // Nothing of this lease is known (a restarted arbiter, a lease already dropped): the claims the
                // client says it runs still hold back conflicting claims, as claims declared on reconnection do.
                declareRunning(request, of: clientID, inside: nil)
            }
            return
        }
        // The running claims first, so that nothing waiting for the lease slips in between.
        for request in running {
            declareRunning(request, of: clientID, inside: lease.subtree)
        }
        removeLease(lease)
        log(.debug, "lease returned", ["lease.id": "\(id.rawValue)", "running": "\(running.count)"])
    }

    private func declareRunning(_ request: ClaimRequest, of clientID: ClientID, inside subtree: ItemPath?) {
        var request = request
        request.client = clientID
        request.isHeld = true
        if let subtree,
            request.items.contains(where: { $0.path != subtree && !$0.path.isDescendant(of: subtree) })
        {
            // A move its accessor reported took an item out (the client returns the lease for it first).
            log(.debug, "claim declared with a lease reaches outside it", ["claim.id": "\(request.id.rawValue)"])
        }
        // As any claim: its files' other names in use are met too (issue 26), so a running claim through one name
        // keeps holding back claims through another once the lease is returned.
        requestClaimMeetingOtherNames(request)
    }

    /// Keeps a lease whose holder's connection the host closed while its process may live (a protocol error, a
    /// client that does not read), for `duration`: the holder may decide claims inside it until it reads the end of
    /// its connection, and declares those still running when it reconnects (as a new client: their held claims are
    /// taken at once, beside the kept lease). Meanwhile the lease is recalled by nothing (nobody would answer) and
    /// holds back every conflicting claim, as an unanswered recall does (docs/SEMANTICS.md §13.5).
    func orphanLease(_ id: LeaseID, for duration: Duration) {
        guard let lease = leases[id] else { return }
        if !lease.minimumHoldPassed {
            effects.append(.cancelTimer(.leaseMinimumHold(id)))
            lease.minimumHoldPassed = true
        }
        if lease.state == .recalled, configuration.presenterTimeout != nil {
            effects.append(.cancelTimer(.leaseRecallReply(id)))
        }
        lease.state = .holderDisconnected
        effects.append(.startTimer(.leaseOrphaned(id), after: duration))
        log(
            .warning,
            "the connection of a lease holder was closed; its lease holds back conflicting claims a while longer",
            ["lease.id": "\(id.rawValue)", "client.id": "\(lease.client.rawValue)", "item.path": "\(lease.subtree)"]
        )
    }

    /// A lease kept after its holder's connection closed (``orphanLease(_:for:)``) has been kept long enough.
    func orphanedLeaseTimePassed(_ id: LeaseID) {
        guard let lease = leases[id], lease.state == .holderDisconnected else { return }
        removeLease(lease)
        log(.info, "kept lease of a closed connection released", ["lease.id": "\(id.rawValue)"])
    }

    /// Removes a lease whose holder disconnected.
    func dropLease(_ id: LeaseID) {
        guard let lease = leases[id] else { return }
        effects.append(.leaseDropped(id, client: lease.client))
        removeLease(lease)
    }

    private func removeLease(_ lease: LeaseRecord) {
        if !lease.minimumHoldPassed { effects.append(.cancelTimer(.leaseMinimumHold(lease.id))) }
        if lease.state == .recalled, configuration.presenterTimeout != nil {
            effects.append(.cancelTimer(.leaseRecallReply(lease.id)))
        }
        leases[lease.id] = nil
        clients[lease.client]?.leases.remove(lease.id)
        if let claim = claims[lease.id.claim] { remove(claim) }
    }

    /// Refuses an event that names a lease's claim as if it were a client's claim: `true` when it did.
    func rejectLeaseClaim(_ id: ClaimID, _ what: String) -> Bool {
        guard id.isReserved else { return false }
        log(
            .warning,
            "\(what) of a \(id.isLease ? "lease's" : "host gate's") claim ignored",
            ["claim.id": "\(id.rawValue)"]
        )
        return true
    }

    // MARK: Reading

    /// The live leases, by id.
    public func leaseSnapshots() -> [LeaseSnapshot] {
        leases.values.sorted { $0.id < $1.id }.map { lease in
            LeaseSnapshot(
                id: lease.id,
                client: lease.client,
                subtree: lease.subtree,
                state: lease.state,
                grantedAt: lease.grantedAt,
                recalledAt: lease.recalledAt,
                recalls: clients[lease.client]?.recalls ?? 0
            )
        }
    }
}
