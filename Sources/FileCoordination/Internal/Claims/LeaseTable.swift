import Dispatch
import FCCore
import FCProtocol
import FCSystem
import FCToolkit
import Logging
import Synchronization

/// The leases this client holds from the daemon (issue 23; docs/SEMANTICS.md §13): for each, the subtree and an
/// ``InProcessArbiter`` of its own that decides, in this process and without a round trip, the claims whose items all lie
/// inside it.
///
/// A claim goes to a lease only while the lease is held and not recalled; from the moment a recall is taken
/// (``recall(_:returning:)``) the lease decides nothing more: its claims still running are declared to the daemon
/// in the same step, under the lock, before any of them can send its finish, and its waiting claims go to the daemon.
/// Claims made with a presenter, or on a presenter's queue, never go to a lease (the daemon knows the presenters), nor
/// claims on a file with other names (hard links, which may lie outside the lease): see
/// `ClaimRequest.mayBeDecided(inLeaseOn:)`.
///
/// On unless the client was told not to answer recalls (`FILECOORD_LEASES=0`; ``ConnectionPolicy``): a daemon grants
/// leases only to clients that announce they answer them.
///
/// A lease that decided no claim for a while and runs none is returned unasked (``returnIdle(on:)``, every
/// ``idleReturn`` while leases are held, from the connection's listener): an idle holder that is then stopped (a
/// terminal editor suspended with Ctrl-Z) holds back nobody, since a recall it cannot answer never counts as a yes.
///
/// With no lease held (always, when the client coordinates in process: only a daemon grants leases) a claim and a
/// message cost one atomic load here and take no lock (``heldCount``).
///
/// - Important: Thread-safe. `state` guards everything; it is held while a lease's arbiter runs and while a
///   recall's answer is written (so that nothing of the lease reaches the daemon before it), never while a waiter is
///   resumed or user code runs. Its outcomes are handed back to the caller, which resumes the waiters.
// @unchecked: `state` (`Arbiter`s, not `Sendable`) is reached only under its lock.
final class LeaseTable: @unchecked Sendable {
    /// What a lease's arbiter decided for claims: grants and failures, to be resumed by the client.
    typealias Outcomes = [(ClaimID, ClaimOutcome)]

    /// A lease as this process knows it: the connection whose daemon granted it (``DaemonTransport/serial``) and
    /// that daemon's id for it. Ids alone are not enough: a later daemon numbers its leases from 1 again, and a late
    /// listener of a lost connection must touch only that connection's leases.
    struct Key: Hashable, Comparable {
        var connection: UInt64
        var lease: LeaseID

        static func < (a: Key, b: Key) -> Bool { (a.connection, a.lease.rawValue) < (b.connection, b.lease.rawValue) }
    }

    private struct State {
        var leases: [Key: Lease] = [:]
        /// The lease deciding each live claim of this client that a lease decides.
        var owner: [ClaimID: Key] = [:]
        var requests: [ClaimID: ClaimRequest] = [:]
        /// Claims decided in process since the client started, for tests and benchmarks.
        var decided = 0
        /// The lease that took the last claim offered through ``grantAtOnce(_:)``, looked at first: a program
        /// working through one folder (a sync agent's scan) finds its lease without going through the others.
        var lastUsedLease: Lease?

        /// A lease held that may decide a claim of `item` alone (no presenter, not from a presenter's queue), if
        /// any: the last used first, then every lease.
        mutating func lease(deciding item: ClaimItem) -> Lease? {
            if let lastUsedLease, item.mayBeDecided(inLeaseOn: lastUsedLease.subtree) { return lastUsedLease }
            let found = leases.first { _, lease in item.mayBeDecided(inLeaseOn: lease.subtree) }?.value
            if found != nil { lastUsedLease = found }
            return found
        }

        /// Takes lease `key` out of the table (recalled, returned, dropped): it decides nothing more, and the claim
        /// it granted at once, if any, is no longer its own: one that came through the straight path is entered in
        /// `claims` as held (declared to the next daemon if the connection is lost), and its finish goes the usual
        /// way.
        mutating func remove(_ key: Key, holdingIn claims: ClaimTable) {
            guard let lease = leases.removeValue(forKey: key) else { return }
            lease.arbiter.cancelTimers()
            if case .straight(let running) = lease.takeGrantedAtOnce() { claims.hold(running.request) }
            if lastUsedLease === lease { lastUsedLease = nil }
        }

        /// The lease whose claim granted at once through the straight path is `claim`, if any (its messages, a move
        /// reported inside its accessor, are not in `owner`): the last used first, then every lease.
        func straightPathLease(of claim: ClaimID) -> Key? {
            func holds(_ lease: Lease) -> Bool { lease.grantedOnStraightPath && lease.grantedAtOnce?.id == claim }
            if let lastUsedLease, holds(lastUsedLease) {
                return leases.first { $0.value === lastUsedLease }?.key
            }
            return leases.first { holds($0.value) }?.key
        }
    }
    private let state = Locked(State())
    /// `state.leases.count`, stored under the lock whenever it changes, read without it: the listener asks
    /// ``holdsLeases(on:)`` on every loop, and every claim and message asks ``submit(_:)`` and ``handle(_:)``; with
    /// no lease held (most of the time) that costs one load. A claim a lease decides is forgotten before its lease
    /// is (a recall, a drop, an idle return of a lease running nothing), so with none held no claim is a lease's. A
    /// recall lowers it only after the return is written (released; loads acquire): whoever reads the lower count
    /// sends after the return, and whoever reads the higher one waits for the lock.
    /// How many leases are held (stored under `state` at each change): the client looks at it before it offers a
    /// claim or a message, so that with none held (always so in process) neither costs more than this load.
    let heldCount = Atomic<Int>(0)
    /// `true` when the client announced that it answers recalls: only then does a daemon grant leases.
    let enabled: Bool
    /// How often the leases held are swept for idle ones: a lease is returned once it decided no claim and ran none
    /// for a whole period (so after one to two periods of idleness).
    let idleReturn: Duration
    private let logger: @Sendable () -> Logger
    /// Where outcomes decided on a timer (a claim's deadline, a deadlock check) go: the client.
    weak var owner: CoordinationClient?
    /// The client's claims: a claim granted through ``grantAtOnce(_:)`` is entered there as held only once it is no
    /// longer its lease's claim granted at once while it runs (``State/remove(_:holdingIn:)``,
    /// ``enterGrantedAtOnce(_:state:)``); until then its lease holds it, and a lost connection moves it there.
    private let claims: ClaimTable

    init(enabled: Bool, idleReturn: Duration, claims: ClaimTable, logger: @escaping @Sendable () -> Logger) {
        self.enabled = enabled
        self.claims = claims
        self.idleReturn = idleReturn
        self.logger = logger
    }

    /// Claims decided in process so far.
    var decidedInProcess: Int { state.withLock { $0.decided } }

    /// The subtrees of the leases held (a recalled lease is forgotten as its recall is taken), for tests.
    var heldSubtrees: [ItemPath] {
        state.withLock { $0.leases.values.map(\.subtree).sorted() }
    }

    // MARK: From the daemon

    /// The daemon of connection `connection` (``DaemonTransport/serial``) granted a lease. Taken only while
    /// `connectionLost` (asked under the lock) says the connection lives: its loss is marked before
    /// ``dropAll(of:)`` takes the lock, so a grant read late, after the drop, is not kept (it would decide claims that
    /// no daemon knows of).
    func grant(_ id: LeaseID, subtree: ItemPath, connection: UInt64, connectionLost: () -> Bool) {
        guard enabled else { return }
        var configuration = ArbiterConfiguration()
        configuration.idleNodeRetention = 16
        let taken = state.withLock { state -> Bool in
            guard !connectionLost() else { return false }
            state.leases[Key(connection: connection, lease: id)] = Lease(
                subtree: subtree,
                arbiter: InProcessArbiter(configuration: configuration)
            )
            heldCount.store(state.leases.count, ordering: .releasing)
            return true
        }
        guard taken else { return }
        logger().debug("lease granted", metadata: ["lease.id": "\(id.rawValue)", "item.path": "\(subtree)"])
    }

    /// The daemon recalled a lease: it decides nothing more, and `returning` is called, under the lock, with the
    /// claims it granted that still run (to declare them with the lease's return). Returns the claims it had not
    /// granted yet, to be sent to the daemon.
    func recall(_ key: Key, returning: ([ClaimRequest]) -> Void) -> [ClaimRequest] {
        state.withLock { state in
            guard let lease = state.leases[key] else {
                returning([])
                return []
            }
            var running = lease.grantedAtOnce.map { [$0.request] } ?? []
            var waiting: [ClaimRequest] = []
            let snapshot = lease.arbiter.arbiter.snapshot()
            for claim in snapshot.claims {
                guard let request = state.requests[claim.request.id] else { continue }
                if claim.phase == .granted { running.append(request) } else { waiting.append(request) }
            }
            for request in running + waiting {
                state.owner[request.id] = nil
                state.requests[request.id] = nil
            }
            state.remove(key, holdingIn: claims)
            returning(
                running.map {
                    // As it stands: the places its moves took its items to too (``ClaimTable/moved(_:from:to:)``).
                    var held = claims.heldRequest(of: $0.id) ?? $0
                    held.isHeld = true
                    held.timeout = nil
                    return held
                }
            )
            // Only once the return is written: a finish that reads no lease held goes straight to the daemon, and
            // must not overtake the return that declares its claim (until stop 69 the count fell first; the daemon
            // dropped such a finish as unknown, then took the claim as running for good: every claim that
            // conflicted with it waited for ever).
            heldCount.store(state.leases.count, ordering: .releasing)
            return waiting
        }
    }

    /// Whether the daemon of `connection` granted a lease this client still holds: its listener then sweeps for
    /// idle ones every ``idleReturn``.
    func holdsLeases(on connection: UInt64) -> Bool {
        guard heldCount.load(ordering: .acquiring) > 0 else { return false }
        return state.withLock { state in state.leases.keys.contains { $0.connection == connection } }
    }

    /// The lease that decides `claim`, when a move reported inside it (`item(at:didMoveTo:)`) takes an item to `to`,
    /// outside that lease: the lease cannot decide the new location, which the daemon must know this claim holds. The
    /// caller returns the lease first (``recall(_:returning:)``, declaring its running claims, this one included), then
    /// sends the move to the daemon. Until stop 69 such a move stayed in the lease's arbiter, and the daemon granted
    /// the new location to another process beside it.
    func leaseLeft(by claim: ClaimID, movingTo to: ItemPath) -> Key? {
        guard heldCount.load(ordering: .acquiring) > 0 else { return nil }
        return state.withLock { state in
            guard let key = state.owner[claim] ?? state.straightPathLease(of: claim), let lease = state.leases[key],
                !to.isEqualOrDescendant(of: lease.subtree)
            else { return nil }
            return key
        }
    }

    /// Whether lease `key` is held and may decide claims.
    func holds(_ key: Key) -> Bool { state.withLock { $0.leases[key] != nil } }

    /// Forgets the leases of `connection` that were offered no claim and ran none since the last sweep, and returns
    /// their ids, for the caller to return them to the daemon; the others are marked for the next sweep.
    /// O(leases + live claims decided in leases), every ``idleReturn``.
    ///
    /// The return is written after the lock is released: a lease with nothing running has nothing of its own that
    /// could overtake it, and a claim of this client that reaches the daemon first is handed back, finds the lease
    /// gone, and is sent again after another return (``CoordinationClient``).
    func returnIdle(on connection: UInt64) -> [LeaseID] {
        let returned = state.withLock { state -> [Key] in
            let busy = Set(state.owner.values)
            var returned: [Key] = []
            for (key, lease) in state.leases.sorted(by: { $0.key < $1.key }) where key.connection == connection {
                if busy.contains(key) || lease.grantedAtOnce != nil {
                    // A claim runs: this period counts as used, and the idle time starts when the last one ends.
                    state.leases[key]?.usedSinceSweep = true
                    continue
                }
                if lease.usedSinceSweep {
                    state.leases[key]?.usedSinceSweep = false
                    continue
                }
                state.remove(key, holdingIn: claims)
                returned.append(key)
            }
            heldCount.store(state.leases.count, ordering: .releasing)
            return returned
        }
        for key in returned {
            logger().debug("idle lease returned", metadata: ["lease.id": "\(key.lease.rawValue)"])
        }
        return returned.map(\.lease)
    }

    /// Connection `connection` is gone: the leases its daemon granted are gone with it. Claims still running in them
    /// stay held by the client, which declares them to the next daemon; waiting ones fail with the connection.
    func dropAll(of connection: UInt64) {
        state.withLock { state in
            let dropped = state.leases.keys.filter { $0.connection == connection }
            for key in dropped { state.remove(key, holdingIn: claims) }
            heldCount.store(state.leases.count, ordering: .releasing)
            for (claim, key) in state.owner where key.connection == connection {
                state.owner[claim] = nil
                state.requests[claim] = nil
            }
        }
    }

    // MARK: From the client

    /// Decides `request` in process if a lease held may decide it
    /// (``ClaimRequest/mayBeDecided(inLeaseOn:)``); `nil` when none may (the claim goes to the daemon, which recalls
    /// this client's own lease first when the claim lies inside it).
    func submit(_ request: ClaimRequest) -> Outcomes? {
        guard heldCount.load(ordering: .acquiring) > 0, request.filePresenter == nil, request.fromPresenterQueue == nil
        else { return nil }
        return state.withLock { state -> Outcomes? in
            guard !state.leases.isEmpty else { return nil }
            let lease = state.leases.first { _, lease in
                request.mayBeDecided(inLeaseOn: lease.subtree)
            }
            guard let (id, lease) = lease else { return nil }
            state.owner[request.id] = id
            state.requests[request.id] = request
            state.decided += 1
            if lease.grantedAtOnce == nil, lease.arbiter.arbiter.grantsAtOnce(request) {
                lease.grantAtOnce(.submitted(request))
                return [(request.id, .granted(request.items.map(\.path)))]
            }
            state.leases[id]?.usedSinceSweep = true
            return handle(.claimRequested(request), in: id, state: &state)
        }
    }

    /// Hands a message about a claim a lease decides to that lease's arbiter; `nil` when no lease decides it (the
    /// message goes to the daemon). A coordinator's cancel goes to every lease, and to the daemon too.
    func handle(_ message: ClientMessage) -> Outcomes? {
        guard heldCount.load(ordering: .acquiring) > 0 else { return nil }
        return state.withLock { state -> Outcomes? in
            let claim: ClaimID
            switch message {
            case .finishClaim(let id, _, _), .cancelClaim(let id), .preparationReturned(let id),
                .itemMoved(let id, _, _, _), .versionChanged(let id, _, _):
                claim = id
            case .cancelCoordinator(let coordinator, let client):
                var outcomes: Outcomes = []
                let event = ArbiterEvent.coordinatorCancelled(client, coordinator)
                for id in state.leases.keys.sorted() { outcomes += handle(event, in: id, state: &state) }
                return outcomes
            case .declareHeldClaim, .addPresenter, .removePresenter, .presenterURLChanged, .presenterReplied,
                .returnLease:
                return nil
            }
            let lease: Key
            if let owner = state.owner[claim] {
                lease = owner
            } else if case .finishClaim = message {
                // A claim of the straight path ends through finishAtOnce: one that reaches here left its lease.
                return nil
            } else if let straight = state.straightPathLease(of: claim) {
                // A message from inside a claim of the straight path (a move reported by its accessor): the claim is
                // entered in its lease's arbiter first, which then hears the message, as it would have on the general
                // way. (The daemon knows nothing of such a claim and would drop it.)
                enterGrantedAtOnce(straight, state: &state)
                lease = straight
            } else {
                return nil
            }
            if case .finishClaim = message, let held = state.leases[lease], held.grantedAtOnce?.id == claim {
                _ = held.takeGrantedAtOnce()
                state.owner[claim] = nil
                state.requests[claim] = nil
                return []
            }
            guard let event = message.eventInProcess else { return nil }
            let outcomes = handle(event, in: lease, state: &state)
            if case .finishClaim = message {
                state.owner[claim] = nil
                state.requests[claim] = nil
            }
            return outcomes
        }
    }

    /// Grants `request` in a lease held if the lease may decide it and decides nothing else now (no claim in its
    /// arbiter, none granted at once: ``Arbiter/grantsAtOnce(_:)``), and returns that lease; `nil` otherwise (the
    /// caller submits the claim the usual way). The claim is the lease's ``Lease/grantedAtOnce`` and nothing more:
    /// its finish goes through ``finishAtOnce(_:in:)`` (issue 39: no dictionary entry made or removed per claim).
    ///
    /// The claim table hears of the claim only if it leaves its lease while it runs (``State/remove(_:holdingIn:)``,
    /// under this lock: a connection lost after the grant finds it, and the client declares it to the next daemon).
    func grantAtOnce(_ claim: StraightClaim) -> Lease? {
        // A forked child's copy of the leases is its parent's: it decides nothing (CoordinationClient.submitClaim
        // fails its claims).
        guard heldCount.load(ordering: .acquiring) > 0, !ForkWatch.isForkedChild else { return nil }
        return state.withLock { state -> Lease? in
            guard let lease = state.lease(deciding: claim.item), lease.grantedAtOnce == nil,
                lease.arbiter.arbiter.grantsAtOnce(claim.id, of: claim.client, coordinator: claim.coordinator)
            else { return nil }
            lease.grantAtOnce(.straight(claim))
            state.decided += 1
            return lease
        }
    }

    /// Ends `claim`, granted by ``grantAtOnce(_:)`` in `lease`, when it is still that lease's claim granted at
    /// once; `false` when it is not (the lease was recalled, returned or dropped, or something else happened in it):
    /// the caller then finishes it the usual way (``CoordinationClient/send(_:preferring:)``), which reaches the
    /// lease's arbiter or the daemon.
    func finishAtOnce(_ claim: ClaimID, in lease: Lease) -> Bool {
        state.withLock { _ in
            guard lease.grantedAtOnce?.id == claim else { return false }
            _ = lease.takeGrantedAtOnce()
            return true
        }
    }

    // MARK: The leases' arbiters

    /// Under the lock: enters the claims the lease granted at once in its arbiter, as held claims (granted at once,
    /// asking nobody; their only effect is a log line, dropped), so that it decides what comes next against them.
    private func enterGrantedAtOnce(_ id: Key, state: inout State) {
        guard let granted = state.leases[id]?.takeGrantedAtOnce() else { return }
        let request = granted.request
        if case .straight = granted {
            // A claim granted through ``grantAtOnce(_:)`` was not recorded as the lease's, nor as held: from now on
            // its messages (its finish) go to the arbiter, and a lost connection declares it. (One granted at once by
            // ``submit(_:)`` has both already; its finish may even have left the claim table a moment ago.)
            state.owner[request.id] = id
            state.requests[request.id] = request
            claims.hold(request)
        }
        var held = request
        held.isHeld = true
        _ = state.leases[id]?.arbiter.arbiter.handle(.claimRequested(held))
    }

    private func timerFired(_ timer: TimerID, in lease: Key) {
        let outcomes = state.withLock { state -> Outcomes in
            guard state.leases[lease]?.arbiter.isPending(timer) == true else { return [] }
            return handle(.timerFired(timer), in: lease, state: &state)
        }
        owner?.deliver(outcomes)
    }

    /// Under the lock: one event in one lease's arbiter, after the claims it granted at once; its timers started or
    /// stopped, its grants and failures returned.
    private func handle(_ event: ArbiterEvent, in id: Key, state: inout State) -> Outcomes {
        enterGrantedAtOnce(id, state: &state)
        let effects = state.leases[id]?.arbiter.handle(
            event,
            fire: { [weak self] in self?.timerFired($0, in: id) },
            log: { logger().log($0) }
        )
        var outcomes: Outcomes = []
        for effect in effects ?? [] {
            switch effect {
            case .grant(let claim, _, let paths):
                outcomes.append((claim, .granted(paths)))
            case .fail(let claim, _, let failure):
                state.owner[claim] = nil
                state.requests[claim] = nil
                let error = ClaimFailureMapping.error(for: ClaimFailedReason(failure)) { _ in nil }
                outcomes.append((claim, .failed(error)))
            case .message:
                break  // No presenter is registered with a lease's arbiter.
            }
        }
        return outcomes
    }
}
