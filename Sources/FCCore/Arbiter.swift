/// The arbitration state machine: who may access which item when, and which presenter must hear what.
///
/// `Arbiter` is sans-I/O. The host (the daemon's event loop, or the in-process arbiter of the client library) feeds
/// it ``ArbiterEvent``s with ``handle(_:at:)`` and carries out the ``ArbiterEffect``s it returns, in order: grants and
/// failures go to the claim's client, messages to the presenter's client, timers to the host's clock. Time only
/// arrives as ``ArbiterEvent/timerFired(_:)`` and as the host's timestamp of each event (``handle(_:at:)``, used
/// for nothing but the wait times in reports); the arbiter never reads a clock.
///
/// The rules are docs/SEMANTICS.md §2 (who waits for whom) and §3 (which presenter hears what); `docs/ARCHITECTURE.md`
/// maps each rule to the code that implements it.
///
/// - Important: Not thread-safe. One arbiter is owned by one thread or event loop, which calls every method.
///   Bad input (unknown ids, replies to nothing, a finish for a claim never granted) is logged and ignored: no client
///   can crash or corrupt the arbiter.
public final class Arbiter {
    /// The settings this arbiter was created with.
    public let configuration: ArbiterConfiguration
    /// Counters, for the dump and for tests.
    public internal(set) var statistics = ArbiterStatistics()

    var tree: AccessTree
    var clients: [ClientID: ClientRecord] = [:]
    var presenters: [PresenterID: PresenterRecord] = [:]
    var claims: [ClaimID: ClaimRecord] = [:]
    /// Claims not yet granted, in arrival order (the FIFO of rule 6).
    var pendingOrder: [ClaimID] = []
    /// Waiting claims set aside until the active claim they wait for ends, by that claim (``park(_:on:)``).
    var parked: [ClaimID: [ClaimID]] = [:]
    /// Granted claims held past their ``ClaimRequest/maximumHold`` (ClaimHoldLimit.swift), and those of them a
    /// waiting claim found, to end once the current pass is over.
    var overdueHolds: Set<ClaimID> = []
    var holdsToEnd: [ClaimID] = []
    /// Bumped by every event that can change the wait-for graph (all but a deadlock check's timer that broke no
    /// cycle).
    var graphGeneration = 0
    /// Wait-for nodes from which no cycle is reachable, valid while `acyclicGeneration == graphGeneration`.
    var acyclicNodes: Set<WaitNode> = []
    var acyclicGeneration = -1
    /// The generation in which a search from the claims that hold a presenter's queue found no cycle, so that the
    /// graph had none (``findCycle(from:)``): valid, like ``acyclicNodes``, while the generation is unchanged.
    var noCycleGeneration = -1
    var requests: [RequestID: PendingRequest] = [:]
    /// Requests whose presenter timed out; a late reply may still hand back a reacquirer.
    var timedOutRequests: [RequestID: PendingRequest] = [:]
    var nextSequence: UInt64 = 0
    var nextRequest: UInt64 = 0
    /// The last deadlock reports (see ``recentDeadlockReports``).
    var deadlockReports: [String] = []
    /// Effects of the event being handled.
    var effects: [ArbiterEffect] = []
    /// Subtrees no lease may be at, under or above (``excludeLeases(around:)``, issue 26).
    public internal(set) var leaseExclusions: [ItemPath] = []
    /// Most paths ``leaseExclusions`` holds.
    public static let maximumLeaseExclusions = 16
    /// The host's time of the event being handled (``handle(_:at:)``), or `nil`.
    var now: Duration?
    /// What the file system watching rules keep (Arbiter+Watching.swift).
    var watching = WatchState()
    /// The live holders of each file identity (Arbiter+Identity.swift, issue 26).
    var identities = IdentityIndex()
    /// Live leases (Arbiter+Leases.swift), each standing in ``claims`` as its lease claim too.
    var leases: [LeaseID: LeaseRecord] = [:]
    var nextLease: UInt64 = 0
    /// Host gates on shared folders (Arbiter+HostGates.swift), each standing in ``claims`` as its gate claim too.
    var hostGates: [ItemPath: HostGateRecord] = [:]
    var nextHostGate: UInt64 = 0

    /// Creates an empty arbiter.
    public init(configuration: ArbiterConfiguration = ArbiterConfiguration()) {
        self.configuration = configuration
        self.tree = AccessTree(
            packageExtensions: configuration.packageExtensions,
            idleNodeRetention: configuration.idleNodeRetention
        )
    }

    /// Handles one event and returns what the host must do, in order.
    ///
    /// - Parameter now: The host's monotonic time of the event, from any fixed origin (the daemon passes the time
    ///   since it started). The arbiter never decides anything on it: it only says in deadlock reports how long
    ///   each wait has lasted. Without it the reports give the detection delay as a lower bound.
    public func handle(_ event: ArbiterEvent, at now: Duration? = nil) -> [ArbiterEffect] {
        effects = []
        self.now = now
        // The wait-for graph changes with every event but a deadlock check's own timer (issue 11.2), and with that
        // too when it breaks a cycle (below).
        if case .timerFired(.deadlockCheck) = event {} else { graphGeneration &+= 1 }
        let deadlocksBroken = statistics.deadlocksBroken
        noteMoves(event)
        switch event {
        case .clientConnected(let info):
            clientConnected(info)
        case .clientDisconnected(let id):
            clientDisconnected(id)
        case .clientClosed(let id, let duration):
            clientDisconnected(id, keepingLeasesFor: duration)
        case .presenterAdded(let registration):
            addPresenter(registration)
            if registration.identity != nil, registration.hasOtherNames { recallAllLeases() }
        case .presenterRemoved(let id):
            removePresenter(id, reason: "removed")
        case .presenterURLChanged(let id, let path):
            changePresenterURL(id, to: path)
        case .claimRequested(let request):
            requestClaimMeetingOtherNames(request)
            recallLeases(conflictingWith: request.id)
            noteHostGates(conflictingWith: request.id)
            // Not for a claim handed back into its own lease (gone from `claims`): see filesWithOtherNamesHeld.
            if claims[request.id] != nil, request.items.contains(where: \.hasOtherNames) { recallAllLeases() }
        case .claimFinished(let id, let created, let outcome):
            guard !rejectLeaseClaim(id, "finish") else { break }
            let finished = claims[id].flatMap { $0.phase == .granted ? $0 : nil }
            finishClaim(id, created: created, outcome: outcome)
            // A claim on a file with other names earns no lease: the next such claim would recall it at once.
            if let finished, let path = finished.entries.first?.path,
                !finished.request.items.contains(where: \.hasOtherNames)
            {
                considerLease(for: finished.request.client, item: path, purpose: finished.request.purpose)
            }
        case .preparationReturned(let id):
            guard !rejectLeaseClaim(id, "batch return") else { break }
            preparationReturned(id)
        case .coordinatorCancelled(let client, let coordinator):
            cancelCoordinator(client, coordinator)
        case .claimCancelled(let id):
            guard !rejectLeaseClaim(id, "cancel") else { break }
            cancelClaim(id)
        case .presenterReplied(let request, let reply):
            presenterReplied(request, reply)
        case .itemMoved(let claim, let from, let to, let fromName):
            guard !rejectLeaseClaim(claim, "move") else { break }
            itemMoved(claim, from: from, to: to, fromName: fromName)
            recallLeasesInConflict()  // Claims that followed the item may have come to wait for a lease.
        case .versionChanged(let claim, let path, let change):
            guard !rejectLeaseClaim(claim, "version change") else { break }
            versionChanged(claim, path, change)
        case .timerFired(let timer):
            timerFired(timer)
        case .fileSystemChanged(let events, let observed, let readAt, let drainedAt):
            forgetDeletedNames(in: events)
            fileSystemChanged(events, observed: observed, readAt: readAt)
            if let drainedAt { watcherDrained(through: drainedAt) }
        case .leaseReturned(let lease, let client, let running):
            leaseReturned(lease, by: client, running: running)
        case .hostGate(let folder, let command):
            hostGate(folder, command)
        }
        reevaluatePending()
        checkDrainingHostGates()
        armDeadlockChecks()
        flushWatchChanges()
        // A check that broke a cycle changed the graph after its last search (the failed claim's end started the
        // claims it held back, which may close a new cycle): what that search found cycle-free is not known to be.
        if statistics.deadlocksBroken != deadlocksBroken { graphGeneration &+= 1 }
        let out = effects
        effects = []
        return out
    }

    // MARK: Clients

    func client(_ id: ClientID) -> ClientRecord {
        if let existing = clients[id] { return existing }
        let record = ClientRecord(info: ClientInfo(id: id, pid: 0, name: "client-\(id.rawValue)"))
        clients[id] = record
        return record
    }

    private func clientConnected(_ info: ClientInfo) {
        if let existing = clients[info.id] {
            existing.info = info
        } else {
            clients[info.id] = ClientRecord(info: info)
        }
    }

    private func clientDisconnected(_ id: ClientID, keepingLeasesFor kept: Duration? = nil) {
        guard let record = clients.removeValue(forKey: id) else {
            log(.debug, "disconnect of an unknown client ignored", ["client.id": "\(id.rawValue)"])
            return
        }
        // Its leases go at once: a process that is gone runs nothing inside them (docs/SEMANTICS.md §13). One whose
        // connection the host closed may still run claims in them until it notices: they stay a while.
        for lease in record.leases.sorted() {
            if let kept { orphanLease(lease, for: kept) } else { dropLease(lease) }
        }
        for presenter in record.presenters.sorted() {
            removePresenter(presenter, reason: "client disconnected")
        }
        for claimID in record.claims.sorted() {
            guard let claim = claims[claimID] else { continue }
            if claim.phase == .granted {
                // The accessor may have written before the process died: presenters hear of it as of any write.
                completeGranted(claim, created: [])
            } else {
                abandon(claim, failure: nil)
            }
        }
        log(.info, "client disconnected; its claims and presenters are gone", ["client.id": "\(id.rawValue)"])
    }

    // MARK: Presenters

    private func addPresenter(_ registration: PresenterRegistration) {
        guard presenters[registration.id] == nil else {
            log(.warning, "presenter registered twice; ignored", ["presenter.id": "\(registration.id.rawValue)"])
            return
        }
        let record = PresenterRecord(registration: registration)
        presenters[registration.id] = record
        client(registration.client).presenters.insert(registration.id)
        indexIdentity(of: registration)
        if let path = registration.path {
            let node = tree.node(path)
            tree.addPresenter(registration.id, at: node, declaresPackage: registration.isPackage)
            record.node = node
            if registration.isPackage && node.packageDeclarations == 1 { reindexClaims() }
        }
        changeWatchInterest(registration.path, by: 1)
        tellWatchFailures(to: registration.id)
        recallLeases(around: registration.path)
    }

    /// Places every live claim's items again after a package declaration came or went, so that an item inside a
    /// package counts as the package (rule 2) whenever the package was declared. Rare; costs O(live claims).
    func reindexClaims() {
        unparkAll()
        for claim in claims.values {
            for index in claim.entries.indices {
                let entry = claim.entries[index]
                let node = tree.effectiveNode(entry.path)
                guard node !== entry.node else { continue }
                let ref = EntryRef(claim: claim.id, index: index)
                tree.addEntry(ref, at: node)
                tree.removeEntry(ref, at: entry.node)
                claim.entries[index].node = node
            }
        }
    }

    /// Removes a presenter; its outstanding requests count as answered yes, and it gets no reacquirer.
    func removePresenter(_ id: PresenterID, reason: String) {
        guard let record = presenters.removeValue(forKey: id) else {
            log(.debug, "removal of an unknown presenter ignored", ["presenter.id": "\(id.rawValue)"])
            return
        }
        clients[record.registration.client]?.presenters.remove(id)
        forgetIdentity(of: record.registration)
        changeWatchInterest(record.registration.path, by: -1)
        if let node = record.node {
            tree.removePresenter(id, at: node, declaredPackage: record.registration.isPackage)
            if record.registration.isPackage && node.packageDeclarations == 0 { reindexClaims() }
        }
        for (requestID, request) in requests where request.presenter == id {
            requests[requestID] = nil
            cancelTimer(for: requestID)
            if let claimID = request.claim, let claim = claims[claimID] {
                claim.outstanding[requestID] = nil
                claim.plans[id] = nil
            }
        }
        timedOutRequests = timedOutRequests.filter { $0.value.presenter != id }
        for claim in claims.values {
            claim.reacquirers.removeAll { $0.presenter == id }
            claim.plans[id] = nil
        }
    }

    private func changePresenterURL(_ id: PresenterID, to path: ItemPath?) {
        guard let record = presenters[id] else {
            log(.debug, "URL change of an unknown presenter ignored", ["presenter.id": "\(id.rawValue)"])
            return
        }
        relocate(record, to: path)
    }

    func relocate(_ record: PresenterRecord, to path: ItemPath?) {
        let previous = record.registration.path
        if let node = record.node {
            tree.removePresenter(record.registration.id, at: node, declaredPackage: record.registration.isPackage)
            record.node = nil
        }
        changeWatchInterest(record.registration.path, by: -1)
        changeWatchInterest(path, by: 1)
        record.registration.path = path
        if let path {
            let node = tree.node(path)
            tree.addPresenter(record.registration.id, at: node, declaresPackage: record.registration.isPackage)
            record.node = node
        }
        if record.registration.isPackage { reindexClaims() }
        tellWatchFailures(to: record.registration.id, previous: previous)
        recallLeases(around: path)
    }

    // MARK: Helpers

    func log(_ level: LogLevel, _ message: String, _ metadata: [String: String] = [:]) {
        effects.append(.log(LogRecord(level: level, message: message, metadata: metadata)))
    }

    func cancelTimer(for request: RequestID) {
        if configuration.presenterTimeout != nil {
            effects.append(.cancelTimer(.presenterReply(request)))
        }
    }
}

@available(*, unavailable)
extension Arbiter: Sendable {}

/// Counters kept by the arbiter.
public struct ArbiterStatistics: Hashable, Sendable {
    /// Claims requested, including those refused at once.
    public var claimsRequested = 0
    /// Claims granted.
    public var claimsGranted = 0
    /// Claims whose client was told they failed: refused, cancelled or failed by a presenter.
    public var claimsFailed = 0
    /// Messages sent to presenters, requests and notifications alike.
    public var messagesSent = 0
    /// Requests whose presenter did not answer within the presenter timeout.
    public var presenterTimeouts = 0
    /// Deadlocks found (each broken by failing one claim).
    public var deadlocksBroken = 0
    /// Waits that passed the detection delay without being part of a deadlock.
    public var longWaits = 0
    /// Walks over the claims that conflict with one claim (a measure of the work per event: issue 11.2).
    public var conflictWalks = 0
    /// Claims read by those walks.
    public var conflictVisits = 0
    /// Wait-for graph nodes whose edges the deadlock detector computed.
    public var waitNodesExplored = 0
    /// Claims read to find which presenters' queues are held (``Arbiter/PresenterQueueHolds``): by each search of
    /// the wait-for graph once, not once per presenter it reaches (and by each dump of the graph).
    public var queueHoldClaimsRead = 0
    /// Leases granted (docs/SEMANTICS.md §13).
    public var leasesGranted = 0
    /// Recalls sent.
    public var leaseRecalls = 0
    /// Recalls that the holder did not answer within the presenter timeout.
    public var leaseRecallTimeouts = 0
    /// Claims of a lease's holder handed back to it, as lying inside the lease (sent before the grant reached it).
    public var claimsHandedToLeases = 0
    /// Claims ended because they held past their ``ClaimRequest/maximumHold`` while another claim waited (issue 42).
    public var holdsEnded = 0
    /// Creates counters that are all zero.
    public init() {}
}

/// The life of a claim.
public enum ClaimPhase: Hashable, Sendable, CustomStringConvertible {
    /// Blocked by a conflicting claim that is active or arrived earlier.
    case waiting
    /// Unblocked; the affected presenters are being asked to relinquish, save or accommodate.
    case preparing
    /// The accessor may run.
    case granted

    /// The phase's name, for logs.
    public var description: String {
        switch self {
        case .waiting: "waiting"
        case .preparing: "preparing"
        case .granted: "granted"
        }
    }
}

final class ClientRecord {
    var info: ClientInfo
    var presenters: Set<PresenterID> = []
    var claims: Set<ClaimID> = []
    /// The coordinators this client cancelled, so that a claim of one that crossed the cancel on the way is failed
    /// too. The client refuses a cancelled coordinator's later calls itself; only such a crossing claim needs this,
    /// so the most recent ``maximumCancelledCoordinators`` are enough, and memory stays bounded however many
    /// coordinators a long connection cancels.
    var cancelledCoordinators = RecentSet<CoordinatorID>(capacity: ClientRecord.maximumCancelledCoordinators)
    /// How many cancelled coordinators a client's record keeps.
    static let maximumCancelledCoordinators = 1024
    /// The leases this client holds.
    var leases: Set<LeaseID> = []
    /// Recalls this client has had.
    var recalls = 0
    /// The back-off the next recall doubles (``LeasePolicy``); `nil` after a quiet lease.
    var backoff: Duration?
    /// `true` while the back-off timer runs: the client gets no new lease.
    var inBackoff = false
    init(info: ClientInfo) { self.info = info }
}

final class PresenterRecord {
    var registration: PresenterRegistration
    var node: AccessNode?
    init(registration: PresenterRegistration) { self.registration = registration }
}

struct PendingRequest {
    var presenter: PresenterID
    /// The claim waiting for the reply; `nil` once that claim has failed (an orphaned request).
    var claim: ClaimID?
    var kind: PresenterMessageKind
    /// When the request was sent, on the host's clock; `nil` when the host gives no time.
    var sentAt: Duration?
}
