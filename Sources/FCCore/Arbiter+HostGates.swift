/// Host gates: how the arbiter keeps its own processes' claims out of a shared folder while another host may decide
/// claims there (issue 40; docs/SEMANTICS.md §14).
///
/// A shared folder is one that several hosts mount. A host decides claims inside it only while it holds the folder's
/// host lease (``HostLeaseTable``, one level up). While it does not, the arbiter keeps a *host gate* there: a claim
/// standing in the conflict checks as a granted write with `.forDeleting` on the folder, from which no claim is exempt
/// (as a process lease, Arbiter+Leases.swift). So every claim inside waits for the gate by the ordinary rules (FIFO,
/// deadlines, deadlock reports, cancellation), no process lease is granted inside it (a lease needs a subtree with no
/// claim above it), and a claim that would delete or move a folder around it waits too. The gate asks no presenter
/// anything and holds no file-system event back: it is not a write, only the absence of the right to decide.
///
/// The host's cluster adapter drives the gates with ``ArbiterEvent/hostGate(_:_:)`` and hears
/// ``ArbiterEffect/hostGateWanted(_:)`` (a claim waits at a gate) and ``ArbiterEffect/hostGateDrained(_:)`` (after a
/// drain, nothing inside is granted any more). Per event the work is O(the claims that meet the gate the event names);
/// a drain in progress is checked after each event, O(draining gates × the first granted claim found).
final class HostGateRecord {
    let folder: ItemPath
    let claim: ClaimID
    /// `true` from a drain until nothing inside is granted (``ArbiterEffect/hostGateDrained(_:)`` sent).
    var draining = false

    init(folder: ItemPath, claim: ClaimID) {
        self.folder = folder
        self.claim = claim
    }
}

extension ClientID {
    /// The owner the arbiter gives its host gates' claims: no client has this id (clients are numbered from 1 by
    /// their host), and nothing is ever sent to it.
    public static let hostGate = ClientID(UInt64.max)
}

extension ClaimID {
    /// The bit that marks the claims standing for host gates (``isHostGate``): no client may use an id with it.
    public static let hostGateBit: UInt64 = 1 << 62

    /// `true` for the claim that stands for a host gate.
    public var isHostGate: Bool { rawValue & Self.hostGateBit != 0 && rawValue & Self.leaseBit == 0 }

    /// `true` for a claim of the arbiter's own making (a lease's or a host gate's), which no client may name.
    public var isReserved: Bool { rawValue & (Self.leaseBit | Self.hostGateBit) != 0 }
}

/// A host gate, for dumps and tests.
public struct HostGateSnapshot: Hashable, Sendable {
    /// The shared folder.
    public var folder: ItemPath
    /// The claim that stands for the gate in ``Arbiter/snapshot()``.
    public var claim: ClaimID
    /// A drain is in progress: the gate waits for the claims granted inside to end.
    public var draining: Bool
    /// Claims waiting at the gate.
    public var waiting: Int
}

extension Arbiter {
    // MARK: Commands

    func hostGate(_ folder: ItemPath, _ command: HostGateCommand) {
        switch command {
        case .close:
            // Also over a drain: the host no longer holds the folder (a fence), so nothing passes any more, a nested
            // claim of a claim granted inside included (until stop 67 a fence during a drain left it passing).
            closeHostGate(folder).draining = false
            recallLeases(inside: folder)
        case .open(let revision):
            openHostGate(folder, revision: revision)
        case .drain:
            let gate = closeHostGate(folder)
            gate.draining = true
            // The drain waits for the claims granted inside: those past their longest hold end now (issue 42).
            if let claim = claims[gate.claim] { noteOverdueHolds(blocking: claim) }
            // The process leases inside come back with their running claims, which the drain then waits for.
            recallLeases(inside: folder)
        case .failWaiting(let reason):
            failClaimsWaiting(at: folder, reason)
        case .claimsLost(let reason):
            reportClaimsLost(in: folder, reason)
        }
    }

    /// Recalls the process leases inside a closed gate at once, minimum hold or not: their holders decide claims in
    /// process, and this host no longer decides there (a fence, a drain).
    private func recallLeases(inside folder: ItemPath) {
        guard !leases.isEmpty, let gate = hostGates[folder], let claim = claims[gate.claim] else { return }
        var inside: [LeaseID] = []
        forEachConflicting(claim) { (other: ClaimRecord) -> Void in
            if let lease = other.id.lease, !inside.contains(lease) { inside.append(lease) }
        }
        for lease in inside.sorted() { requestRecall(lease, atOnce: true) }
    }

    /// Whether `claim` may pass the gate that `gateClaim` stands for: only while the gate drains, and only a claim
    /// exempt from a claim granted inside it (a nested access by the same coordinator, presenter or purpose). The
    /// drain waits for that granted claim, whose accessor may be waiting for this very claim: holding it back would
    /// deadlock across the hosts, and the host still holds the folder (its key is first in the store) until the
    /// drain ends. O(granted claims), only for a claim that meets a draining gate.
    func passesDrainingGate(_ claim: ClaimRecord, _ gateClaim: ClaimRecord) -> Bool {
        guard let gate = hostGate(standingAs: gateClaim.id), gate.draining else { return false }
        let holders = exemptHolders(of: claim)
        guard !holders.isEmpty else { return false }
        var inside = false
        forEachConflicting(
            gateClaim,
            until: { (other: ClaimRecord) -> Bool in
                if holders.contains(other.id) { inside = true }
                return !inside
            }
        )
        return inside
    }

    /// A claim declared as held (after a restart of the daemon) that lies inside a closed gate: it runs, but this host
    /// does not hold the folder, so it is not exclusive across hosts. Logged as lost.
    func noteHeldClaimInsideGate(_ claim: ClaimRecord) {
        guard !hostGates.isEmpty else { return }
        var folders: [ItemPath] = []
        forEachConflicting(claim) { (other: ClaimRecord) -> Void in
            guard other.id.isHostGate, let gate = hostGate(standingAs: other.id), !folders.contains(gate.folder) else {
                return
            }
            folders.append(gate.folder)
        }
        for folder in folders {
            logNotExclusive(
                claim,
                in: folder,
                "a claim declared running in a shared folder this host does not hold is not exclusive across hosts"
            )
        }
    }

    /// Places the gate on `folder`, unless one is there.
    @discardableResult
    private func closeHostGate(_ folder: ItemPath) -> HostGateRecord {
        if let gate = hostGates[folder] { return gate }
        nextHostGate += 1
        let id = ClaimID(ClaimID.hostGateBit | nextHostGate)
        let gate = HostGateRecord(folder: folder, claim: id)
        let claim = enterStandingClaim(id, of: .hostGate, purpose: PurposeID("host gate \(folder)"), on: folder)
        hostGates[folder] = gate
        // Claims already waiting inside now wait for the gate too, once what they wait for ends: ask for the folder.
        var waiting = false
        forEachConflicting(
            claim,
            until: { (other: ClaimRecord) -> Bool in
                if other.phase != .granted { waiting = true }
                return !waiting
            }
        )
        if waiting { effects.append(.hostGateWanted(folder)) }
        log(.info, "host gate closed: claims in this shared folder wait for this host's turn", ["folder": "\(folder)"])
        return gate
    }

    private func openHostGate(_ folder: ItemPath, revision: Int64) {
        guard let gate = hostGates.removeValue(forKey: folder) else { return }
        // The claims that waited at it may come to wait at a later gate: they say so again then.
        for id in parked[gate.claim] ?? [] { claims[id]?.askedHostGate = false }
        if let claim = claims[gate.claim] { remove(claim) }  // Unparks the claims that waited for it.
        log(
            .info,
            "host gate open: this host holds the shared folder",
            ["folder": "\(folder)", "cluster.revision": "\(revision)"]
        )
    }

    /// Fails every claim that waits for the gate on `folder`: the claims conflicting with it that are not granted.
    private func failClaimsWaiting(at folder: ItemPath, _ reason: String) {
        guard let gate = hostGates[folder], let claim = claims[gate.claim] else { return }
        var waiting: [ClaimRecord] = []
        forEachConflicting(claim) { (other: ClaimRecord) -> Void in
            guard other.phase != .granted, !other.id.isReserved, !waiting.contains(where: { $0 === other }) else {
                return
            }
            waiting.append(other)
        }
        for other in waiting.sorted(by: { $0.sequence < $1.sequence }) where claims[other.id] != nil {
            log(
                .notice,
                "claim failed: \(reason)",
                ["claim.id": "\(other.id.rawValue)", "client.id": "\(other.request.client.rawValue)"]
            )
            fail(other, .clusterUnreachable(reason))
        }
    }

    /// Logs every claim granted inside `folder` as no longer exclusive across hosts.
    private func reportClaimsLost(in folder: ItemPath, _ reason: String) {
        guard let gate = hostGates[folder], let claim = claims[gate.claim] else { return }
        var granted: Set<ClaimID> = []
        forEachConflicting(claim) { (other: ClaimRecord) -> Void in
            guard other.phase == .granted, !other.id.isHostGate, granted.insert(other.id).inserted else { return }
            logNotExclusive(
                other,
                in: folder,
                "a claim granted in a shared folder is no longer exclusive across hosts: \(reason)"
            )
        }
    }

    /// Logs `claim` as not exclusive across hosts in `folder`, with its process.
    private func logNotExclusive(_ claim: ClaimRecord, in folder: ItemPath, _ message: String) {
        let holder = clients[claim.request.client]?.info
        log(
            .error,
            message,
            [
                "folder": "\(folder)", "claim.id": "\(claim.id.rawValue)",
                "client.id": "\(claim.request.client.rawValue)", "client.pid": "\(holder?.pid ?? 0)",
                "client.name": holder?.name ?? "?",
            ]
        )
    }

    // MARK: Waiting and draining

    /// Says which closed gates a new claim waits at (``ArbiterEffect/hostGateWanted(_:)``), so that the host asks
    /// the cluster for the folder while the claim waits for anything else. O(the claims it conflicts with).
    func noteHostGates(conflictingWith id: ClaimID) {
        guard !hostGates.isEmpty, let claim = claims[id], claim.phase != .granted else { return }
        var folders: [ItemPath] = []
        forEachConflicting(claim) { (other: ClaimRecord) -> Void in
            guard other.id.isHostGate, other.phase == .granted, let gate = hostGate(standingAs: other.id),
                !folders.contains(gate.folder)
            else {
                return
            }
            folders.append(gate.folder)
        }
        if !folders.isEmpty { claim.askedHostGate = true }
        for folder in folders { effects.append(.hostGateWanted(folder)) }
    }

    /// The gate whose claim is `id`. O(gates): a host shares a handful of folders.
    func hostGate(standingAs id: ClaimID) -> HostGateRecord? {
        hostGates.values.first { $0.claim == id }
    }

    /// After an event: every draining gate with nothing granted inside any more says so, once.
    func checkDrainingHostGates() {
        guard !hostGates.isEmpty else { return }
        for gate in hostGates.values.sorted(by: { $0.folder < $1.folder }) where gate.draining {
            guard let claim = claims[gate.claim] else { continue }
            var granted = false
            forEachConflicting(
                claim,
                until: { (other: ClaimRecord) -> Bool in
                    if other.phase == .granted && !other.id.isHostGate { granted = true }
                    return !granted
                }
            )
            if !granted {
                gate.draining = false
                effects.append(.hostGateDrained(gate.folder))
            }
        }
    }

    // MARK: Reading

    /// The host gates, by folder.
    public func hostGateSnapshots() -> [HostGateSnapshot] {
        hostGates.values.sorted { $0.folder < $1.folder }.map { gate in
            var waiting: Set<ClaimID> = []
            if let claim = claims[gate.claim] {
                forEachConflicting(claim) { (other: ClaimRecord) -> Void in
                    if other.phase != .granted, !other.id.isReserved { waiting.insert(other.id) }
                }
            }
            return HostGateSnapshot(
                folder: gate.folder,
                claim: gate.claim,
                draining: gate.draining,
                waiting: waiting.count
            )
        }
    }
}
