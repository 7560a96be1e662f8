import Dispatch
import FCCore
import FCProtocol
import FCSystem
import FCToolkit
import Foundation
import Logging
import Synchronization

/// A client of file coordination: the side of it that lives in this process. It composes four parts, each of its
/// own file and lock, and is the delegate of the transports they choose:
///
/// - ``ConnectionManager``: which arbiter (the daemon, or in process), connecting, reconnecting, probing.
/// - ``PresenterRegistry``: the presenters, their ids and serial queues, their errors and reacquirers.
/// - ``ClaimTable``: the claims between request and finish, and the version store calls waiting for replies.
/// - ``LeaseTable``: the leases the daemon granted, each deciding in process the claims inside its subtree.
///
/// ``shared`` is the process's client, configured from the environment; tests make clients of their own bound to a
/// daemon's socket or to an in-process arbiter of their own (``init(policy:logger:)``; docs/ARCHITECTURE.md §8).
///
/// - Important: Thread-safe. No lock is held while user code (presenter callbacks, accessors) runs or while a
///   transport is called; ``receive(_:)`` runs on the transport's reading thread and never blocks.
final class CoordinationClient: Sendable {
    /// The process's client.
    static let shared = CoordinationClient(policy: .fromEnvironment(ProcessInfo.processInfo.environment))

    /// This client's id for the in-process arbiter (the daemon numbers its connections itself).
    let clientID: ClientID
    /// Where the client's coordinator, claim and presenter ids come from: a range of its own per client id, so that
    /// clients sharing an in-process arbiter never use the same id.
    let ids: IDSource
    let presenters: PresenterRegistry
    let claims: ClaimTable
    let connection: ConnectionManager
    /// The leases this client holds, which decide the claims inside them in process (issue 23).
    let leases: LeaseTable
    /// The file progress this client publishes and subscribes to, and its live queries (issue 44).
    let progress: ProgressCenter
    let queries = MetadataQueryRegistry()
    /// Where this client logs: every log line of its calls goes here (read at each use).
    let logger: @Sendable () -> Logger
    /// How long a batch of `prepare(forReadingItemsAt:…)` may wait for its completion handler after its block
    /// returned before a warning names it (``PreparedBatch``); tests shorten it.
    var batchHandlerWarningDelay: Duration {
        get { batchHandlerWarningDelayStorage.withLock { $0 } }
        set { batchHandlerWarningDelayStorage.withLock { $0 = newValue } }
    }
    private let batchHandlerWarningDelayStorage = Locked(Duration.seconds(30))
    /// Makes a presenter's registration and a new transport's list of presenters one step each, so that every
    /// presenter is sent to a transport exactly once (the daemon refuses a presenter id twice).
    private let registering = Locked(())

    /// A client that reaches its arbiter as `policy` says, and logs through `logger` (read at each use). `id` must
    /// differ between clients that share an in-process arbiter.
    init(
        policy: ConnectionPolicy,
        id: UInt64 = 1,
        logger: @escaping @Sendable () -> Logger = { FileCoordinationLogging.logger }
    ) {
        self.clientID = ClientID(id)
        self.ids = IDSource(after: (max(id, 1) - 1) << 40)
        self.logger = logger
        self.presenters = PresenterRegistry(client: clientID, ids: ids)
        self.claims = ClaimTable()
        self.connection = ConnectionManager(policy: policy, clientID: clientID, logger: logger)
        self.leases = LeaseTable(
            enabled: policy.answersRecalls,
            idleReturn: policy.leaseIdleReturn,
            claims: claims,
            logger: logger
        )
        self.progress = ProgressCenter(ids: ids, connection: connection, logger: logger)
        connection.owner = self
        leases.owner = self
        ForkWatch.start()
    }

    /// What a call made in a child that `fork()` made of this process gets (docs/SEMANTICS.md §7): the child shares
    /// this process's connection to the daemon and has its claims and leases in memory, none of them its own. Until
    /// stop 68 such a child decided claims in its parent's leases, and its finishes ended its parent's claims.
    static let forkedChildError = FileCoordinationError(
        .invalidRequest,
        "File coordination cannot be used in a child process that fork made of a process that used it (the child "
            + "shares its parent's connection to filecoordd and holds none of its claims); a program the child runs "
            + "with exec may use it from the start."
    )

    func newID() -> UInt64 { ids.next() }

    /// ``submitClaim(_:waiter:route:)`` with no transport known yet.
    @discardableResult
    func submitClaim(_ request: ClaimRequest, waiter: ClaimWaiter) -> ClaimWait {
        submitClaim(request, waiter: waiter, route: nil)
    }

    /// Sends a claim, registered with its waiter (``register(_:for:)``), to the arbiter: through `route`, the
    /// transport in charge when it was registered, else connecting first if needed (starting the daemon); the claim
    /// fails with the reason if no arbiter can be had.
    @discardableResult
    func submitClaim(_ request: ClaimRequest, waiter: ClaimWaiter, route: (any ArbiterTransport)?) -> ClaimWait {
        if ForkWatch.isForkedChild {
            fail(request.id, with: Self.forkedChildError)
            return .onWaiter
        }
        // Inside a lease held and not recalled: decided here, with no round trip (issue 23).
        if leases.heldCount.load(ordering: .acquiring) > 0, let outcomes = leases.submit(request) {
            deliver(outcomes)
            return .onWaiter
        }
        let transport: any ArbiterTransport
        if let route {
            transport = route
        } else {
            switch connection.transport() {
            case .success(let connected): transport = connected
            case .failure(let error):
                fail(request.id, with: error)
                return .onWaiter
            }
        }
        // A daemon that does not know `nonblocking` would let the claim wait: it is not sent (issue 43).
        if request.nonblocking, let daemon = transport as? DaemonTransport,
            daemon.daemonRevision < ProtocolVersion.nonblockingRevision
        {
            let message =
                "filecoordd speaks protocol revision \(daemon.daemonRevision), which cannot refuse a claim that "
                + "would wait (revision \(ProtocolVersion.nonblockingRevision) or later can); restart filecoordd "
                + "from this release."
            fail(request.id, with: FileCoordinationError(.invalidRequest, message))
            return .onWaiter
        }
        return transport.submitClaim(request, waiter: waiter)
    }

    /// A move reported inside `claim` (before its message goes): the held claim holds the new location too, for a
    /// declaration to come (a lease's return, a new daemon), noted before a recall can take the claim's lease. When
    /// the move takes an item out of the lease that decided the claim, the lease is returned with its running claims
    /// declared, so that the move then goes to the daemon, which holds the new location for the claim.
    private func reportMove(of claim: ClaimID, from: ItemPath, to: ItemPath, preferring transport: DaemonTransport?) {
        claims.moved(claim, from: from, to: to)
        guard let lease = leases.leaseLeft(by: claim, movingTo: to),
            let daemon = (transport ?? connection.current) as? DaemonTransport, daemon.serial == lease.connection,
            !daemon.isLost
        else { return }
        recall(lease.lease, on: daemon)
    }

    /// Sends a message to the arbiter, through a live transport only: without one it belongs to a connection that
    /// is gone (its claims and presenters went with it), and the next connection registers every presenter again.
    ///
    /// `preferring`: the daemon connection the message's claim was sent on, used while it lasts without asking the
    /// connection manager (a live daemon connection is never replaced; once lost, the message goes to the new one).
    func send(_ message: ClientMessage, preferring transport: DaemonTransport? = nil) {
        // A forked child's messages are about its parent's claims and presenters: they must not reach the daemon.
        guard !ForkWatch.isForkedChild else { return }
        // A claim that ends is no longer held.
        if case .finishClaim(let claim, _, _) = message { claims.finished(claim) }
        if case .itemMoved(let claim, let from, let to, _) = message {
            reportMove(of: claim, from: from, to: to, preferring: transport)
        }
        defer {
            // Again once the lease heard of it: a claim a lease granted at once is entered as held only then.
            if case .itemMoved(let claim, let from, let to, _) = message { claims.moved(claim, from: from, to: to) }
        }
        if leases.heldCount.load(ordering: .acquiring) > 0, let outcomes = leases.handle(message) {
            deliver(outcomes)
            // A coordinator's cancel reaches its claims at the daemon too.
            guard case .cancelCoordinator = message else { return }
        }
        // A message of a claim being declared to a new connection goes after the declaration (``connected(to:)``).
        if claims.holdBack(message) { return }
        if let transport, !transport.isLost {
            transport.send(message)
            return
        }
        connection.current?.send(message)
    }

    /// Where version store calls go (issue 15): the daemon (connecting first, as a claim does), `nil` when this
    /// client coordinates in process, or the error that leaves no arbiter to ask.
    func versionStoreAccess() -> Result<DaemonVersionStoreAccess?, FileCoordinationError> {
        connection.transport().map { transport in
            (transport as? DaemonTransport).map {
                DaemonVersionStoreAccess(transport: $0, table: claims.versionRequests) { [connection] in
                    try? connection.transport().get() as? DaemonTransport
                }
            }
        }
    }

    /// The in-process arbiter's state, for tests (`nil` when a daemon arbitrates).
    func snapshot() -> ArbiterSnapshot? { connection.snapshot() }

    // MARK: Presenters

    func addPresenter(_ presenter: any NSFilePresenter) {
        guard !ForkWatch.isForkedChild else {
            logger().error("a presenter added in a forked child is not registered: \(Self.forkedChildError.message)")
            return
        }
        // Connect first: a new connection registers the presenters already known, and this one must not be among
        // them as well as sent below. Without an arbiter it is kept, and registered when one is reached.
        if case .failure = connection.transport(retrying: false) { connection.startReconnecting() }
        let resolved = presenter.presentedItemURL.flatMap { try? URLMapping.canonical($0, followingFinalLink: true) }
        // The presenter's properties are the app's code: read outside the locks.
        let entry = PresenterRegistry.Entry(
            presenter: presenter,
            path: resolved?.key,
            identity: resolved?.identity.map(ItemIdentity.init),
            hasOtherNames: resolved?.hasOtherNames ?? false
        )
        let added = registering.withLock {
            // A transport put in charge before this registers it here; one put in charge after lists it itself.
            presenters.add(entry).map { ($0, connection.current) }
        }
        guard let (registration, transport) = added else { return }
        transport?.send(.addPresenter(registration))
    }

    func removePresenter(_ presenter: any NSFilePresenter) {
        if let id = presenters.remove(presenter) { send(.removePresenter(id)) }
    }

    var allPresenters: [any NSFilePresenter] { presenters.all }

    func presenterID(of presenter: any NSFilePresenter) -> PresenterID? { presenters.id(of: presenter) }

    /// The presenter whose serial queue the calling thread holds, if any, and the callback of it that runs here:
    /// the presenter whose callback runs here, else a registered presenter whose queue is the one running this
    /// code (no callback). Code on the main thread or in a block of the main dispatch queue counts as running
    /// `OperationQueue.main` (with `dispatchMain()` on Linux, the main queue's blocks run on another thread). A
    /// coordinated call made here keeps that queue, and the presenters on it, from answering until it returns: the
    /// deadlock detector must know, and its report names the callback (docs/SEMANTICS.md §6).
    func presenterQueueHeldHere() -> (presenter: PresenterID, callback: PresenterCallbacks?)? {
        if let running = ThreadContext.currentCallback { return (running.presenter, running.callback) }
        // No presenter registered, no queue held: finding the queue (`Thread.isMainThread` calls `getpid`,
        // `OperationQueue.current` reads thread-specific data) was 5% of a leased read.
        guard presenters.registeredCount.load(ordering: .acquiring) > 0 else { return nil }
        let queue = Self.isOnMainQueue ? OperationQueue.main : OperationQueue.current
        guard let queue else { return nil }
        return presenters.presenter(runningOn: queue).map { ($0, nil) }
    }

    /// Marks the main dispatch queue, so that its blocks can be recognised on whichever thread runs them.
    private static let mainQueueKey: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    private static var isOnMainQueue: Bool {
        Thread.isMainThread || DispatchQueue.getSpecific(key: mainQueueKey) == true
    }

    /// Reads a presenter's URL again and tells the arbiter if it changed (after a move it was told of, or when a
    /// nil URL became real at the end of a coordinated write made on its behalf).
    func refreshURL(of id: PresenterID) {
        // The presenter's URL is read outside the lock: it is the app's code.
        guard let presenter = presenters.entry(id)?.presenter else { return }
        let path = presenter.presentedItemURL.flatMap { try? URLMapping.canonicalPath($0) }
        if presenters.update(id, path: path) { send(.presenterURLChanged(id, to: path)) }
    }

    func storeReacquirer(_ reacquirer: @escaping @Sendable () -> Void, for request: RequestID) {
        presenters.storeReacquirer(reacquirer, for: request)
    }

    func takeReacquirer(_ request: RequestID) -> (@Sendable () -> Void)? {
        presenters.takeReacquirer(request)
    }

    func recordPresenterError(_ error: any Error, presenter: PresenterID) {
        presenters.recordError(error, presenter: presenter)
    }

    // MARK: Claims

    /// Registers the waiter of a claim about to be sent, and its request (kept until the claim ends, so that a claim
    /// still held when the daemon crashes can be declared again to the next one); returns the transport in charge,
    /// if any, for ``submitClaim(_:waiter:route:)``.
    @discardableResult
    func register(_ waiter: ClaimWaiter, for request: ClaimRequest) -> (any ArbiterTransport)? {
        claims.register(waiter, for: request)
    }

    func fail(_ claim: ClaimID, with error: any Error) {
        claims.failed(claim)?.resume(.failed(error))
    }

    /// Runs one message on the presenter's queue; a request is answered through the transport, exactly once.
    private func deliver(_ message: PresenterMessage) {
        guard let entry = presenters.entry(message.presenter) else {
            // The presenter was removed after the arbiter sent this: answer for it.
            if let request = message.request { send(.presenterReplied(request, .succeeded)) }
            return
        }
        let presenter = UncheckedPresenter(value: entry.presenter)
        let id = message.presenter
        let subitem = PresenterCallbacks.subitemNotifications.contains(message.kind.callback)
        entry.queue.addOperation { [self] in
            ThreadContext.withCallback(message.kind.callback, of: id) {
                guard subitem else {
                    PresenterDelivery.run(message, on: presenter.value, client: self)
                    return
                }
                let fellBack = ThreadContext.withSubitemDelivery {
                    PresenterDelivery.run(message, on: presenter.value, client: self)
                }
                if fellBack { sendFallbackDidChange(to: entry, id: id) }
            }
        }
    }

    /// The presenter does not implement a subitem method (the protocol's default ran): it hears did change instead,
    /// once for every subitem message queued before that did change runs (docs/SEMANTICS.md §3, issue 37).
    private func sendFallbackDidChange(to entry: PresenterRegistry.Entry, id: PresenterID) {
        guard !entry.fallbackDidChangeQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let presenter = UncheckedPresenter(value: entry.presenter)
        entry.queue.addOperation {
            entry.fallbackDidChangeQueued.store(false, ordering: .releasing)
            ThreadContext.withCallback(.presentedItemDidChange, of: id) { presenter.value.presentedItemDidChange() }
        }
    }
}

/// A presenter carried to its own operation queue. Presenters are not `Sendable`; Apple's contract, which this
/// library keeps, is that their callbacks run on `presentedItemOperationQueue`, which is where this goes.
// @unchecked: the presenter is used only on its own operation queue, where this carries it (Apple's contract).
struct UncheckedPresenter: @unchecked Sendable {
    let value: any NSFilePresenter
}

extension CoordinationClient: ConnectionOwner {
    /// On the transport's reading thread, in the arbiter's order.
    func receive(_ message: InboundMessage) {
        switch message {
        case .granted(let claim, let paths): claims.granted(claim)?.resume(.granted(paths))
        case .failed(let claim, let error): fail(claim, with: error)
        case .presenter(let message): deliver(message)
        case .versionReply(let reply): claims.versionRequests.complete(reply)
        case .leaseGranted(let lease, let subtree, let transport):
            leases.grant(lease, subtree: subtree, connection: transport.serial) { transport.isLost }
            // The listener sweeps for idle leases while one is held: it must know before it sleeps again.
            transport.wakeListener()
        case .leaseRecalled(let lease, let transport): recall(lease, on: transport)
        case .claimInsideLease(let claim, let lease, let transport): decideInLease(claim, lease: lease, on: transport)
        case .progress(let news, let transport): progress.receive(news, on: transport)
        case .queryItems(let items, let transport): queries.receive(items, on: transport)
        }
    }

    func takePresenterError(of presenter: PresenterID) -> (any Error)? {
        presenters.takeError(of: presenter)
    }

    /// Every waiting call fails (never hangs); reacquirers of the lost daemon's requests are dropped; the next call
    /// reconnects, starting the daemon if needed, and registers this process's presenters again (docs/SEMANTICS.md §7).
    func transportLost(_ error: FileCoordinationError, from lost: DaemonTransport) {
        // Its leases went with it (the daemon dropped them): nothing more is decided in process; claims granted in
        // them that still run are held, and declared to the next daemon below (connected(to:install:)). Only its
        // own: a lease a newer connection's daemon granted meanwhile stays.
        // A lease's holder reconnects even with nothing else to do: the daemon keeps a lease whose connection it
        // closed, and a stopped daemon's successor what it held, until this process says it declared everything.
        let heldLeases = leases.holdsLeases(on: lost.serial)
        leases.dropAll(of: lost.serial)
        // The connection is let go before the calls on it fail: a version store listing woken below asks again on
        // the next connection, and found the lost one still in charge (it answered nil after a restart, CI 73).
        let inCharge = connection.lose(lost)
        claims.versionRequests.transportLost(lost)
        progress.transportLost(lost)
        queries.transportLost(lost)
        // A probe's connection that was never put in charge: nothing else depended on it.
        guard inCharge else { return }
        claims.stopRouting(to: lost)
        // The transport is cleared first: a claim registered after the waiters are taken below finds no transport
        // and reconnects, and one that found the lost transport fails there (DaemonTransport.submitClaim).
        presenters.dropReacquirers()
        let waiting = claims.removeAllWaiting()
        logger().warning("\(error.message)")
        for waiter in waiting { waiter.resume(.failed(error)) }
        // Presenters must not miss what other processes do meanwhile: reconnect now rather than at the next call.
        if needsConnection || heldLeases { connection.startReconnecting() }
    }

    /// The daemon stopped answering a keepalive (issue 28): the calls waiting on `transport` fail with `error`, each
    /// claim given up (`FinishClaim`, which the daemon reads if it ever answers again); the connection, and with it
    /// the presenters and the claims held, stays. Later calls use it again, and work once the daemon answers.
    func daemonStoppedAnswering(_ error: FileCoordinationError, on transport: DaemonTransport) {
        claims.versionRequests.fail(on: transport, because: error.message)
        guard (connection.current as? DaemonTransport) === transport else { return }
        let abandoned = claims.removeAllWaitingClaims()
        guard !abandoned.isEmpty else { return }
        logger().error("\(error.message)", metadata: ["calls.failed": "\(abandoned.count)"])
        for (claim, waiter) in abandoned {
            transport.abandon(claim)
            waiter.resume(.failed(error))
        }
    }

    var needsConnection: Bool {
        !presenters.isEmpty || claims.holdsAny || progress.needsConnection || queries.needsConnection
    }

    /// Registers every presenter of this client with `transport`, just put in charge, and declares again the
    /// claims whose accessors still run: a new daemon (after a crash) knew nothing of them.
    func connected(to transport: any ArbiterTransport, install: () -> Void) {
        // The claims held are read before the transport is put in charge: a claim granted on it once it is (another
        // thread's, while the presenters below are registered) is the new daemon's already, and declaring it too
        // made the daemon close the connection ("claim id reused while live"; CI, stop 68).
        let (registrations, holding) = registering.withLock {
            let holding = claims.heldRequestsToDeclare()
            install()
            claims.route(to: transport)
            return (presenters.registrations, holding)
        }
        for registration in registrations { transport.send(.addPresenter(registration)) }
        if let daemon = transport as? DaemonTransport {
            progress.connected(to: daemon)
            queries.connected(to: daemon)
        }
        for request in holding {
            var declared = request
            declared.isHeld = true
            declared.timeout = nil
            transport.send(.declareHeldClaim(declared))
        }
        // The messages of these claims sent meanwhile were held back (a move sent before, the new daemon would have
        // ignored it, not knowing the claim yet): sent now, once each, in order, until none is left.
        while let held = claims.heldBackWhileDeclaring() {
            for message in held { transport.send(message) }
        }
        // A claim that finished while it was being declared may have sent its finish first: send it again (a second
        // finish of a claim the daemon no longer has is ignored).
        for request in claims.finished(among: holding) { transport.send(.finishClaim(request.id, created: [])) }
        // Everything held on an earlier connection is declared: what the daemon kept for this process goes
        // (docs/PROTOCOL.md "A daemon that restarts").
        (transport as? DaemonTransport)?.sayHeldDeclared()
    }
}
