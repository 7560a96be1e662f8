import FCCore
import FCTestSupport

/// One random schedule of many clients and presenters against one arbiter, with the invariants of issue #2 checked
/// after every step. Deterministic: the same seed gives the same schedule and the same effects.
///
/// Invariants:
/// 1. Mutual exclusion: no two conflicting, non-exempt claims are granted at once (checked with ``SpecModel``).
/// 2. No needless wait: a waiting claim has a blocker by the rules; a preparing claim with no reply owed is held only
///    by a granted conflicting claim. With the final drain, every claim is granted or failed once its blockers leave.
/// 3. Messages: only to registered presenters, only for declared callbacks, never to the claim's own presenter
///    (versions and reacquirers aside), at most one relinquish per presenter per claim, a reacquire exactly once for
///    each relinquish answered with a reacquirer, one did-change per presenter per write.
/// 4. Disconnect: nothing of a disconnected client survives; at the end the tree holds nothing but its root and the
///    idle nodes kept for reuse.
/// 6. Bounded tree: the leaves that hold nothing never outnumber the idle-node retention (issue 12; the seed picks a
///    small retention, so that the oldest idle nodes are pruned as well as reused).
/// 5. Each claim is granted at most once and failed at most once, never both.
/// 7. Leases (issue 23; docs/SEMANTICS.md §13): a lease goes only to a client that answers recalls and is alone in
///    the subtree; a held lease has no claim or presenter overlapping it (else it was recalled); and no two processes
///    ever believe they hold conflicting claims: every claim a holder grants in process, inside a lease it has not
///    seen recalled, conflicts with no claim the arbiter granted and with no other process's claim granted in process.
///    Faults: holders that die (disconnect), that never answer a recall (its timer fires), that answer late.
///    Issue 26: halfway through a schedule in one seed of three, `/r/b` is excluded from leases (as the daemon does
///    for the document portal's mount), with the recalls that brings; no lease at, under or above it is granted
///    after that.
/// 8. Echoes (issue 37): a file-system event on an item that changed after every coordinated write of it ended is
///    never dropped as an echo. The simulator keeps a model of the items' states and a clock: a write's finish carries
///    what it left behind (in most finishes), every random event is a change made after (a later time, a new size),
///    and some events repeat a write's own state (its echoes). Checked for a batch of one event while no write claim
///    is granted (a granted write holds the events under it; a lease's holder may write unseen).
/// 9. Hold limits (issue 42): HoldLimitModel.swift, in one seed of three.
/// 10. Claims that must not wait (issue 43): NonblockingModel.swift, in one seed of three.
/// 11. A watcher behind the writes: a write's late echo is still an echo (WatcherLagModel.swift).
/// 12. Failed watches: a presenter is told a directory is watched again (`watchAvailable`) only after it was told it
///    could not be (`watchUnavailable`), once per such telling; a directory whose last event in a batch is
///    `watchAdded` shows no failure after it (a batch may hold both, in either order, as the watcher reads them).
/// 13. New files (stop 69): a new file's first change is taken as part of its appearance only when the file is as
///    its appearance was read (the same file, of the same size, changed no later unless empty): AppearanceModel.swift.
struct Simulation {
    struct Failure: Error, CustomStringConvertible {
        var seed: UInt64
        var step: Int
        var message: String
        var trace: [String]
        var description: String { "seed \(seed), step \(step): \(message)" }
    }

    let seed: UInt64
    let steps: Int
    var trace: [String] = []
    private var rng: SplitMix64
    private let arbiter: Arbiter
    private let packageExtensions: Set<[UInt8]>
    private let idleNodeRetention: Int
    private let recordTrace: Bool

    // The simulator's own record, built from events and effects.
    private var liveClients: [ClientID] = []
    private var coordinators: [ClientID: [CoordinatorID]] = [:]
    private var presenterInfo: [PresenterID: PresenterRegistration] = [:]
    private var claimInfo: [ClaimID: ClaimRequest] = [:]
    private var granted: Set<ClaimID> = []
    private var failed: Set<ClaimID> = []
    private var ended: Set<ClaimID> = []
    private var abandonedClients: Set<ClientID> = []
    private var requestKinds: [RequestID: (PresenterID, ClaimID?, PresenterMessageKind)] = [:]
    private var openRequests: [RequestID] = []
    private var owedReacquire: [RequestID: PresenterID] = [:]
    private var reacquired: Set<RequestID> = []
    private var relinquishesPerClaim: Set<String> = []
    private var didChangePerClaim: Set<String> = []
    private var previousPhase: [ClaimID: ClaimPhase] = [:]
    private var previousSnapshot: ArbiterSnapshot?
    private var nextID: UInt64 = 0
    private var step = 0
    private let leasesOn: Bool
    /// Clients that said they answer recalls.
    private var answering: Set<ClientID> = []
    /// Leases as their holders see them: granted and not returned; `recalled` once the recall reached the holder.
    private var holderLeases: [LeaseID: (client: ClientID, subtree: ItemPath, recalled: Bool)] = [:]
    /// Claims granted in process by a holder's own arbiter, inside one of its leases, still running.
    private var inProcess: [ClaimID: (lease: LeaseID, request: ClaimRequest)] = [:]
    /// Holders whose connection the host closed (``ArbiterEvent/clientClosed(_:keepingLeasesFor:)``) and that have
    /// not read the end yet: they go on deciding claims in their leases, which the arbiter keeps meanwhile.
    private var closedUnnoticed: Set<ClientID> = []
    /// In-process claims a mover's `itemMoved` overlapped (the mover's doing, as `excusedPairs`).
    private var excusedInProcess: Set<Set<ClaimID>> = []
    /// What the schedule did with leases, to show that it did something: grants, recalls, claims granted in process,
    /// running claims declared on return.
    private(set) var leaseCounts = (grants: 0, recalls: 0, inProcess: 0, declared: 0, kept: 0)
    /// Issue 26: ended writes of files with other names reported to the host, to show that the schedules make some.
    private(set) var otherNamesWritten = 0
    /// Issue 37: the items' states as the model file system has them (absent when missing), and its clock.
    private var files: [ItemPath: ItemStamp] = [:]
    private var clock: Int64 = 1
    /// Window timers fired (the arbiter's tick), and items whose events are echoes whatever their state until the
    /// tick given (``noteWritesEndedUnsaid(by:)``).
    private var windowTicks = 0
    private var unsaid: [ItemPath: Int] = [:]
    /// Items each claim moved inside its accessor.
    private var claimMoves: [ClaimID: [ItemPath]] = [:]
    /// Issue 37: changes made after a write that the arbiter reported, and write echoes the schedule repeated.
    private(set) var echoCounts = (laterChanges: 0, echoesRepeated: 0)
    /// Issue 40: in one schedule of five (from the seed), a host gate on `/r/a` closes, opens, drains and fails its
    /// waiting claims at random, as a cluster adapter would drive it.
    private let gatesOn: Bool
    private var gateClosed = false
    private var drainPending = false
    private(set) var gateCounts = (commands: 0, drained: 0, failedAtGate: 0)
    /// Invariant 9 (issue 42): claims with a longest hold, in one seed of three.
    private let holdLimitsOn: Bool
    private(set) var holds = HoldLimitModel()
    /// Invariant 10 (issue 43): claims that must not wait, in one seed of three (not by shard: seeds go to shards by
    /// four; never with hold limits, whose seeds are `seed % 3 == 2`: NonblockingTests covers the two together).
    private let nonblockingOn: Bool
    private(set) var nonblocking = NonblockingModel()
    /// Invariant 11: the watcher's queue of write echoes not read yet.
    private(set) var lag = WatcherLagModel()
    /// Invariant 13: the items that appeared, with the state their appearance was read with.
    private(set) var appearances = AppearanceModel()
    /// The most windows a write's record waits for the watcher (``ArbiterConfiguration/echoWaitForWatcher``).
    private let lagLimit: Int
    /// The windows a write's record lives by itself (``ArbiterConfiguration/echoRetention``, plus the arbiter's two).
    private let retentionTicks: Int
    /// The shared folder of the schedules with a host gate.
    static let gateFolder = try! ItemPath(absolute: "/r/a")

    static let universe: [ItemPath] = [
        "/r", "/r/a", "/r/a/x", "/r/a/y", "/r/b", "/r/b/z", "/r/p.rtfd", "/r/p.rtfd/c", "/r/p.rtfd/c/d", "/r/q",
        "/s", "/s/t",
    ].map { try! ItemPath(absolute: $0) }

    /// Issue 26: files with several names (hard links, a bind mount): each path here names the file given, so its claim
    /// items and presenters carry that identity (in two schedules of three, from the seed, so that the others keep
    /// today's paths-only rules). `/r/a/y` is a file with one name.
    static let identities: [ItemPath: ItemIdentity] = [
        "/r/a/x": ItemIdentity(device: 1, inode: 1), "/r/b/z": ItemIdentity(device: 1, inode: 1),
        "/s/t": ItemIdentity(device: 1, inode: 1), "/r/q": ItemIdentity(device: 1, inode: 2),
        "/r/p.rtfd/c/d": ItemIdentity(device: 1, inode: 2), "/r/a/y": ItemIdentity(device: 1, inode: 3),
    ].reduce(into: [:]) { $0[try! ItemPath(absolute: $1.key)] = $1.value }

    /// The identity `path` carries in this schedule, if any.
    private func identity(of path: ItemPath?) -> ItemIdentity? {
        guard seed % 3 != 0, let path else { return nil }
        return Self.identities[path]
    }

    /// A claim item as the library makes it: with the file's identity, and whether the file has other names (its
    /// identity is shared; issue 23 with 26: a lease never decides such an item in process).
    private func item(_ path: ItemPath, _ access: Access) -> ClaimItem {
        let identity = identity(of: path)
        let shared = identity.map { identity in Self.identities.values.filter { $0 == identity }.count > 1 } ?? false
        return ClaimItem(path: path, access: access, identity: identity, hasOtherNames: shared)
    }

    init(seed: UInt64, steps: Int, recordTrace: Bool = false) {
        self.seed = seed
        self.steps = steps
        self.rng = SplitMix64(seed: seed)
        var configuration = ArbiterConfiguration(presenterTimeout: .seconds(30))
        configuration.watchesFileSystem = true  // Issue 13: watch interest and file-system events too.
        configuration.watcherSaysHowFarItRead = true  // Invariant 11.
        // Issue 12: idle nodes pruned at once, after a few, or kept (taken from the seed, not the generator, so that
        // each seed's schedule is unchanged).
        configuration.idleNodeRetention = [0, 1, 2, 3, 256][Int(seed % 5)]
        self.idleNodeRetention = configuration.idleNodeRetention
        // Issue 23: leases in six seeds of seven, with a minimum hold and back-off that only the random timers end.
        self.leasesOn = seed % 7 != 0
        self.gatesOn = seed % 5 == 3
        self.holdLimitsOn = seed % 3 == 2
        self.nonblockingOn = seed % 3 == 0
        self.rekeyOn = leasesOn && seed % 5 == 1
        self.onePurposeOn = leasesOn && seed % 3 == 1
        if leasesOn { configuration.leases = LeasePolicy() }
        self.lagLimit = Int(configuration.echoWaitForWatcher / configuration.coalescingWindow)
        self.retentionTicks = Int(configuration.echoRetention / configuration.coalescingWindow) + 2
        self.arbiter = Arbiter(configuration: configuration)
        self.packageExtensions = configuration.packageExtensions
        self.recordTrace = recordTrace
    }

    /// Runs the schedule, then drains it: answers everything and finishes every granted claim until none is left.
    mutating func run() throws(Failure) {
        for _ in 0..<steps {
            step += 1
            randomStep()
            // From the seed, not the generator, so that each seed's schedule is unchanged.
            if leasesOn, seed % 3 == 1, step == steps / 2 { excludeLeases(around: Self.excludedFromLeases) }
            if rekeyOn, step == steps / 3 { rekey() }
            try check()
            // A step of its own (the checks compare each step with the one before).
            if holdLimitsOn, rng.chance(10) {
                step += 1
                fireHoldTimer()
                try check()
            }
        }
        try drain()
    }

    /// The subtree some schedules exclude from leases halfway (issue 26).
    static let excludedFromLeases = try! ItemPath(absolute: "/r/b")
    /// The subtree excluded from leases so far, if any.
    private var excludedSubtree: ItemPath?
    /// In one schedule of five with leases, the keys below ``rekeyPoint`` change a third of the way (``rekey()``).
    private let rekeyOn: Bool
    /// In the schedules with leases but neither hold limits nor claims that must not wait (whose models know nothing
    /// of it), half the clients that answer recalls give all their claims one purpose, as the preload library does:
    /// their leases stand with it, and claims of it pass them (docs/SEMANTICS.md §13).
    private let onePurposeOn: Bool
    private var onePurposeOf: [ClientID: PurposeID] = [:]
    /// Leases granted to such clients, to show that schedules make some.
    private(set) var onePurposeLeases = 0
    /// Deadlock checks of claims with a cycle reachable in the wait-for graph, and without (invariant 14).
    private(set) var deadlockChecks = (cycles: 0, acyclic: 0)
    private var onePurposeClients: Set<ClientID> { Set(onePurposeOf.keys) }
    /// Leases granted below ``rekeyPoint`` before its keys changed, whose holders' claims key otherwise since.
    private var staleLeases: Set<LeaseID> = []
    /// The claims granted when the keys changed.
    private var grantedBeforeRekey: Set<ClaimID> = []
    /// Leases recalled when the keys changed, and claims of their holders keyed anew, to show that schedules make some.
    private(set) var rekeyCounts = (recalls: 0, claims: 0)

    /// Excludes `path` from leases (the daemon's document-portal mount, issue 26), recording the recalls it brings.
    private mutating func excludeLeases(around path: ItemPath) {
        if recordTrace { trace.append("step \(step): exclude leases around \(path)") }
        excludedSubtree = path
        for effect in arbiter.excludeLeases(around: path) {
            if recordTrace { trace.append("    -> \(effect)") }
            record(effect)
            checkLeaseEffect(effect, after: .timerFired(.fileSystemWindow))
        }
    }

    /// Where some schedules' keys change a third of the way (a FAT volume mounted at `/r`).
    static let rekeyPoint = try! ItemPath(absolute: "/r")

    /// The key a name below ``rekeyPoint`` has once the keys changed there: the names of `/r/a` and `/r/b` trade
    /// places, and two names take one key (`x` and `y` of `/r/a`, as case folding makes of `DOCS` and `docs`).
    static func rekeyed(_ path: ItemPath) -> ItemPath {
        let table = ["/r/a": "/r/b", "/r/a/x": "/r/b/z", "/r/a/y": "/r/b/z", "/r/b": "/r/a", "/r/b/z": "/r/a/x"]
        return table[path.description].map { try! ItemPath(absolute: $0) } ?? path
    }

    /// The keys below ``rekeyPoint`` change, as when a file system that folds names otherwise is mounted there: a
    /// holder of a lease below it goes on deciding claims in it by its own spellings, which key otherwise now, so its
    /// claims running there (those decided before, declared once it returns the lease, and those decided after) stand
    /// at their new keys ((``rekeyed(_:)``), and it may decide some more before the host notices the change and tells
    /// the arbiter (``Arbiter/recallLeasesAtOnce(around:)``). Claims granted before the change overlapped nothing
    /// then: their overlaps with the holder's claims are the change's doing.
    private mutating func rekey() {
        let point = Self.rekeyPoint
        if recordTrace { trace.append("step \(step): keys below \(point) change") }
        grantedBeforeRekey = Set(arbiter.snapshot().claims.filter { $0.phase == .granted }.map(\.request.id))
        staleLeases = Set(holderLeases.filter { $0.value.subtree.isDescendant(of: point) }.keys)
        for (id, entry) in inProcess.sorted(by: { $0.key < $1.key }) where staleLeases.contains(entry.lease) {
            let request = rekeyed(entry.request)
            inProcess[id]?.request = request
        }
        for _ in 0..<Int.random(in: 0...2, using: &rng) { claimInProcess() }
        // The arbiter widens each such lease's claim to `point` beside what it granted there before the change.
        for lease in arbiter.leaseSnapshots() where lease.subtree.isDescendant(of: point) {
            for other in grantedBeforeRekey { excusedPairs.insert([lease.id.claim, other]) }
        }
        let effects = arbiter.recallLeasesAtOnce(around: point)
        for effect in effects {
            if recordTrace { trace.append("    -> \(effect)") }
            record(effect)
            checkLeaseEffect(effect, after: .timerFired(.fileSystemWindow))
        }
        rekeyCounts.recalls += effects.filter { if case .recallLease = $0 { return true } else { return false } }.count
    }

    /// `request` with its paths keyed as after ``rekey()``, and excused beside what was granted before it.
    private mutating func rekeyed(_ request: ClaimRequest) -> ClaimRequest {
        var request = request
        request.items = request.items.map { item in
            var item = item
            item.path = Self.rekeyed(item.path)
            return item
        }
        for other in grantedBeforeRekey { excusedPairs.insert([request.id, other]) }
        rekeyCounts.claims += 1
        return request
    }

    // MARK: Random steps

    private mutating func newID() -> UInt64 {
        nextID += 1
        return nextID
    }

    private mutating func randomStep() {
        if gatesOn, rng.chance(4) {
            gateStep()
            return
        }
        let roll = Int.random(in: 0..<(leasesOn ? 133 : 112), using: &rng)
        switch roll {
        case 0..<6 where liveClients.count < 4, 0..<2:
            let id = ClientID(newID())
            liveClients.append(id)
            coordinators[id] = []
            let answers = rng.chance(70)
            if answers { answering.insert(id) }
            // One purpose for all its claims (the preload library), in some schedules (``onePurposeOn``).
            let one = onePurposeOn && answers && rng.chance(50)
            if one { onePurposeOf[id] = PurposeID("one sim\(id.rawValue)") }
            send(
                .clientConnected(
                    ClientInfo(
                        id: id,
                        pid: Int32(id.rawValue),
                        name: "sim\(id.rawValue)",
                        answersRecalls: answers,
                        claimsShareOnePurpose: one
                    )
                )
            )
        case 6..<8 where !liveClients.isEmpty:
            let client = liveClients.remove(at: Int.random(in: 0..<liveClients.count, using: &rng))
            abandonedClients.insert(client)
            if holderLeases.values.contains(where: { $0.client == client }), rng.chance(50) {
                // The host closes the connection of a process that lives on (a protocol error, a client that does
                // not read): it goes on deciding claims in its leases until it reads the end (holderNotices()).
                closedUnnoticed.insert(client)
                leaseCounts.kept += 1
                send(.clientClosed(client, keepingLeasesFor: .seconds(2)))
            } else {
                // The process is gone: so are the claims it granted itself, and the leases it held.
                for (id, entry) in inProcess where holderLeases[entry.lease]?.client == client { inProcess[id] = nil }
                for (id, lease) in holderLeases where lease.client == client { holderLeases[id] = nil }
                send(.clientDisconnected(client))
            }
            for (id, info) in presenterInfo where info.client == client { presenterInfo[id] = nil }
        case 8..<20 where !liveClients.isEmpty:
            addPresenter()
        case 20..<23 where !presenterInfo.isEmpty:
            let id = presenterInfo.keys.sorted()[Int.random(in: 0..<presenterInfo.count, using: &rng)]
            presenterInfo[id] = nil
            send(.presenterRemoved(id))
        case 23..<45 where !liveClients.isEmpty:
            requestClaim()
        case 45..<60 where !openRequests.isEmpty:
            let request = openRequests[Int.random(in: 0..<openRequests.count, using: &rng)]
            send(.presenterReplied(request, randomReply(for: request)))
        case 60..<75:
            if let claim = randomGranted() {
                let created = rng.chance(20) ? [Self.universe.randomElement(using: &rng)!] : []
                finishWriting(claim, created: created)
            }
        case 75..<80:
            if let client = liveClients.randomElement(using: &rng),
                let coordinator = coordinators[client]?.randomElement(using: &rng)
            {
                send(.coordinatorCancelled(client, coordinator))
            }
        case 80..<83:
            if let claim = claimInfo.keys.sorted().randomElement(using: &rng) { send(.claimCancelled(claim)) }
        case 83..<90:
            if let claim = randomGranted(), let item = claimInfo[claim]?.items.first(where: { $0.access.isWrite }) {
                let to = Self.universe.randomElement(using: &rng)!
                // A rename in place (issue 14) carries the mover's spelling of the old name.
                let fromName =
                    to == item.path
                    ? item.path.components.last.map { Array(String(decoding: $0, as: UTF8.self).uppercased().utf8) }
                    : nil
                send(.itemMoved(claim, from: item.path, to: to, fromName: fromName))
            }
        case 90..<93:
            if let claim = randomGranted(), let item = claimInfo[claim]?.items.first {
                let version = VersionID("v\(newID())")
                let change: VersionChange = [.added(version), .removed(version), .resolved(version)].randomElement(
                    using: &rng
                )!
                send(.versionChanged(claim, item.path, change))
            }
        case 93..<95 where !openRequests.isEmpty:
            send(.timerFired(.presenterReply(openRequests.randomElement(using: &rng)!)))
        case 95..<96:
            // The deadlock detector looks at a random claim: whatever it breaks, every invariant must still hold.
            // When it breaks a cycle, every claim is looked at next, in the same state of the graph (what the
            // broken cycle's end started may close another).
            if let claim = claimInfo.keys.sorted().randomElement(using: &rng), checkDeadlocks(of: claim) {
                for other in claimInfo.keys.sorted() where !ended.contains(other) { checkDeadlocks(of: other) }
            }
        case 96..<97:
            // A claim's own deadline, due or not (a late timer must change nothing).
            if let claim = claimInfo.keys.sorted().randomElement(using: &rng) {
                send(.timerFired(.claimDeadline(claim)))
            }
        case 97..<100:
            // Garbage: ids nobody knows.
            send(.presenterReplied(RequestID(999_999), .succeeded))
            send(.claimFinished(ClaimID(999_999), created: []))
        case 100..<108:
            sendFileSystemEvents(randomFileSystemEvents())
        case 108..<112:
            // Invariant 11: now and then many windows pass while late echoes wait (a watcher far behind).
            for _ in 0..<(!lag.queued.isEmpty && rng.chance(30) ? 10 : 1) {
                if lag.readsNow(chance: rng.chance(10)) { readLateEchoes() }
                send(.timerFired(.fileSystemWindow))
            }
        case 112..<120:
            claimInProcess()
        case 120..<124:
            // An accessor granted in process returns: nothing reaches the arbiter.
            if let id = inProcess.keys.sorted().randomElement(using: &rng) { inProcess[id] = nil }
        case 124..<127:
            returnLease(recalledOnly: !rng.chance(15))
        case 127..<130:
            fireLeaseTimer()
        case 130..<133:
            holderNotices()
        default:
            break
        }
    }

    /// A command of the cluster adapter for the host gate on ``gateFolder`` (issue 40).
    private mutating func gateStep() {
        let roll = Int.random(in: 0..<100, using: &rng)
        let command: HostGateCommand
        switch roll {
        case 0..<30: command = .close
        case 30..<60: command = .open(revision: Int64(step))
        case 60..<85: command = .drain
        case 85..<95: command = .failWaiting("cluster unreachable (simulated)")
        default: command = .claimsLost("cluster unreachable (simulated)")
        }
        gateCounts.commands += 1
        switch command {
        case .close: gateClosed = true
        case .drain:
            gateClosed = true
            drainPending = true
        case .open:
            gateClosed = false
            drainPending = false
        case .failWaiting, .claimsLost: break
        }
        send(.hostGate(Self.gateFolder, command))
    }

    /// Whether `request` needs the host lease of ``gateFolder``: an item at or inside it, or one that deletes, moves
    /// or replaces a folder around it.
    /// Whether a claim may pass the gate while it drains: it is exempt from a claim granted inside (a nested access,
    /// which the drain would otherwise wait for while it waits for the drain).
    private func passesDrain(_ request: ClaimRequest, _ id: ClaimID) -> Bool {
        guard drainPending else { return false }
        return arbiter.snapshot().claims.contains { other in
            // A lease passes nothing but its one-purpose holder's claims (``SpecModel/exempt(_:_:onePurpose:)``),
            // whose in-process claims it stands for.
            other.phase == .granted && !other.request.id.isHostGate
                && other.request.id != id && SpecModel.exempt(request, other.request, onePurpose: onePurposeClients)
                // Inside through any of its items' names (issue 26: a file's other names count).
                && zip(other.paths, other.accesses).contains { path, access in
                    path.isEqualOrDescendant(of: Self.gateFolder)
                        || (Self.gateFolder.isDescendant(of: path) && access.coversSubtree)
                }
        }
    }

    /// `paths`: where the items are now (a waiting claim follows a move, out of the folder or into it).
    private func needsGate(_ request: ClaimRequest, at paths: [ItemPath]? = nil) -> Bool {
        zip(paths ?? request.items.map(\.path), request.items.map(\.access)).contains { path, access in
            path.isEqualOrDescendant(of: Self.gateFolder)
                || (Self.gateFolder.isDescendant(of: path) && access.coversSubtree)
        }
    }

    /// One batch of file-system events on the universe's paths (issue 13): writes, creations, deletions, renames
    /// paired by cookie or not, overflows, failed watches and watches added later.
    private mutating func randomFileSystemEvents() -> [FileSystemEvent] {
        var events: [FileSystemEvent] = []
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let path = Self.universe.randomElement(using: &rng)!
            switch Int.random(in: 0..<11, using: &rng) {
            case 0..<3: events.append(.changed(path))
            case 3..<5: events.append(.created(path, isDirectory: rng.chance(30)))
            case 5..<6: events.append(.deleted(path))
            case 6..<8:
                let to = Self.universe.randomElement(using: &rng)!
                let cookie = UInt32(truncatingIfNeeded: newID())
                if to != path, !to.isDescendant(of: path) { events.append(.movedFrom(path, cookie: cookie)) }
                if rng.chance(80) { events.append(.movedTo(to, cookie: cookie, isDirectory: rng.chance(30))) }
            case 8: events.append(.overflow)
            case 9:
                // Failed, or the last failed one added after all (one or the other by the step and the batch's
                // length, so that a batch may hold both: the generator's draws stay those of every earlier schedule).
                if (step + events.count) % 2 == 0 {
                    events.append(.watchFailed(path, reason: "simulated"))
                    lastFailedWatch = path
                } else {
                    events.append(.watchAdded(lastFailedWatch ?? path))
                }
            default:
                // What the watcher found changed between a presenter's registration and its watch (issue 37); any
                // presenter, removed ones included.
                let presenter = presenterInfo.keys.sorted().randomElement(using: &rng) ?? PresenterID(newID())
                events.append(.changedBeforeWatch(path, presenter: presenter))
            }
        }
        return events
    }

    /// Sends `claim`'s deadlock check. Invariant 14: it breaks a cycle exactly when the whole wait-for graph,
    /// searched here without the detector's shortcuts (the nodes an earlier search found acyclic, the search from the
    /// claims that hold a presenter's queue first), has one reachable from the claim. Returns whether it broke one.
    @discardableResult
    private mutating func checkDeadlocks(of claim: ClaimID) -> Bool {
        let reaches = Self.cycleReachable(from: "\(claim)", arbiter.waitForEdges(limitPerNode: .max))
        let broken = arbiter.statistics.deadlocksBroken
        send(.timerFired(.deadlockCheck(claim)))
        let broke = arbiter.statistics.deadlocksBroken > broken
        if reaches { deadlockChecks.cycles += 1 } else { deadlockChecks.acyclic += 1 }
        if broke != reaches {
            violations.append(
                "invariant 14: the check of \(claim) \(broke ? "broke" : "broke no") cycle; the wait-for graph "
                    + "\(reaches ? "has" : "has no") cycle reachable from it"
            )
        }
        return broke
    }

    /// `true` when a cycle of `edges` (a wait-for graph's, ``Arbiter/waitForEdges(limitPerNode:)``) is reachable
    /// from `start`: a plain depth-first search of every edge.
    static func cycleReachable(from start: String, _ edges: [(from: String, to: String, label: String)]) -> Bool {
        var next: [String: [String]] = [:]
        for edge in edges { next[edge.from, default: []].append(edge.to) }
        var state: [String: Bool] = [:]  // false: on the path; true: done, no cycle from it.
        func visit(_ node: String) -> Bool {
            if let known = state[node] { return !known }
            state[node] = false
            for to in next[node] ?? [] where visit(to) { return true }
            state[node] = true
            return false
        }
        return visit(start)
    }

    // MARK: The model file system (issue 37)

    /// An event as the trace shows it: the same for the same seed (dictionaries sorted by path).
    private static func traced(_ event: ArbiterEvent) -> String {
        func sorted(_ stamps: [ItemPath: ItemStamp]) -> String {
            stamps.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        }
        switch event {
        case .fileSystemChanged(let events, let observed, let readAt, let drainedAt):
            return
                "fileSystemChanged(\(events), observed: [\(sorted(observed))], readAt: \(readAt.map(String.init) ?? "nil"), "
                + "drainedAt: \(drainedAt.map(String.init) ?? "nil"))"
        case .claimFinished(let id, let created, let outcome):
            let said = outcome.map { "endedAt \($0.endedAt), [\(sorted($0.items))]" } ?? "nil"
            return "claimFinished(\(id), created: \(created), outcome: \(said))"
        default:
            return "\(event)"
        }
    }

    /// Items of writes that ended without saying what they left behind (a finish without an outcome, a client gone):
    /// their events are echoes until the retention passes (the tick of ``windowTicks`` it passes at), whatever
    /// their state. Invariant 8 leaves them out.
    private mutating func noteWritesEndedUnsaid(by event: ArbiterEvent) {
        let ending: [ClaimID]
        switch event {
        case .claimFinished(let id, _, nil):
            ending = [id]
        case .clientDisconnected(let client), .clientClosed(let client, _):
            ending = arbiter.snapshot().claims.filter { $0.request.client == client }.map(\.request.id)
        case .itemMoved(let id, let from, let to, _):
            claimMoves[id, default: []] += [from, to]
            return
        default:
            return
        }
        let snapshot = arbiter.snapshot()
        for claim in snapshot.claims where ending.contains(claim.request.id) && claim.phase == .granted {
            noteEndedUnsaid(claim)
        }
        if case .claimFinished(_, let created, _) = event {
            for path in created { unsaid[path] = windowTicks + 8 }
        }
    }

    /// A granted claim ends without saying what it left behind (its client's finish without an outcome, its client
    /// gone, its hold limit passed): its written items' events are echoes for a while.
    private mutating func noteEndedUnsaid(_ claim: ArbiterSnapshot.Claim) {
        // Every entry the claim writes, as the arbiter records its echoes: its items, the other names of their files
        // where they are now (a waiting claim's other name follows another claim's move, issue 26), and the new
        // locations of its own moves.
        for (path, access) in zip(claim.paths, claim.accesses) where access.isWrite { unsaid[path] = windowTicks + 8 }
        for item in claim.request.items where item.access.isWrite {
            // A file's other names are the claim's entries too (issue 26).
            guard let identity = identity(of: item.path) else { continue }
            for (name, other) in Self.identities where other == identity { unsaid[name] = windowTicks + 8 }
        }
        for path in claimMoves[claim.request.id] ?? [] { unsaid[path] = windowTicks + 8 }
    }

    /// `true` when an item, or a folder enclosing it, was written by a write that ended unsaid within the retention.
    private func endedUnsaid(_ path: ItemPath) -> Bool {
        unsaid.contains { $0.value > windowTicks && path.isEqualOrDescendant(of: $0.key) }
    }

    /// A change to `path` in the model: its state moves on (a new size and time; a new inode when it appears).
    /// An entry that appears, goes or is replaced changes its directory too (its change time moves).
    private mutating func change(_ path: ItemPath, present: Bool, replaced: Bool = false) {
        clock += 1
        let existing = files[path] ?? .absent
        if !present {
            files[path] = .absent
        } else if case .present(let inode, let size, _) = existing, !replaced {
            files[path] = .present(inode: inode, size: size + 1, changeTime: clock)
        } else {
            files[path] = .present(inode: newID(), size: 0, changeTime: clock)
        }
        guard !present || replaced || existing == .absent, let parent = path.parent else { return }
        if case .present(let inode, let size, _) = files[parent] ?? .absent {
            files[parent] = .present(inode: inode, size: size, changeTime: clock)
        } else {
            files[parent] = .present(inode: newID(), size: 0, changeTime: clock)
        }
    }

    /// The state of the events' items (and of the directories of those gone), as the watcher reads them after a batch.
    private func observed(_ events: [FileSystemEvent]) -> [ItemPath: ItemStamp] {
        var observed: [ItemPath: ItemStamp] = [:]
        for event in events {
            for path in event.items {
                observed[path] = files[path] ?? .absent
                if let parent = path.parent { observed[parent] = files[parent] ?? .absent }
            }
        }
        return observed
    }

    /// Ends a granted claim: a write first changes its items in the model, and in most finishes its client says what
    /// it left behind. Sometimes the write's own event comes after (its echo, as the watcher reads it late).
    private mutating func finishWriting(_ claim: ClaimID, created: [ItemPath]) {
        let causedAt = clock
        let written = (claimInfo[claim]?.items ?? []).filter(\.access.isWrite).map(\.path)
        // Where the claim writes now: a claim that waited may have followed a move (rule 7), and then its echoes are
        // recorded there, not at the path it asked for.
        let holds = arbiter.snapshot().claims.first { $0.request.id == claim }.map { live in
            zip(live.paths, live.accesses).filter { $0.1.isWrite }.map(\.0)
        }
        for path in written where rng.chance(70) { change(path, present: true) }
        for path in created { change(path, present: true, replaced: true) }
        var outcome: WriteOutcome?
        if !written.isEmpty, rng.chance(75) {
            // The client reads the clock after the accessor's writes returned: later than every event they caused
            // (what a watcher's `drainedAt` is compared with, invariant 11).
            clock += 1
            var items: [ItemPath: ItemStamp] = [:]
            for path in written + created { items[path] = files[path] ?? .absent }
            outcome = WriteOutcome(endedAt: clock, items: items)
        }
        send(.claimFinished(claim, created: created, outcome: outcome))
        if let path = written.first, rng.chance(30) {
            echoCounts.echoesRepeated += 1
            if rng.chance(30) {
                // Invariant 11: read late, after windows have passed.
                let stamp = holds?.contains(path) == true ? outcome?.items[path] : nil
                lag.enqueue(path, causedAt: causedAt, written: stamp, tick: windowTicks)
                return
            }
            let echo = [FileSystemEvent.changed(path)]
            send(
                .fileSystemChanged(echo, observed: observed(echo), readAt: clock, drainedAt: lag.drainedAt(now: clock))
            )
        }
    }

    /// The model watcher reads its queue of late echoes, one batch each, and then says it has read everything
    /// (invariant 11).
    private mutating func readLateEchoes() {
        while let echo = lag.popFirst() {
            let events = [FileSystemEvent.changed(echo.path)]
            let held = arbiter.snapshot().claims.contains { claim in
                claim.phase == .granted && claim.request.items.contains { $0.access.isWrite }
            }
            let before = arbiter.watchingSnapshot().statistics.echoesSuppressed
            send(
                .fileSystemChanged(
                    events,
                    observed: observed(events),
                    readAt: clock,
                    drainedAt: lag.drainedAt(now: clock)
                )
            )
            let dropped = arbiter.watchingSnapshot().statistics.echoesSuppressed > before
            if let violation = lag.judged(
                echo,
                dropped: dropped,
                stillWritten: (files[echo.path] ?? .absent) == echo.written,
                held: held,
                ticks: windowTicks - echo.tick,
                retention: retentionTicks,
                limit: lagLimit
            ) {
                violations.append(violation)
            }
        }
        send(.fileSystemChanged([], readAt: clock, drainedAt: clock))
    }

    /// Feeds a batch of changes made without coordination: the model moves on first, then the watcher reads the
    /// items (in four batches of five; the others carry no state, as when an item cannot be examined). Checks
    /// invariant 8 for a batch of one event.
    private mutating func sendFileSystemEvents(_ events: [FileSystemEvent]) {
        for event in events {
            switch event {
            case .changed(let path), .changedBeforeWatch(let path, _): change(path, present: true)
            case .created(let path, _), .movedTo(let path, _, _): change(path, present: true, replaced: true)
            case .deleted(let path), .movedFrom(let path, _): change(path, present: false)
            case .overflow, .watchFailed, .watchAdded: break
            }
        }
        let observed = rng.chance(80) ? observed(events) : [:]
        let writing = arbiter.snapshot().claims.contains { claim in
            claim.phase == .granted && claim.request.items.contains { $0.access.isWrite }
        }
        let before = arbiter.watchingSnapshot().statistics
        var mayTakeAsAppearance = true
        if events.count == 1, case .changed(let path) = events[0] {
            mayTakeAsAppearance = appearances.mayTakeAsAppearance(path, observed: observed)
        }
        // Read after the model moved on: later than every write that ended (each change advances the clock).
        send(.fileSystemChanged(events, observed: observed, readAt: clock, drainedAt: lag.drainedAt(now: clock)))
        let watching = arbiter.watchingSnapshot()
        let after = watching.statistics
        // Invariant 13: a new file's change with other contents than its appearance was read with is told.
        if !mayTakeAsAppearance, !writing, after.closesOfAppearances != before.closesOfAppearances {
            violations.append(
                "invariant 13: \(events[0]) changed a new file's contents and was taken as its appearance"
            )
        }
        let unknown = Set(events.flatMap(\.items).filter { writing || endedUnsaid($0) })
        appearances.read(events, observed: observed) { unknown.contains($0) }
        echoCounts.laterChanges += after.changesAfterWrites - before.changesAfterWrites
        // Invariant 12: a directory whose last word in the batch was "watched" shows no failure.
        var lastWord: [ItemPath: Bool] = [:]
        for event in events {
            switch event {
            case .watchFailed(let directory, _): lastWord[directory] = false
            case .watchAdded(let directory): lastWord[directory] = true
            default: continue
            }
        }
        for (directory, added) in lastWord where added {
            if watching.directories.contains(where: { $0.path == directory && $0.failure != nil }) {
                violations.append("invariant 12: \(directory) was watched last, and its failure stays")
            }
        }
        if events.count == 1, let path = events[0].items.first, !observed.isEmpty, !writing, !endedUnsaid(path),
            after.echoesSuppressed != before.echoesSuppressed
        {
            violations.append("invariant 8: \(events[0]), a change made after every write, was dropped as an echo")
        }
    }

    private mutating func addPresenter() {
        let client = liveClients.randomElement(using: &rng)!
        let path: ItemPath? = rng.chance(10) ? nil : Self.universe.randomElement(using: &rng)!
        var callbacks = PresenterCallbacks.all
        if rng.chance(40) { callbacks = PresenterCallbacks(rawValue: UInt32.random(in: 0..<(1 << 16), using: &rng)) }
        let registration = PresenterRegistration(
            id: PresenterID(newID()),
            client: client,
            path: path,
            callbacks: callbacks,
            serialQueue: rng.chance(30) ? UInt64.random(in: 1...2, using: &rng) : nil,
            identity: identity(of: path),
            hasOtherNames: path.map { item($0, .read([])).hasOtherNames } ?? false
        )
        presenterInfo[registration.id] = registration
        send(.presenterAdded(registration))
    }

    private mutating func requestClaim() {
        let client = liveClients.randomElement(using: &rng)!
        var coordinator: CoordinatorID
        if let existing = coordinators[client]?.randomElement(using: &rng), rng.chance(30) {
            coordinator = existing
        } else {
            coordinator = CoordinatorID(newID())
            coordinators[client, default: []].append(coordinator)
        }
        var purpose = rng.chance(10) ? PurposeID("shared") : PurposeID("p\(client.rawValue)-\(coordinator.rawValue)")
        if let one = onePurposeOf[client] { purpose = one }
        let own = presenterInfo.values.filter { $0.client == client }.map(\.id).sorted()
        let filePresenter = rng.chance(30) ? own.randomElement(using: &rng) : nil
        let count = rng.chance(25) ? 2 : 1
        var items: [ClaimItem] = []
        for _ in 0..<count {
            let path = Self.universe.randomElement(using: &rng)!
            if rng.chance(50) {
                let options = ReadingOptions(rawValue: UInt.random(in: 0..<16, using: &rng))
                items.append(item(path, .read(options)))
            } else {
                let all: [WritingOptions] = [[], [], .forDeleting, .forMoving, .forMerging, .forReplacing]
                let access = Access.write(all.randomElement(using: &rng)!)
                items.append(item(path, access))
            }
        }
        var request = ClaimRequest(
            id: ClaimID(newID()),
            client: client,
            coordinator: coordinator,
            purpose: purpose,
            filePresenter: filePresenter,
            fromPresenterQueue: rng.chance(10) ? own.randomElement(using: &rng) : nil,
            items: items,
            timeout: rng.chance(20) ? .milliseconds(Int.random(in: 0...2_000, using: &rng)) : nil
        )
        if holdLimitsOn, rng.chance(40) { request.maximumHold = .seconds(30) }
        if nonblockingOn, rng.chance(25) { request.nonblocking = true }
        claimInfo[request.id] = request
        send(.claimRequested(request))
    }

    /// Fires a hold limit's timer (issue 42): a due one, or a late one, which must change nothing.
    private mutating func fireHoldTimer() {
        let late = claimInfo.keys.sorted().randomElement(using: &rng)
        guard let (id, due) = holds.timerToFire(late: late, using: &rng) else { return }
        let effects = send(.timerFired(.claimHoldLimit(id)))
        if !due && !effects.isEmpty { violations.append("a late hold-limit timer of \(id) did \(effects)") }
    }

    // MARK: Leases (issue 23)

    /// A holder's own arbiter grants a claim inside a lease it holds and has not seen recalled: when the claim
    /// conflicts with none of the claims it granted itself already (the in-process arbiter's rules, simplified to
    /// "never two conflicting").
    private mutating func claimInProcess() {
        let usable = holderLeases.filter { !$0.value.recalled }.keys.sorted()
        guard let leaseID = usable.randomElement(using: &rng), let lease = holderLeases[leaseID] else { return }
        let inside = Self.universe.filter { $0 == lease.subtree || $0.isDescendant(of: lease.subtree) }
        guard let path = inside.randomElement(using: &rng) else { return }
        let access: Access =
            rng.chance(50)
            ? .read([])
            : .write([[], [], .forDeleting, .forReplacing].randomElement(using: &rng)!)
        var request = ClaimRequest(
            id: ClaimID(newID()),
            client: lease.client,
            coordinator: CoordinatorID(newID()),
            purpose: onePurposeOf[lease.client] ?? PurposeID("in-process \(nextID)"),
            items: [item(path, access)]
        )
        // A file with other names goes to the arbiter instead (ClaimRequest.mayBeDecided(inLeaseOn:)).
        guard request.mayBeDecided(inLeaseOn: lease.subtree) else { return }
        // Decided by the holder's spelling, keyed by the host's table (which changed below a stale lease).
        if staleLeases.contains(leaseID) { request = rekeyed(request) }
        for (_, other) in inProcess where holderLeases[other.lease]?.client == lease.client {
            if requestsConflict(request, other.request) { return }
        }
        if recordTrace { trace.append("step \(step): in process \(request.id) \(access) \(path) in \(leaseID)") }
        inProcess[request.id] = (leaseID, request)
        leaseCounts.inProcess += 1
    }

    /// The holder returns a lease (recalled, or of its own accord), declaring the claims still running in it.
    private mutating func returnLease(recalledOnly: Bool) {
        // A holder whose connection the host closed sends nothing more on it (holderNotices()).
        let candidates = holderLeases.filter {
            (!recalledOnly || $0.value.recalled) && !closedUnnoticed.contains($0.value.client)
        }.keys.sorted()
        guard let leaseID = candidates.randomElement(using: &rng), let lease = holderLeases[leaseID] else {
            if rng.chance(20) {
                // Garbage: a lease nobody holds.
                send(.leaseReturned(LeaseID(999_999), client: liveClients.first ?? ClientID(1), running: []))
            }
            return
        }
        var running: [ClaimRequest] = []
        for (id, entry) in inProcess.sorted(by: { $0.key < $1.key }) where entry.lease == leaseID {
            var request = entry.request
            request.isHeld = true
            running.append(request)
            leaseCounts.declared += 1
            inProcess[id] = nil
            claimInfo[id] = request
            granted.insert(id)
        }
        // The running claims of one return were decided together by the holder's own arbiter, against the names in
        // use then (issue 26 meets only those); declared, they may gain other names the daemon knows of now. Between
        // themselves that is the holder's decision, checked when it made them; against everything else they count.
        for (index, a) in running.enumerated() {
            for b in running[(index + 1)...] { excusedPairs.insert([a.id, b.id]) }
        }
        holderLeases[leaseID] = nil
        send(.leaseReturned(leaseID, client: lease.client, running: running))
        excuseOverlapsNoArbiterDecided(declared: running)
    }

    /// The running claims of a lease's return that the arbiter finds overlapping a granted claim, judged only on what
    /// each side asked for, no longer overlap it: the overlap is not the arbiter's doing. Two ways it arises:
    /// - the granted claim moved something onto a location without claiming it (past the items it requested);
    /// - declared, a running claim also stands at its file's other names (issue 26) known now, which the holder could
    ///   not meet when it decided; without a lease the same claim would have met only the names known then, and a
    ///   directory claim never meets a hard link inside it by identity (docs/SEMANTICS.md, what stays by path).
    /// Every overlap of one file by identity stays checked by ``check()`` on the claims' items.
    private mutating func excuseOverlapsNoArbiterDecided(declared running: [ClaimRequest]) {
        let snapshot = arbiter.snapshot()
        for declared in running {
            guard let record = snapshot.claims.first(where: { $0.request.id == declared.id }) else { continue }
            for claim in snapshot.claims
            where claim.phase == .granted && !claim.request.id.isLease && claim.request.id != declared.id
                && !running.contains(where: { $0.id == claim.request.id })
                && !SpecModel.exempt(declared, claim.request, onePurpose: onePurposeClients)
                && pathsConflict(record.paths, record.accesses, claim.paths, claim.accesses)
            {
                let requested = claim.request.items.count
                if !pathsConflict(
                    declared.items.map(\.path),
                    declared.items.map(\.access),
                    Array(claim.paths.prefix(requested)),
                    Array(claim.accesses.prefix(requested))
                ) {
                    excusedPairs.insert([declared.id, claim.request.id])
                }
            }
        }
    }

    /// A holder whose connection the host closed reads the end (docs/SEMANTICS.md §13.5): it decides nothing more in
    /// its leases and, unless its process died meanwhile, reconnects as a new client and declares the claims it
    /// granted in them that still run, as the library's `connected(to:install:)` does. The arbiter keeps the leases
    /// until their time passes; a holder reads the end within that time (the grace's assumption, as after a crash),
    /// so the simulator fires that timer only for holders that have (``fireLeaseTimer()``).
    private mutating func holderNotices() {
        guard let old = closedUnnoticed.sorted().randomElement(using: &rng) else { return }
        closedUnnoticed.remove(old)
        let leases = Set(holderLeases.filter { $0.value.client == old }.keys)
        let running = inProcess.filter { leases.contains($0.value.lease) }.sorted { $0.key < $1.key }
        for lease in leases { holderLeases[lease] = nil }
        guard !running.isEmpty, rng.chance(80) else {
            for (id, _) in running { inProcess[id] = nil }  // Nothing runs, or the process died with its accessors.
            return
        }
        let id = ClientID(newID())
        liveClients.append(id)
        coordinators[id] = []
        let answers = answering.contains(old)
        if answers { answering.insert(id) }
        onePurposeOf[id] = onePurposeOf[old]  // The same process: the same purpose.
        let info = ClientInfo(
            id: id,
            pid: Int32(old.rawValue),
            name: "sim\(old.rawValue)",
            answersRecalls: answers,
            claimsShareOnePurpose: onePurposeOf[old] != nil
        )
        send(.clientConnected(info))
        var declared: [ClaimRequest] = []
        for (claimID, entry) in running {
            var request = entry.request
            request.client = id
            request.isHeld = true
            declared.append(request)
            // Beside the kept lease, which stands for the very claims it declares.
            excusedPairs.insert([entry.lease.claim, claimID])
            inProcess[claimID] = nil
            claimInfo[claimID] = request
            granted.insert(claimID)
            leaseCounts.declared += 1
        }
        // Decided together by the holder's own arbiter, as a return's running claims are (returnLease).
        for (index, a) in declared.enumerated() {
            for b in declared[(index + 1)...] { excusedPairs.insert([a.id, b.id]) }
        }
        for request in declared { send(.claimRequested(request)) }
        excuseOverlapsNoArbiterDecided(declared: declared)
    }

    /// A lease timer fires, due or not: a minimum hold, a recall nobody answered (a holder that stopped), a back-off,
    /// the end of a kept lease's time (never before its holder read the end of its connection: ``holderNotices()``).
    private mutating func fireLeaseTimer() {
        let known = arbiter.leaseSnapshots()
        switch Int.random(in: 0..<4, using: &rng) {
        case 0:
            if let lease = known.randomElement(using: &rng) { send(.timerFired(.leaseMinimumHold(lease.id))) }
        case 1:
            if let lease = known.randomElement(using: &rng) { send(.timerFired(.leaseRecallReply(lease.id))) }
        case 2:
            let due = known.filter { !closedUnnoticed.contains($0.client) }
            if let lease = due.randomElement(using: &rng) { send(.timerFired(.leaseOrphaned(lease.id))) }
        default:
            if let client = liveClients.randomElement(using: &rng) { send(.timerFired(.leaseBackoff(client))) }
        }
    }

    /// Rules 1 to 4 for two requests, on their items' effective paths.
    private func requestsConflict(_ a: ClaimRequest, _ b: ClaimRequest) -> Bool {
        guard !SpecModel.exempt(a, b, onePurpose: onePurposeClients) else { return false }
        if pathsConflict(a.items.map(\.path), a.items.map(\.access), b.items.map(\.path), b.items.map(\.access)) {
            return true
        }
        // One file through two names (issue 26), as the holder's own arbiter meets them: one of the two writing.
        for itemA in a.items {
            guard let identity = itemA.identity, let accessA = itemA.access.contentAccess else { continue }
            for itemB in b.items where itemB.identity == identity {
                if let accessB = itemB.access.contentAccess, accessA.isWrite || accessB.isWrite { return true }
            }
        }
        return false
    }

    private func pathsConflict(
        _ pathsA: [ItemPath],
        _ accessA: [Access],
        _ pathsB: [ItemPath],
        _ accessB: [Access]
    )
        -> Bool
    {
        for (pathA, a) in zip(pathsA, accessA) {
            let effA = SpecModel.effectivePath(pathA, packageExtensions: packageExtensions)
            for (pathB, b) in zip(pathsB, accessB) {
                let effB = SpecModel.effectivePath(pathB, packageExtensions: packageExtensions)
                if SpecModel.conflict(effA, a, effB, b) { return true }
            }
        }
        return false
    }

    /// Invariant 7 on one event's lease effects, against the state after it.
    private mutating func checkLeaseEffect(_ effect: ArbiterEffect, after event: ArbiterEvent) {
        switch effect {
        case .grantLease(let id, let client, let subtree):
            if !answering.contains(client) { violations.append("\(id) granted to \(client), which answers no recall") }
            if !leasesOn { violations.append("\(id) granted with leases off") }
            if let excluded = excludedSubtree,
                subtree == excluded || subtree.isDescendant(of: excluded) || excluded.isDescendant(of: subtree)
            {
                violations.append("\(id) on \(subtree) granted after \(excluded) was excluded from leases")
            }
            let folder = Self.gateFolder
            if gateClosed, subtree == folder || subtree.isDescendant(of: folder) || folder.isDescendant(of: subtree) {
                violations.append("\(id) on \(subtree) granted while the host gate of \(folder) is closed")
            }
            let snapshot = arbiter.snapshot()
            for claim in snapshot.claims where claim.request.id != id.claim {
                for (path, access) in zip(claim.effectivePaths, claim.accesses)
                where path == subtree || path.isDescendant(of: subtree)
                    || (subtree.isDescendant(of: path) && access.coversSubtree)
                {
                    violations.append("\(id) on \(subtree) granted while \(claim.request.id) holds \(path)")
                }
            }
            for (presenter, registration) in snapshot.presenters {
                guard let path = registration.path else { continue }
                if path == subtree || path.isDescendant(of: subtree) || subtree.isDescendant(of: path) {
                    violations.append("\(id) on \(subtree) granted while \(presenter) presents \(path)")
                }
            }
            holderLeases[id] = (client, subtree, false)
            leaseCounts.grants += 1
            if onePurposeOf[client] != nil { onePurposeLeases += 1 }
        case .recallLease(let id, let client):
            guard let lease = holderLeases[id] else {
                violations.append("recall of \(id), which \(client) does not hold")
                return
            }
            if lease.client != client { violations.append("recall of \(id) sent to the wrong client") }
            if lease.recalled { violations.append("\(id) recalled twice") }
            holderLeases[id]?.recalled = true
            leaseCounts.recalls += 1
        case .leaseDropped(let id, _):
            if case .clientDisconnected = event {} else { violations.append("\(id) dropped by \(event)") }
        case .claimInsideLease(let claim, let client, let id):
            // The holder decides it in process, as the library does (a conflict there makes it skip the claim).
            guard let lease = holderLeases[id], lease.client == client, !lease.recalled,
                let request = claimInfo[claim], request.client == client
            else {
                violations.append("\(claim) handed to \(client) inside \(id), which it does not hold unrecalled")
                return
            }
            if !request.mayBeDecided(inLeaseOn: lease.subtree) {
                violations.append("\(claim) handed to \(id), which may not decide it (outside \(lease.subtree)?)")
            }
            let conflicting = inProcess.values.contains {
                holderLeases[$0.lease]?.client == client && requestsConflict(request, $0.request)
            }
            if !conflicting {
                inProcess[claim] = (id, request)
                leaseCounts.inProcess += 1
            }
        default:
            break
        }
    }

    private mutating func randomReply(for request: RequestID) -> PresenterReply {
        guard let (_, _, kind) = requestKinds[request] else { return .succeeded }
        switch kind {
        case .relinquishToReader, .relinquishToWriter:
            return .relinquished(reacquirer: rng.chance(70))
        default:
            return rng.chance(10) ? .failed(PresenterError(domain: "Sim", code: 7, message: "refused")) : .succeeded
        }
    }

    private mutating func randomGranted() -> ClaimID? {
        let live = granted.subtracting(ended).sorted()
        return live.randomElement(using: &rng)
    }

    // MARK: Feeding the arbiter and recording what it says

    @discardableResult
    private mutating func send(_ event: ArbiterEvent) -> [ArbiterEffect] {
        if recordTrace { trace.append("step \(step): \(Self.traced(event))") }
        let beforeForHolds: ArbiterSnapshot? = holdLimitsOn && !holds.overdue.isEmpty ? arbiter.snapshot() : nil
        let beforeForNonblocking: ArbiterSnapshot? =
            nonblockingOn && nonblocking.needsSnapshot(before: event) ? beforeForHolds ?? arbiter.snapshot() : nil
        let drainingBefore = Set(
            beforeForHolds == nil ? [] : arbiter.hostGateSnapshots().filter(\.draining).map(\.claim)
        )
        if case .timerFired(.fileSystemWindow) = event {
            fileSystemNotificationsThisWindow = []
            windowTicks += 1
        }
        noteWritesEndedUnsaid(by: event)
        let owed = owedNotifications(for: event)
        if case .fileSystemChanged(_, _, _, _?) = event { lag.reported() }
        // Steps as milliseconds: only reports read the time.
        let effects = arbiter.handle(event, at: .milliseconds(step))
        if case .itemMoved = event {
            // Issue 26: a move relocates waiting claims (rule 7) and leaves granted ones where they were, so an
            // identity read before it no longer tells which claims hold one file: such claims leave that check.
            livedThroughMove.formUnion(arbiter.snapshot().claims.map(\.request.id))
        }
        if case .itemMoved(let mover, _, _, _) = event {
            // A mover holds the new location from now on. If it moved the item onto a location another granted
            // claim holds, without claiming it first, that overlap is the mover's doing, not the arbiter's.
            let snapshot = arbiter.snapshot()
            if let moving = snapshot.claims.first(where: { $0.request.id == mover }) {
                for other in snapshot.claims
                where other.phase == .granted
                    && SpecModel.conflict(
                        moving,
                        other,
                        packageExtensions: packageExtensions,
                        onePurpose: onePurposeClients
                    )
                {
                    excusedPairs.insert([mover, other.request.id])
                }
            }
        }
        // The mover's spelling of an in-place move's old name reaches each folder's did-move, and nothing else.
        let spelled: [UInt8]? = {
            if case .itemMoved(_, let from, let to, let name) = event, from == to { return name }
            return nil
        }()
        for case .message(let message) in effects where message.movedFromName != nil || spelled != nil {
            let inPlaceMove: Bool = {
                if case .presentedSubitemDidMove(let from, let to) = message.kind { return from == to }
                return false
            }()
            if message.movedFromName != (inPlaceMove ? spelled : nil) {
                violations.append(
                    "\(message.kind) to \(message.presenter) carried moved-from name \(message.movedFromName.map { String(decoding: $0, as: UTF8.self) } ?? "none") after \(event)"
                )
            }
        }
        for (presenter, kind) in owed {
            let count = effects.filter {
                if case .message(let message) = $0 { return message.presenter == presenter && message.kind == kind }
                return false
            }.count
            if count != 1 { violations.append("\(presenter) was owed one \(kind) after \(event), got \(count)") }
        }
        if case .presenterReplied(let request, let reply) = event, let index = openRequests.firstIndex(of: request) {
            openRequests.remove(at: index)
            if case .relinquished(reacquirer: true) = reply, let (presenter, _, _) = requestKinds[request] {
                owedReacquire[request] = presenter
            }
        }
        if case .timerFired(.presenterReply(let request)) = event, let index = openRequests.firstIndex(of: request) {
            openRequests.remove(at: index)
        }
        if case .itemMoved(let mover, _, _, _) = event,
            let moving = arbiter.snapshot().claims.first(where: { $0.request.id == mover })
        {
            for (id, entry) in inProcess
            where pathsConflict(
                moving.paths,
                moving.accesses,
                entry.request.items.map(\.path),
                entry.request.items.map(\.access)
            ) {
                excusedInProcess.insert([mover, id])
            }
        }
        for effect in effects {
            if recordTrace, case .log = effect {} else if recordTrace { trace.append("    -> \(effect)") }
            record(effect)
            checkLeaseEffect(effect, after: event)
        }
        // Requests owed by presenters that are gone count as answered.
        let stillOpen = arbiter.snapshot().outstandingRequests
        openRequests.removeAll { stillOpen[$0] == nil }
        if holdLimitsOn {
            let (found, ended) = holds.check(
                after: event,
                effects: effects,
                requests: claimInfo,
                before: beforeForHolds,
                drainingGatesBefore: drainingBefore,
                arbiter: arbiter,
                packageExtensions: packageExtensions
            )
            violations += found
            for claim in ended { noteEndedUnsaid(claim) }
        }
        if nonblockingOn {
            violations += nonblocking.check(
                after: event,
                effects: effects,
                requests: claimInfo,
                before: beforeForNonblocking,
                arbiter: arbiter,
                packageExtensions: packageExtensions
            )
        }
        return effects
    }

    private var violations: [String] = []
    /// Directories watched now, from the watch and unwatch effects (issue 13).
    private var watchedDirectories: Set<ItemPath> = []
    /// "presenter directory" for each watchUnavailable not followed by a watchAvailable.
    private var toldUnwatched: Set<String> = []
    /// watchAvailable effects checked.
    private(set) var watchesAvailableAgain = 0
    /// The directory of the last `watchFailed` event made, which a `watchAdded` names.
    private var lastFailedWatch: ItemPath?
    /// File-system notifications sent since the coalescing window's timer last fired.
    private var fileSystemNotificationsThisWindow: Set<String> = []
    private var movedClaims: Set<ClaimID> = []
    /// The did-move notifications each claim owed so far ("presenter path"), to owe each once per claim.
    private var movesOwed: [ClaimID: Set<String>] = [:]
    private var excusedPairs: Set<Set<ClaimID>> = []
    /// Claims live when some item moved (issue 26's check skips them).
    private var livedThroughMove: Set<ClaimID> = []

    /// The notifications an event must produce, exactly once each: did change to the presenters of an item written
    /// by a claim that ends (not for deletions, nor for claims that moved something), did move to the presenters at
    /// and under a moved item.
    private mutating func owedNotifications(for event: ArbiterEvent) -> [(PresenterID, PresenterMessageKind)] {
        var owed: [(PresenterID, PresenterMessageKind)] = []
        switch event {
        case .claimFinished(let id, _, _):
            guard arbiter.phase(of: id) == .granted, !movedClaims.contains(id), let request = claimInfo[id] else {
                return []
            }
            let snapshot = arbiter.snapshot()
            guard let live = snapshot.claims.first(where: { $0.request.id == id }) else { return [] }
            var seen: Set<PresenterID> = []
            // The paths the claim holds now: a claim that waited may have followed a move (rule 7).
            for (path, item) in zip(live.paths, request.items) {
                guard case .write(let options) = item.access, !options.contains(.forDeleting) else { continue }
                // One did-change per claim: a version change inside it may have told the presenter already.
                for (presenter, registration) in snapshot.presenters.sorted(by: { $0.key < $1.key })
                where registration.path == path && presenter != request.filePresenter
                    && registration.callbacks.contains(.presentedItemDidChange) && seen.insert(presenter).inserted
                    && !didChangePerClaim.contains("\(id)/\(presenter)")
                {
                    owed.append((presenter, .presentedItemDidChange))
                }
            }
        case .itemMoved(let id, let from, let to, _):
            guard arbiter.phase(of: id) == .granted, let request = claimInfo[id],
                request.items.contains(where: { $0.access.isWrite })
            else { return [] }
            movedClaims.insert(id)
            // `from == to` is a rename in place (a case-only rename): the presenters of the item still hear it.
            guard !to.isDescendant(of: from) else { return [] }
            for (presenter, registration) in arbiter.snapshot().presenters.sorted(by: { $0.key < $1.key }) {
                guard presenter != request.filePresenter, registration.callbacks.contains(.presentedItemDidMove),
                    let new = registration.path?.relocated(from: from, to: to)
                else { continue }
                // A claim tells a presenter each notification once (`notifyOnce`): a second rename to the same
                // place within one claim (two case-only renames in place, or a move there and back) owes nothing new.
                guard movesOwed[id, default: []].insert("\(presenter) \(new)").inserted else { continue }
                owed.append((presenter, .presentedItemDidMove(to: new)))
            }
        default:
            break
        }
        return owed
    }

    private mutating func record(_ effect: ArbiterEffect) {
        switch effect {
        case .drainWatcher:
            if let violation = lag.record(effect) { violations.append(violation) }
        case .grant(let id, _, let paths):
            // Issue 40: nothing that needs the folder is granted while its host gate is closed.
            if gateClosed, let request = claimInfo[id], needsGate(request, at: paths),
                !passesDrain(request, id)
            {
                violations.append("\(id) granted inside the closed host gate of \(Self.gateFolder)")
            }
            if granted.contains(id) { violations.append("\(id) granted twice") }
            if failed.contains(id) { violations.append("\(id) granted after failing") }
            if let request = claimInfo[id], paths.count != request.items.count {
                violations.append("\(id) granted with \(paths.count) paths for \(request.items.count) items")
            }
            granted.insert(id)
        case .fail(let id, _, let failure):
            if case .clusterUnreachable = failure {
                gateCounts.failedAtGate += 1
                if !gateClosed { violations.append("\(id) failed at the host gate while it is open") }
            }
            if failed.contains(id) { violations.append("\(id) failed twice") }
            if granted.contains(id) && !ended.contains(id) && claimInfo[id] != nil
                && arbiter.phase(of: id) == .granted
            {
                violations.append("\(id) failed while granted")
            }
            failed.insert(id)
        case .message(let message):
            checkMessage(message)
            if message.claim == nil, message.request == nil {
                if case .reacquire = message.kind { break }
                // Coalescing: each notification caused by the file system at most once per window.
                if !fileSystemNotificationsThisWindow.insert("\(message.presenter) \(message.kind)").inserted {
                    violations.append("two \(message.kind) to \(message.presenter) in one coalescing window")
                }
            }
        case .watch(let directory):
            watchedDirectories.insert(directory)  // Again after a creation: allowed.
        case .unwatch(let directory):
            if watchedDirectories.remove(directory) == nil {
                violations.append("unwatch of \(directory), which was not watched")
            }
        case .watchUnavailable(let presenter, _, let directory, _):
            if presenterInfo[presenter] == nil { violations.append("watchUnavailable to unknown \(presenter)") }
            toldUnwatched.insert("\(presenter) \(directory)")
        case .watchAvailable(let presenter, _, let directory):
            // Only to a presenter told that this directory could not be watched, and only once it no longer fails.
            if presenterInfo[presenter] == nil { violations.append("watchAvailable to unknown \(presenter)") }
            watchesAvailableAgain += 1
            if toldUnwatched.remove("\(presenter) \(directory)") == nil {
                violations.append("watchAvailable of \(directory) to \(presenter), never told it was not watched")
            }
        case .claimInsideLease(let id, _, _):
            // Handed back to its client, to decide in its lease: neither granted nor failed here.
            failed.insert(id)
        case .fileWithOtherNamesWritten(let identity):
            // Issue 26: only for a granted claim, ended now, that wrote the file through an item with other names.
            let wrote = claimInfo.contains { id, request in
                granted.contains(id) && arbiter.phase(of: id) == nil
                    && request.items.contains {
                        guard $0.identity == identity, $0.hasOtherNames, case .write(let options) = $0.access else {
                            return false
                        }
                        return options.isDisjoint(with: [.forDeleting, .forMoving])
                    }
            }
            if !wrote { violations.append("\(identity) reported written, by no ended claim that wrote it") }
            otherNamesWritten += 1
        case .hostGateDrained(let folder):
            // After a drain only: nothing that needs the folder is granted any more, nor a lease held there.
            if !drainPending || folder != Self.gateFolder { violations.append("\(folder) drained unasked") }
            drainPending = false
            gateCounts.drained += 1
            let snapshot = arbiter.snapshot()
            for claim in snapshot.claims
            where claim.phase == .granted && !claim.request.id.isHostGate
                && needsGate(claim.request, at: Array(claim.paths.prefix(claim.request.items.count)))
            {
                violations.append("\(folder) drained while \(claim.request.id) is granted there")
            }
        case .hostGateWanted(let folder):
            if folder != Self.gateFolder { violations.append("\(folder) wanted, which has no gate") }
        case .startTimer, .cancelTimer, .log, .grantLease, .recallLease, .leaseDropped:
            break
        }
    }

    private mutating func checkMessage(_ message: PresenterMessage) {
        guard let presenter = presenterInfo[message.presenter] else {
            violations.append("message \(message.kind) to \(message.presenter), which is not registered")
            return
        }
        if presenter.client != message.client {
            violations.append("message to \(message.presenter) addressed to the wrong client")
        }
        if case .reacquire(let relinquish) = message.kind {
            if owedReacquire[relinquish] != message.presenter {
                violations.append("reacquire for \(relinquish) that \(message.presenter) did not ask for")
            }
            if !reacquired.insert(relinquish).inserted { violations.append("reacquire for \(relinquish) sent twice") }
            return
        }
        if !presenter.callbacks.contains(message.kind.callback) {
            violations.append("\(message.kind) sent to \(message.presenter), which does not implement it")
        }
        if let claim = message.claim, let request = claimInfo[claim], request.filePresenter == message.presenter {
            switch message.kind {
            case .presentedItemVersion, .presentedSubitemVersion: break
            default: violations.append("\(message.kind) sent to the claim's own presenter \(message.presenter)")
            }
        }
        if let request = message.request {
            requestKinds[request] = (message.presenter, message.claim, message.kind)
            openRequests.append(request)
        }
        if let claim = message.claim {
            switch message.kind {
            case .relinquishToReader, .relinquishToWriter:
                if !relinquishesPerClaim.insert("\(claim)/\(message.presenter)").inserted {
                    violations.append("two relinquish requests to \(message.presenter) for \(claim)")
                }
            case .presentedItemDidChange:
                if !didChangePerClaim.insert("\(claim)/\(message.presenter)").inserted {
                    violations.append("two did-change to \(message.presenter) for \(claim)")
                }
            default:
                break
            }
        }
    }

    // MARK: Invariants

    private mutating func check() throws(Failure) {
        let snapshot = arbiter.snapshot()
        for (id, _) in claimInfo where snapshot.claims.first(where: { $0.request.id == id }) == nil {
            ended.insert(id)
        }
        // Reacquirers owed for claims that ended must have been sent (to presenters still registered).
        for (request, presenter) in owedReacquire where presenterInfo[presenter] != nil && !reacquired.contains(request)
        {
            guard let (_, claim, _) = requestKinds[request] else { continue }
            if let claim, snapshot.claims.contains(where: { $0.request.id == claim }) { continue }
            violations.append("\(presenter) relinquished with a reacquirer for \(request) and never got it back")
        }
        // Invariant 6: the idle leaves are bounded by the retention.
        if snapshot.idleLeafCount > idleNodeRetention {
            violations.append("\(snapshot.idleLeafCount) idle leaves; the retention is \(idleNodeRetention)")
        }
        // Watches are exactly what the registered presenters need: each presenter's item and its parent.
        var needed: Set<ItemPath> = []
        for registration in snapshot.presenters.values {
            guard let path = registration.path else { continue }
            needed.insert(path)
            if let parent = path.parent { needed.insert(parent) }
        }
        if needed != watchedDirectories {
            violations.append(
                "watched \(watchedDirectories.subtracting(needed).sorted()) needlessly, "
                    + "not \(needed.subtracting(watchedDirectories).sorted())"
            )
        }
        // A host gate coexists with the claims granted before it closed (they end, or are reported lost).
        let granted = snapshot.claims.filter { $0.phase == .granted && !$0.request.id.isHostGate }
        for (i, a) in granted.enumerated() {
            for b in granted[(i + 1)...]
            where SpecModel.conflict(a, b, packageExtensions: packageExtensions, onePurpose: onePurposeClients)
                && !excusedPairs.contains([a.request.id, b.request.id])
            {
                violations.append(
                    "conflicting claims granted at once: \(a.request.id) \(a.paths) and \(b.request.id) \(b.paths)"
                )
            }
        }
        // Issue 26: two granted claims never hold one file through two of its names, one of them writing what it
        // holds (deletions and moves act on a name alone), unless a rule exempts them.
        for (i, a) in granted.enumerated() {
            for b in granted[(i + 1)...]
            where !SpecModel.exempt(a.request, b.request, onePurpose: onePurposeClients)
                && !excusedPairs.contains([a.request.id, b.request.id])
                && !livedThroughMove.contains(a.request.id) && !livedThroughMove.contains(b.request.id)
            {
                for itemA in a.request.items {
                    guard let identity = itemA.identity, let accessA = itemA.access.contentAccess else { continue }
                    for itemB in b.request.items where itemB.identity == identity {
                        guard let accessB = itemB.access.contentAccess, accessA.isWrite || accessB.isWrite else {
                            continue
                        }
                        violations.append(
                            "\(a.request.id) \(itemA) and \(b.request.id) \(itemB) hold file \(identity) at once"
                        )
                    }
                }
            }
        }
        for claim in snapshot.claims where claim.phase == .waiting {
            let blocked = snapshot.claims.contains { mayHold(claim, back: $0, in: snapshot) }
            if !blocked { violations.append("\(claim.request.id) waits with nothing blocking it") }
        }
        // FIFO (rule 6): a claim that starts must not overtake an earlier conflicting claim that still waits, unless
        // a rule lets it pass (judged on this snapshot or the one before, as the start happened in between).
        for claim in snapshot.claims
        where claim.phase != .waiting && !claim.request.isHeld && !claim.request.id.isLease
            && !claim.request.id.isHostGate && (previousPhase[claim.request.id] ?? .waiting) == .waiting
        {
            for other in snapshot.claims
            where other.phase == .waiting && other.sequence < claim.sequence
                && SpecModel.conflict(claim, other, packageExtensions: packageExtensions, onePurpose: onePurposeClients)
                && mayHold(claim, back: other, in: snapshot)
                && previousSnapshot.map({ mayHold(claim, back: other, in: $0) }) != false
            {
                violations.append("\(claim.request.id) started ahead of earlier conflicting \(other.request.id)")
            }
        }
        previousPhase = Dictionary(uniqueKeysWithValues: snapshot.claims.map { ($0.request.id, $0.phase) })
        previousSnapshot = snapshot
        for claim in snapshot.claims where claim.phase == .preparing && claim.awaiting.isEmpty {
            let held = snapshot.claims.contains {
                $0.phase == .granted
                    && SpecModel.conflict(
                        claim,
                        $0,
                        packageExtensions: packageExtensions,
                        onePurpose: onePurposeClients
                    )
            }
            if !held { violations.append("\(claim.request.id) is prepared, owes nothing, and is not granted") }
        }
        let kept = Set(arbiter.leaseSnapshots().filter { $0.state == .holderDisconnected }.map(\.id.claim))
        for client in abandonedClients {
            // A lease kept after the host closed its holder's connection stays, as its claim, until its time passes.
            if snapshot.claims.contains(where: { $0.request.client == client && !kept.contains($0.request.id) }) {
                violations.append("a claim of disconnected \(client) survived")
            }
            if snapshot.presenters.values.contains(where: { $0.client == client }) {
                violations.append("a presenter of disconnected \(client) survived")
            }
        }
        for id in snapshot.presenters.keys where presenterInfo[id] == nil {
            violations.append("\(id) is still registered after it was removed")
        }
        checkLeases(snapshot)
        // Issue 40: while the host gate is closed no lease touching its folder is left unrecalled (its holder would go
        // on deciding claims in process there), minimum hold or not.
        if gateClosed {
            let folder = Self.gateFolder
            for lease in arbiter.leaseSnapshots()
            where
                (lease.subtree == folder || lease.subtree.isDescendant(of: folder)
                || folder.isDescendant(of: lease.subtree))
                && (lease.state == .held || lease.state == .recallDue)
            {
                violations.append(
                    "\(lease.id) on \(lease.subtree) not recalled while the host gate of \(folder) is closed"
                )
            }
        }
        if let first = violations.first {
            throw Failure(seed: seed, step: step, message: first, trace: trace)
        }
    }

    /// Invariant 7 on the state: no two processes believe they hold conflicting claims, and a held lease has nothing
    /// overlapping it that it was not recalled for.
    private mutating func checkLeases(_ snapshot: ArbiterSnapshot) {
        let live = Dictionary(uniqueKeysWithValues: arbiter.leaseSnapshots().map { ($0.id, $0) })
        let entries = inProcess.sorted { $0.key < $1.key }
        for (index, (id, entry)) in entries.enumerated() {
            guard let lease = live[entry.lease], lease.client == entry.request.client else {
                violations.append("\(id) runs in process under \(entry.lease), which the arbiter no longer grants")
                continue
            }
            for claim in snapshot.claims
            where claim.phase == .granted && !claim.request.id.isLease && !claim.request.id.isHostGate
                && !excusedInProcess.contains([id, claim.request.id]) && !excusedPairs.contains([id, claim.request.id])
                && !SpecModel.exempt(entry.request, claim.request, onePurpose: onePurposeClients)
                && pathsConflict(
                    entry.request.items.map(\.path),
                    entry.request.items.map(\.access),
                    // The locations a mover moved onto are its doing, not the arbiter's (as `excusedPairs`).
                    Array(claim.paths.prefix(claim.request.items.count)),
                    Array(claim.accesses.prefix(claim.request.items.count))
                )
            {
                violations.append(
                    "\(id) runs in process under \(entry.lease) while \(claim.request.id) \(claim.paths) is granted"
                )
            }
            for (otherID, other) in entries[(index + 1)...]
            where other.request.client != entry.request.client && requestsConflict(entry.request, other.request) {
                violations.append("\(id) and \(otherID) run in process in two clients and conflict")
            }
        }
        for lease in live.values where lease.state == .held {
            for claim in snapshot.claims where claim.request.id != lease.id.claim && claim.phase != .granted {
                for (path, access) in zip(claim.effectivePaths, claim.accesses)
                where path == lease.subtree || path.isDescendant(of: lease.subtree)
                    || (lease.subtree.isDescendant(of: path) && access.coversSubtree)
                {
                    violations.append("\(lease.id) is held while \(claim.request.id) waits on \(path)")
                }
            }
            for (presenter, registration) in snapshot.presenters {
                guard let path = registration.path else { continue }
                if path == lease.subtree || path.isDescendant(of: lease.subtree) || lease.subtree.isDescendant(of: path)
                {
                    violations.append("\(lease.id) is held while \(presenter) presents \(path)")
                }
            }
        }
    }

    /// Whether `other` keeps `claim` from starting, by docs/SEMANTICS.md §2 stated without the arbiter's index:
    /// a conflicting, non-exempt claim that is active or arrived earlier (rule 6), except that
    /// - a claim made with a presenter that owed a reply then and still does passes every waiting claim and the
    ///   preparing claims that presenter is answering (rule 5);
    /// - a claim exempt from a granted claim passes waiting claims that wait, directly or transitively, for it (§5).
    private func mayHold(
        _ claim: ArbiterSnapshot.Claim,
        back other: ArbiterSnapshot.Claim,
        in snapshot: ArbiterSnapshot
    ) -> Bool {
        // Issue 23 with 26: a claim on a file with other names waits for every lease (those names may lie inside
        // one, where only the holder knows its claims).
        if other.request.id.lease != nil, !claim.request.isHeld,
            claim.request.id.lease == nil, claim.request.items.contains(where: \.hasOtherNames),
            !SpecModel.exempt(claim.request, other.request, onePurpose: onePurposeClients)
        {
            return true
        }
        guard SpecModel.conflict(claim, other, packageExtensions: packageExtensions, onePurpose: onePurposeClients)
        else { return false }
        let presenter = claim.request.filePresenter
        let answering =
            claim.madeWhileAnswering && presenter.map { snapshot.outstandingRequests.values.contains($0) } == true
        if other.phase != .waiting {
            if answering, other.phase == .preparing, let presenter, other.awaiting.values.contains(presenter) {
                return false
            }
            return true
        }
        guard other.sequence < claim.sequence, !answering else { return false }
        let holders = Set(
            snapshot.claims.filter {
                $0.phase == .granted && $0.request.id != claim.request.id
                    && SpecModel.exempt(claim.request, $0.request, onePurpose: onePurposeClients)
            }.map(\.request.id)
        )
        return holders.isEmpty || !waitsTransitively(other, on: holders, in: snapshot)
    }

    private func waitsTransitively(
        _ waiting: ArbiterSnapshot.Claim,
        on holders: Set<ClaimID>,
        in snapshot: ArbiterSnapshot
    ) -> Bool {
        var stack = [waiting]
        var visited: Set<ClaimID> = [waiting.request.id]
        while let current = stack.popLast() {
            for other in snapshot.claims
            where SpecModel.conflict(
                current,
                other,
                packageExtensions: packageExtensions,
                onePurpose: onePurposeClients
            ) {
                if other.phase != .waiting {
                    if holders.contains(other.request.id) { return true }
                } else if other.sequence < current.sequence, visited.insert(other.request.id).inserted {
                    stack.append(other)
                }
            }
        }
        return false
    }

    /// Answers every request and finishes every granted claim until nothing is left; then disconnects everyone.
    private mutating func drain() throws(Failure) {
        while !closedUnnoticed.isEmpty { holderNotices() }
        if gatesOn {
            gateClosed = false
            drainPending = false
            step += 1
            send(.hostGate(Self.gateFolder, .open(revision: Int64(step))))
            try check()
        }
        var rounds = 0
        while true {
            step += 1
            rounds += 1
            let snapshot = arbiter.snapshot()
            if snapshot.claims.isEmpty && snapshot.outstandingRequests.isEmpty { break }
            if rounds > 10_000 {
                throw Failure(
                    seed: seed,
                    step: step,
                    message: "drain made no progress: \(snapshot.claims.map { "\($0.request.id) \($0.phase)" })",
                    trace: trace
                )
            }
            if let request = openRequests.first {
                send(.presenterReplied(request, randomReply(for: request)))
            } else if let id = inProcess.keys.min() {
                inProcess[id] = nil
            } else if let claim = snapshot.claims.first(where: { $0.phase == .granted && !$0.request.id.isLease }) {
                send(.claimFinished(claim.request.id, created: []))
            } else if let lease = arbiter.leaseSnapshots().first(where: { $0.state == .holderDisconnected }) {
                send(.timerFired(.leaseOrphaned(lease.id)))
            } else if let lease = arbiter.leaseSnapshots().first {
                holderLeases[lease.id] = nil
                send(.leaseReturned(lease.id, client: lease.client, running: []))
            } else {
                throw Failure(
                    seed: seed,
                    step: step,
                    message:
                        "stuck: no request open and no claim granted, yet claims wait: \(snapshot.claims.map { "\($0.request.id) \($0.phase) \($0.paths)" })",
                    trace: trace
                )
            }
            try check()
        }
        for id in claimInfo.keys.sorted() where !granted.contains(id) && !failed.contains(id) {
            guard let client = claimInfo[id]?.client, !abandonedClients.contains(client) else { continue }
            throw Failure(seed: seed, step: step, message: "\(id) was never granted nor failed", trace: trace)
        }
        for client in liveClients {
            send(.clientDisconnected(client))
        }
        presenterInfo = [:]
        let end = arbiter.snapshot()
        if end.nodeCount != 1 + end.idleNodeCount || end.idleLeafCount > idleNodeRetention || !end.claims.isEmpty
            || !end.presenters.isEmpty
        {
            throw Failure(
                seed: seed,
                step: step,
                message: "state left after everyone left: \(end.nodeCount) nodes, \(end.idleNodeCount) idle",
                trace: trace
            )
        }
    }
}

extension Access {
    /// The access as it reaches a file's contents (issue 26), stated again for the simulator: deletions and moves
    /// act on a name and do not count.
    fileprivate var contentAccess: Access? {
        if case .write(let options) = self, !options.isDisjoint(with: [.forDeleting, .forMoving]) { return nil }
        return self
    }
}
