public import FCCore
import FCSystem

/// Maps each client's own presenter, claim and coordinator ids to the arbiter's global ids and back, feeds the
/// arbiter, and sorts its effects by the client they are for.
///
/// Clients number their presenters, claims and coordinators themselves; two clients may use the same numbers. The
/// router gives every one a global id, so that the arbiter never confuses them and no client can name, answer or
/// finish another client's claim or presenter. Request ids are the arbiter's own and are checked against the client
/// whose presenter was asked.
///
/// - Important: Not thread-safe: owned by the daemon's event loop, like the arbiter inside it.
public final class SessionRouter {
    /// A client's view of the effects meant for it, in its own ids.
    public struct Routed: Sendable {
        /// Effects per client, in the arbiter's order, with the client's own ids.
        public var perClient: [(ClientID, [ArbiterEffect])] = []
        /// Timers to start or cancel, and log records (global ids).
        public var host: [ArbiterEffect] = []
        /// A presenter registered with its registration time (issue 37): the host asks the watcher, after the
        /// watches above, for what changed at its item since then.
        public var registered: (presenter: PresenterID, path: ItemPath, since: Int64, changeTime: Int64?)?
        /// Presenters added, removed or moved by this event, in global ids (issue 41: a cluster adapter tells the
        /// other hosts of those in shared folders). Empty unless the event was about a presenter.
        public var presenterChanges: [PresenterChange] = []
        /// Replies to messages another host asked this daemon to relay (``relay(_:)``), in the relay's request ids:
        /// they go back to that host, not to the arbiter.
        public var relayReplies: [(RequestID, PresenterReply)] = []
        /// Relayed requests whose presenter went away unanswered (removed, or its client left): the host that asked
        /// is answered as a presenter that left answers.
        public var relayDropped: [RequestID] = []
    }

    /// A presenter that came, went or moved (``Routed/presenterChanges``), in global ids.
    public enum PresenterChange: Sendable {
        /// Registered (the registration in global ids).
        case added(PresenterRegistration)
        /// Removed, or its client went away.
        case removed(PresenterID, client: ClientID)
        /// Its client says its URL changed (after a move, or a nil URL that became real).
        case moved(PresenterID, client: ClientID, to: ItemPath?)
    }

    /// Why a client's request was refused before it reached the arbiter.
    public enum Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        /// The client has as many live claims as it may.
        case tooManyClaims(limit: Int)
        /// The client has as many presenters as it may.
        case tooManyPresenters(limit: Int)
        /// The client reused one of its ids while it was live.
        case duplicateID(String)

        public var description: String {
            switch self {
            case .tooManyClaims(let limit): "more than \(limit) live claims on one connection"
            case .tooManyPresenters(let limit): "more than \(limit) presenters on one connection"
            case .duplicateID(let what): "\(what) reused while live"
            }
        }
    }

    /// The arbiter, for snapshots and statistics.
    public let arbiter: Arbiter
    private let maximumClaims: Int
    private let maximumPresenters: Int
    private var sessions: [ClientID: Session] = [:]
    var presenterOwner: [PresenterID: (ClientID, UInt64)] = [:]
    private var claimOwner: [ClaimID: (ClientID, UInt64)] = [:]
    /// The client whose presenter owes the reply to each open request: only that client may answer it. An entry
    /// lives from the request until its reply (or the client's disconnect), so the table holds only unanswered
    /// requests; a reacquire names an answered request and needs none.
    private var requestOwner: [RequestID: ClientID] = [:]
    private var nextGlobal: UInt64 = 0
    /// The open requests of messages relayed for another host (``relay(_:)``), with the presenter asked: their
    /// replies go back to it.
    var relayed: [RequestID: PresenterID] = [:]
    /// The last relay request id given (``relay(_:)``; ``RequestID/relayBit`` set, apart from the arbiter's ids).
    var nextRelay: UInt64 = 0

    private struct Session {
        var info: ClientInfo
        var presenters: [UInt64: PresenterID] = [:]
        var claims: [UInt64: ClaimID] = [:]
        /// The open requests its presenters owe replies to (their entries in `requestOwner`), so that a disconnect
        /// costs what the client held, not a scan of every client's requests.
        var requests: Set<RequestID> = []
        // Coordinator ids need no mapping: the arbiter compares them together with the client id.
    }

    /// The time of each event for the arbiter (deadlock reports and claim ages use it): monotonic, from the
    /// router's creation.
    private let now: () -> Duration

    /// The time now on the clock the router gives the arbiter, for ages of what the arbiter timestamped
    /// (`ArbiterSnapshot.Claim.arrivedAt`).
    public func currentTime() -> Duration { now() }

    /// Creates a router around a new arbiter. `clock` gives the time of each event (by default the monotonic time
    /// since this call); tests may pass their own.
    public init(
        configuration: ArbiterConfiguration,
        maximumClaimsPerClient: Int,
        maximumPresentersPerClient: Int,
        clock: (() -> Duration)? = nil
    ) {
        let origin = ContinuousClock.now
        self.now = clock ?? { ContinuousClock.now - origin }
        self.arbiter = Arbiter(configuration: configuration)
        self.maximumClaims = maximumClaimsPerClient
        self.maximumPresenters = maximumPresentersPerClient
    }

    private func newGlobal() -> UInt64 {
        nextGlobal += 1
        return nextGlobal
    }

    /// A new client: returns the id the arbiter knows it by.
    public func connect(
        pid: Int32,
        name: String,
        answersRecalls: Bool = false,
        claimsShareOnePurpose: Bool = false
    ) -> ClientID {
        let id = ClientID(newGlobal())
        let info = ClientInfo(
            id: id,
            pid: pid,
            name: name,
            answersRecalls: answersRecalls,
            claimsShareOnePurpose: claimsShareOnePurpose
        )
        sessions[id] = Session(info: info)
        _ = arbiter.handle(.clientConnected(info), at: now())
        return id
    }

    /// The process id of a connected client, as its connection told it.
    public func pid(of client: ClientID) -> Int32? { sessions[client]?.info.pid }

    /// A client went away: everything it held is released and the effects for the others are returned.
    /// `keepingLeasesFor`: the daemon closed the connection itself while the client's process may live on, so its
    /// leases stay that long (``ArbiterEvent/clientClosed(_:keepingLeasesFor:)``).
    public func disconnect(_ client: ClientID, keepingLeasesFor kept: Duration? = nil) -> Routed {
        guard let session = sessions.removeValue(forKey: client) else { return Routed() }
        let event: ArbiterEvent =
            kept.map { .clientClosed(client, keepingLeasesFor: $0) } ?? .clientDisconnected(client)
        var routed = route(arbiter.handle(event, at: now()))
        for presenter in session.presenters.values {
            presenterOwner[presenter] = nil
            routed.presenterChanges.append(.removed(presenter, client: client))
        }
        for claim in session.claims.values { claimOwner[claim] = nil }
        for request in session.requests {
            requestOwner[request] = nil
            // A relayed request its presenter cannot answer any more: the host that asked is answered now.
            if relayed.removeValue(forKey: request) != nil { routed.relayDropped.append(request) }
        }
        return routed
    }

    /// How many presenter requests wait for their reply (for tests and dumps): the router keeps nothing per
    /// answered request.
    public var openRequestCount: Int { requestOwner.count }

    /// Every live claim not yet granted, as (client, the client's own claim id), for a shutdown that fails them.
    public func pendingClaims() -> [(ClientID, ClaimID)] {
        arbiter.snapshot().claims.filter { $0.phase != .granted }.compactMap { claim in
            claimOwner[claim.request.id].map { ($0.0, ClaimID($0.1)) }
        }
    }

    /// The clients connected now.
    public var clients: [ClientInfo] { sessions.values.map(\.info).sorted { $0.id < $1.id } }

    /// Handles one event from `client`, written in the client's own ids.
    ///
    /// - Throws: ``Refusal`` when the event breaks a limit or reuses a live id; the arbiter has not seen it.
    public func handle(_ event: ArbiterEvent, from client: ClientID) throws(Refusal) -> Routed {
        // Taken out of the table while it changes, so that its dictionaries are not copied on every insertion.
        guard var session = sessions.removeValue(forKey: client) else { return Routed() }
        defer { if sessions[client] == nil { sessions[client] = session } }
        let global: ArbiterEvent
        var finished: ClaimID?
        var dropped: [RequestID] = []
        switch event {
        case .clientConnected, .clientDisconnected, .clientClosed, .timerFired, .fileSystemChanged, .hostGate:
            return Routed()  // Not a client's to send.
        case .leaseReturned(let lease, _, let running):
            // The running claims become this client's claims, numbered by it, as a RequestClaim's would.
            var mapped: [ClaimRequest] = []
            var seen: Set<UInt64> = []
            for request in running {
                let local = request.id.rawValue
                guard session.claims[local] == nil, seen.insert(local).inserted else {
                    throw .duplicateID("claim id \(local)")
                }
                guard session.claims.count + seen.count <= maximumClaims else {
                    throw .tooManyClaims(limit: maximumClaims)
                }
            }
            for var request in running {
                let local = request.id.rawValue
                let id = ClaimID(newGlobal())
                session.claims[local] = id
                claimOwner[id] = (client, local)
                request.id = id
                request.client = client
                request.isHeld = true
                request.filePresenter = request.filePresenter.flatMap { session.presenters[$0.rawValue] }
                request.fromPresenterQueue = request.fromPresenterQueue.flatMap { session.presenters[$0.rawValue] }
                mapped.append(request)
            }
            global = .leaseReturned(lease, client: client, running: mapped)
        case .presenterAdded(var registration):
            let local = registration.id.rawValue
            guard session.presenters[local] == nil else { throw .duplicateID("presenter id \(local)") }
            guard session.presenters.count < maximumPresenters else {
                throw .tooManyPresenters(limit: maximumPresenters)
            }
            let id = PresenterID(newGlobal())
            session.presenters[local] = id
            presenterOwner[id] = (client, local)
            registration.id = id
            registration.client = client
            global = .presenterAdded(registration)
        case .presenterRemoved(let local):
            guard let id = session.presenters.removeValue(forKey: local.rawValue) else { return Routed() }
            presenterOwner[id] = nil
            if !relayed.isEmpty {
                for (request, presenter) in relayed where presenter == id {
                    relayed[request] = nil
                    requestOwner[request] = nil
                    session.requests.remove(request)
                    dropped.append(request)
                }
            }
            global = .presenterRemoved(id)
        case .presenterURLChanged(let local, let path):
            guard let id = session.presenters[local.rawValue] else { return Routed() }
            global = .presenterURLChanged(id, to: path)
        case .claimRequested(var request):
            let local = request.id.rawValue
            guard session.claims[local] == nil else { throw .duplicateID("claim id \(local)") }
            guard session.claims.count < maximumClaims else { throw .tooManyClaims(limit: maximumClaims) }
            let id = ClaimID(newGlobal())
            session.claims[local] = id
            claimOwner[id] = (client, local)
            request.id = id
            request.client = client
            request.filePresenter = request.filePresenter.flatMap { session.presenters[$0.rawValue] }
            request.fromPresenterQueue = request.fromPresenterQueue.flatMap { session.presenters[$0.rawValue] }
            global = .claimRequested(request)
        case .claimFinished(let local, let created, var outcome):
            guard let id = session.claims[local.rawValue] else { return Routed() }
            finished = id
            // No end later than now: a client's clock read after its write is earlier on this host, and an end in
            // the future would keep the write's echo record waiting for the watcher (and take later changes for
            // the write) until the clock got there.
            if let endedAt = outcome?.endedAt { outcome?.endedAt = min(endedAt, ChangeTimes.now) }
            global = .claimFinished(id, created: created, outcome: outcome)
        case .coordinatorCancelled(_, let local):
            global = .coordinatorCancelled(client, local)
        case .claimCancelled(let local):
            guard let id = session.claims[local.rawValue] else { return Routed() }
            global = .claimCancelled(id)
        case .preparationReturned(let local):
            guard let id = session.claims[local.rawValue] else { return Routed() }
            global = .preparationReturned(id)
        case .presenterReplied(let request, let reply):
            guard requestOwner[request] == client else { return Routed() }  // Not this client's to answer.
            // Answered: a second reply is not this client's to send either (the arbiter ignores one anyway).
            requestOwner[request] = nil
            session.requests.remove(request)
            if relayed.removeValue(forKey: request) != nil {
                sessions[client] = session
                var routed = Routed()
                routed.relayReplies = [(request, reply)]
                return routed
            }
            global = .presenterReplied(request, reply)
        case .itemMoved(let local, let from, let to, let fromName):
            guard let id = session.claims[local.rawValue] else { return Routed() }
            global = .itemMoved(id, from: from, to: to, fromName: fromName)
        case .versionChanged(let local, let path, let change):
            guard let id = session.claims[local.rawValue] else { return Routed() }
            global = .versionChanged(id, path, change)
        }
        sessions[client] = session
        var routed = route(arbiter.handle(global, at: now()))
        routed.relayDropped = dropped
        if case .presenterAdded(let registration) = global, let path = registration.path,
            let since = registration.registeredAt
        {
            routed.registered = (registration.id, path, since, registration.changeTimeAtRegistration)
        }
        switch global {
        case .presenterAdded(let registration): routed.presenterChanges.append(.added(registration))
        case .presenterRemoved(let id): routed.presenterChanges.append(.removed(id, client: client))
        case .presenterURLChanged(let id, let path):
            routed.presenterChanges.append(.moved(id, client: client, to: path))
        default: break
        }
        if let finished, arbiter.phase(of: finished) == nil,
            let (owner, local) = claimOwner.removeValue(forKey: finished)
        {
            sessions[owner]?.claims[local] = nil
        }
        return routed
    }

    /// Feeds a batch of file-system events from the watcher (issue 13), with the state of their items when read, and
    /// how far the watcher has read (``ArbiterEvent/fileSystemChanged(_:observed:readAt:drainedAt:)``).
    public func fileSystemChanged(
        _ events: [FileSystemEvent],
        observed: [ItemPath: ItemStamp] = [:],
        readAt: Int64? = nil,
        drainedAt: Int64? = nil
    ) -> Routed {
        route(
            arbiter.handle(
                .fileSystemChanged(events, observed: observed, readAt: readAt, drainedAt: drainedAt),
                at: now()
            )
        )
    }

    /// Feeds a timer that fired.
    public func timerFired(_ timer: TimerID) -> Routed {
        route(arbiter.handle(.timerFired(timer), at: now()))
    }

    /// What the cluster adapter says of one shared folder (``ArbiterEvent/hostGate(_:_:)``, issue 40).
    public func hostGate(_ folder: ItemPath, _ command: HostGateCommand) -> Routed {
        route(arbiter.handle(.hostGate(folder, command), at: now()))
    }

    /// The leases at, under or above `path` recalled at once (``Arbiter/recallLeasesAtOnce(around:)``).
    public func recallLeasesAtOnce(around path: ItemPath) -> Routed {
        route(arbiter.recallLeasesAtOnce(around: path))
    }

    /// No lease at, under or above `path` from now on, and those there recalled (``Arbiter/excludeLeases(around:)``).
    public func excludeLeases(around path: ItemPath) -> Routed {
        route(arbiter.excludeLeases(around: path))
    }

    /// Translates effects to each client's ids, and forgets claims that failed.
    func route(_ effects: [ArbiterEffect]) -> Routed {
        var routed = Routed()
        var order: [ClientID] = []
        var buckets: [ClientID: [ArbiterEffect]] = [:]
        func append(_ effect: ArbiterEffect, to client: ClientID) {
            if buckets[client] == nil { order.append(client) }
            buckets[client, default: []].append(effect)
        }
        for effect in effects {
            switch effect {
            case .grant(let id, let client, let paths):
                guard let (owner, local) = claimOwner[id], owner == client else { continue }
                append(.grant(ClaimID(local), client: client, paths: paths), to: client)
            case .fail(let id, let client, let failure):
                guard let (owner, local) = claimOwner.removeValue(forKey: id), owner == client else { continue }
                sessions[client]?.claims[local] = nil
                var localFailure = failure
                if case .presenterError(let error, let presenter) = failure {
                    // Another client's presenter id means nothing to this client: it is left out.
                    let own = presenter.flatMap { presenterOwner[$0] }.flatMap {
                        $0.0 == client ? PresenterID($0.1) : nil
                    }
                    localFailure = .presenterError(error, presenter: own)
                }
                append(.fail(ClaimID(local), client: client, localFailure), to: client)
            case .message(var message):
                guard let (owner, local) = presenterOwner[message.presenter], owner == message.client else { continue }
                if let request = message.request {
                    requestOwner[request] = owner
                    sessions[owner]?.requests.insert(request)
                }
                message.presenter = PresenterID(local)
                message.claim = message.claim.flatMap { claim in
                    claimOwner[claim].flatMap { $0.0 == owner ? ClaimID($0.1) : nil }
                }
                append(.message(message), to: owner)
            case .startTimer, .cancelTimer, .log, .watch, .unwatch, .fileWithOtherNamesWritten, .hostGateWanted,
                .hostGateDrained, .drainWatcher:
                routed.host.append(effect)
            case .grantLease(_, let client, _), .recallLease(_, let client):
                // Lease ids are the daemon's, the same for every client (docs/PROTOCOL.md section 10).
                guard sessions[client] != nil else { continue }
                append(effect, to: client)
            case .leaseDropped:
                continue  // Its holder is gone: nobody to tell.
            case .claimInsideLease(let id, let client, let lease):
                // The claim is over here: its client decides it in its lease, under its own id.
                guard let (owner, local) = claimOwner.removeValue(forKey: id), owner == client else { continue }
                sessions[client]?.claims[local] = nil
                append(.claimInsideLease(ClaimID(local), client: client, lease: lease), to: client)
            case .watchUnavailable(let presenter, let client, let directory, let reason):
                guard let (owner, local) = presenterOwner[presenter], owner == client else { continue }
                append(
                    .watchUnavailable(PresenterID(local), client: client, directory: directory, reason: reason),
                    to: owner
                )
            case .watchAvailable(let presenter, let client, let directory):
                guard let (owner, local) = presenterOwner[presenter], owner == client else { continue }
                append(.watchAvailable(PresenterID(local), client: client, directory: directory), to: owner)
            }
        }
        routed.perClient = order.map { ($0, buckets[$0]!) }
        return routed
    }
}

@available(*, unavailable)
extension SessionRouter: Sendable {}
