import FCCore

/// Invariant 10 (issue 43; docs/SEMANTICS.md §2 rule 9), in one seed of three: a claim that must not wait
/// (`ClaimRequest.nonblocking`, `fccoord -n`) is never queued, and is refused only when a conflicting claim existed.
///
/// - Never queued: after every event, such a claim that is still waiting is held back by leases being recalled alone
///   (held, recall due or recalled): never by a client's claim, a host gate, or a lease whose recall went unanswered
///   or whose holder's connection was closed.
/// - Refused only for a reason: each `.wouldWait` failure is of such a claim, and a claim it conflicts with by the
///   spec (``SpecModel``) and is not exempt from existed before or after the event: granted or preparing, or waiting
///   and arrived before it; a lease counts only in a state that refuses.
struct NonblockingModel {
    /// Claims that must not wait and are live.
    private(set) var live: Set<ClaimID> = []
    /// How many were refused, and how many granted (a run that saw neither checked nothing).
    private(set) var refused = 0
    private(set) var granted = 0

    /// Whether the event needs the snapshot before it: a claim that must not wait arrives or lives.
    func needsSnapshot(before event: ArbiterEvent) -> Bool {
        if case .claimRequested(let request) = event, request.nonblocking { return true }
        return !live.isEmpty
    }

    mutating func check(
        after event: ArbiterEvent,
        effects: [ArbiterEffect],
        requests: [ClaimID: ClaimRequest],
        before: ArbiterSnapshot?,
        arbiter: Arbiter,
        packageExtensions: Set<[UInt8]>
    ) -> [String] {
        var violations: [String] = []
        if case .claimRequested(let request) = event, request.nonblocking, !request.isHeld { live.insert(request.id) }
        let after = arbiter.snapshot()
        let leases = Dictionary(uniqueKeysWithValues: arbiter.leaseSnapshots().map { ($0.id.claim, $0.state) })
        let refusing = { (claim: ClaimID) -> Bool in
            guard claim.isLease else { return true }
            guard let state = leases[claim] else { return false }
            return state == .recallUnanswered || state == .holderDisconnected
        }
        for effect in effects {
            switch effect {
            case .grant(let id, _, _) where live.contains(id):
                granted += 1
            case .fail(let id, _, .wouldWait(let report)):
                refused += 1
                guard let request = requests[id], request.nonblocking else {
                    violations.append("\(id) refused as a claim that would wait, which it did not ask: \(report)")
                    continue
                }
                let sequence = before?.claims.first { $0.request.id == id }?.sequence ?? .max
                let snapshots = [before, after].compactMap { $0 }
                let names = Self.names(in: snapshots)
                // A move in this event relocated the waiting claim's items before it was refused (rule 7).
                var moved: (from: ItemPath, to: ItemPath)?
                if case .itemMoved(_, let from, let to, _) = event { moved = (from, to) }
                let reasons = snapshots.flatMap(\.claims).filter { other in
                    other.request.id != id && !SpecModel.exempt(request, other.request)
                        && (other.phase != .waiting || other.sequence < sequence) && refusing(other.request.id)
                        && Self.conflict(
                            request,
                            other,
                            names: names,
                            moved: moved,
                            packageExtensions: packageExtensions
                        )
                }
                if reasons.isEmpty { violations.append("\(id) refused with no conflicting claim: \(report)") }
            default:
                break
            }
        }
        live = live.filter { arbiter.phase(of: $0) != nil }
        for id in live.sorted() where arbiter.phase(of: id) == .waiting {
            let blockers = arbiter.blockers(of: id).filter(refusing)
            if !blockers.isEmpty { violations.append("\(id), which must not wait, is queued behind \(blockers)") }
        }
        return violations
    }

    /// The names each file is known by (issue 26): the items of the live claims and the presenters that name it.
    private static func names(in snapshots: [ArbiterSnapshot]) -> [ItemIdentity: Set<ItemPath>] {
        var names: [ItemIdentity: Set<ItemPath>] = [:]
        for snapshot in snapshots {
            for claim in snapshot.claims {
                for item in claim.request.items {
                    if let identity = item.identity { names[identity, default: []].insert(item.path) }
                }
            }
            for registration in snapshot.presenters.values {
                if let identity = registration.identity, let path = registration.path {
                    names[identity, default: []].insert(path)
                }
            }
        }
        return names
    }

    /// Whether an item of `request`, by its path (or where `moved` took it), another name of its file, or the file
    /// itself, conflicts with one of `other`'s, by rules 1 to 3.
    private static func conflict(
        _ request: ClaimRequest,
        _ other: ArbiterSnapshot.Claim,
        names: [ItemIdentity: Set<ItemPath>],
        moved: (from: ItemPath, to: ItemPath)?,
        packageExtensions: Set<[UInt8]>
    ) -> Bool {
        // A file with other names waits for every lease (docs/SEMANTICS.md §13: its names may lie in any).
        if other.request.id.isLease, request.items.contains(where: \.hasOtherNames) { return true }
        // One file in both, written by either (its names may have moved with a granted claim since it was named).
        for a in request.items where a.identity != nil {
            for b in other.request.items where b.identity == a.identity && (a.access.isWrite || b.access.isWrite) {
                return true
            }
        }
        return request.items.contains { item in
            let relocated = moved.flatMap { item.path.relocated(from: $0.from, to: $0.to) }
            let spellings =
                [item.path] + (relocated.map { [$0] } ?? [])
                + (item.identity.flatMap { names[$0] }.map(Array.init) ?? [])
            return spellings.contains { name in
                let mine = SpecModel.effectivePath(name, packageExtensions: packageExtensions)
                return zip(other.paths, other.accesses).contains { path, access in
                    let theirs = SpecModel.effectivePath(path, packageExtensions: packageExtensions)
                    return SpecModel.conflict(mine, item.access, theirs, access)
                }
            }
        }
    }
}
