import FCCore
import FCProtocol
import FCSystem
import FCToolkit
import Foundation
import Logging
import NIOCore
import SystemPackage

/// The arbiter as the daemon runs it: the ``SessionRouter`` and its arbiter, composed with the daemon's parts, each
/// in `Host/`: the live connections (``ConnectionRegistry``), the recovery grace (``RecoveryGate``), the timers
/// (``ArbiterTimers``), the flush batching (``FlushBatcher``) and each client's document-portal state
/// (``DocumentPortalClients``), all on one event loop (docs/ARCHITECTURE.md §9, "One loop": no locks on the hot
/// path).
///
/// - Important: Every method must be called on ``loop``.
final class ArbiterHost {
    let loop: any EventLoop
    let router: SessionRouter
    let configuration: DaemonConfiguration
    let logger: Logger
    /// The version store (issue 15), served off the loop.
    let versionStore: VersionStoreService
    /// The live connections, and what was read about each client when it connected.
    var connections: ConnectionRegistry
    /// Connections open now, those still in their handshake included (``DaemonConfiguration/maximumConnections``).
    var openConnections: Int { connections.openConnections }
    /// The recovery grace after a crash of the previous daemon (``startRecovery(for:because:marker:)``).
    let recovery: RecoveryGate
    /// The arbiter's timers: one NIO timer, for the earliest (issue 12).
    let timers: ArbiterTimers
    /// The connections written to in this loop pass, each flushed once at its end (``flushPending()``, issue 12).
    let flushes: FlushBatcher
    /// The connections whose queue is past the bound, each with the check that judges it (``judgeReading(on:close:)``).
    var readingChecks: [ObjectIdentifier: UInt64] = [:]
    var readingCheckCount: UInt64 = 0
    /// Frames flushed and flushes made (for tests and dumps: frames per flush is the batching).
    var flushStatistics: (frames: Int, flushes: Int) { flushes.statistics }
    let encoder: FrameEncoder
    private var shuttingDown = false
    /// Whether, when the daemon shut down (``shutDown()``), a client held a granted claim or a lease, or the daemon
    /// was still in its own recovery grace: such a client declares its running claims to the next daemon only once
    /// it has read the end of its connection and reconnected (a lease's holder may even decide claims in process
    /// until then), so the next daemon starts with the recovery grace (``DaemonService``'s marker).
    private(set) var holdersAtShutDown = false
    /// What the daemon hands on to the next one when it shuts down with holders (``handOn()``).
    private(set) var handedOn: HandedOnHolders?
    /// What is kept for processes whose connection ended until they declare or exit (ArbiterHost+Handover.swift).
    let handover = HeldHandover()
    var handoverCheckScheduled = false
    /// The marker of a stopped daemon whose holders are held for (``takeOver(_:marker:)``), until all are let go.
    var handoverMarker: String?
    /// Document-portal paths to the host files they export, for every client (issue 26).
    let documentPortal: DocumentPortalMapping
    /// Each client's portal spellings and events that wait for the portal (``waitsForPortal(_:inDaemonPaths:from:)``).
    let portalClients: DocumentPortalClients
    /// File progress published and subscribed to (issue 44; Progress/ArbiterHost+Progress.swift).
    let progress = ProgressBoard()
    /// Live queries of folder trees (issue 44; Queries/ArbiterHost+Queries.swift): the service, each client's live
    /// queries by id (with the result count each last told), and the folders watched for queries (how many trees want each) beside those the arbiter wants.
    var queries: QueryService?
    /// Where the watcher's thread finds ``queries`` (``QueryRelay``).
    let queryRelay = QueryRelay()
    var liveQueries: [ClientID: [UInt64: LiveQuery]] = [:]
    var queryWatches: [ItemPath: Int] = [:]
    var arbiterWatches: Set<ItemPath> = []
    /// Query frames waiting for their client to take the one before (``sendQueryFrame(_:to:)``).
    var queryOutbox: [ClientID: (inFlight: Bool, frames: [QueuedQueryFrame])] = [:]
    /// The file-system watcher the arbiter's watch effects go to, and its last status (ArbiterHost+Watching.swift).
    var watcher: (any FileSystemWatcher)?
    var watcherStatus: WatcherStatus?
    /// The directories the watcher watches now, as its reports said.
    var watchedDirectories: Set<ItemPath> = []
    /// The cluster adapter, when the daemon shares folders with other hosts (issue 40; ClusterAdapter.swift).
    var cluster: (any ClusterAdapter)?
    /// The clients that stand in for other hosts' presenters (issue 41; ``ClusterGates/connectRemoteHost(_:)``):
    /// their effects go to the cluster adapter, not to a connection.
    var remoteClients: Set<ClientID> = []
    /// The lease counters of clients that keep them instead of answering recalls (the preload library; issue 42).
    let leaseCounters: LeaseCounterBoard
    /// The case folding of paths from clients that leave it to the daemon (the preload library), made when the first
    /// such client connects (``ClientNameFolding``); events wait at ``mountTypes`` while it needs types read.
    private(set) lazy var nameFolding = ClientNameFolding(configuration)
    let mountTypes: MountTypeGate

    init(loop: any EventLoop, configuration: DaemonConfiguration, logger: Logger) {
        self.loop = loop
        self.configuration = configuration
        self.logger = logger
        self.encoder = FrameEncoder(maximumFrameSize: configuration.maximumFrameSize)
        self.documentPortal = DocumentPortalMapping(
            portal: configuration.mapsDocumentPortalPaths
                ? configuration.documentPortal ?? .sessionBus(timeout: DocumentPortalMapping.timeout) : .none,
            logger: logger
        )
        self.portalClients = DocumentPortalClients(
            loop: loop,
            lookups: configuration.portalLookups ?? { work in DocumentPortalMapping.lookupQueue.async(execute: work) }
        )
        self.connections = ConnectionRegistry(maximumConnections: configuration.maximumConnections)
        self.recovery = RecoveryGate(loop: loop, logger: logger)
        self.mountTypes = MountTypeGate(loop: loop, configuration: configuration)
        self.timers = ArbiterTimers(loop: loop)
        self.flushes = FlushBatcher(loop: loop)
        self.leaseCounters = LeaseCounterBoard(socketPath: configuration.socketPath)
        self.versionStore = VersionStoreService(
            directory: configuration.versionStoreDirectory,
            retention: configuration.versionRetention,
            logger: logger,
            answersInline: configuration.runsOffLoopWorkInline,
            // What a client reads: its decoder takes the default (it does not read HelloReply.limits).
            maximumReplySize: min(configuration.maximumFrameSize, ProtocolLimits.defaultMaximumFrameSize)
        )
        self.router = SessionRouter(
            configuration: configuration.arbiterConfiguration,
            maximumClaimsPerClient: configuration.maximumClaimsPerClient,
            maximumPresentersPerClient: configuration.maximumPresentersPerClient
        )
        timers.willFire = { [weak self] in self?.cluster?.checkFence() }
        timers.fire = { [weak self] timer in
            guard let self else { return }
            self.apply(self.router.timerFired(timer))
        }
    }

    /// Counts a new connection; `false` when the daemon already serves as many as it may.
    func connectionOpened() -> Bool {
        loop.preconditionInEventLoop()
        return connections.opened()
    }

    /// Counts a connection that closed (one ``connectionOpened()`` accepted).
    func connectionClosed() {
        loop.preconditionInEventLoop()
        connections.closedOne()
    }

    /// A client finished its handshake. `leaseCounterHold`: the client keeps lease counters (`Hello.lease_counters`)
    /// and may hold a recalled lease that long (``LeaseCounterBoard``). `foldsNames`: the client leaves the case
    /// folding of its paths to the daemon (`Hello.daemon_folds_names`, ``ClientNameFolding``).
    func accept(
        _ channel: any Channel,
        pid: Int32,
        name: String,
        answersRecalls: Bool = false,
        leaseCounterHold: Duration? = nil,
        foldsNames: Bool = false
    ) -> ClientID {
        loop.preconditionInEventLoop()
        if foldsNames { _ = nameFolding }
        // Its events would wait behind those held: not read meanwhile (``refreshNameFolding(holding:from:)``).
        if mountTypes.isHolding { _ = channel.setOption(ChannelOptions.autoRead, value: false) }
        let namespace = MountNamespaceTranslation.of(pid: pid)
        // A client in another mount namespace gets no lease: a lease is a subtree in the daemon's paths, which the
        // client's library compares with its own, so it would decide in process claims on paths that the daemon
        // maps elsewhere (docs/SEMANTICS.md §13), or hand back to the daemon, forever, claims the daemon maps in.
        let counting = leaseCounterHold != nil && namespace == nil
        // A client that keeps counters is the preload library, whose claims all have its process tree's purpose.
        let client = router.connect(
            pid: pid,
            name: name,
            answersRecalls: (answersRecalls || counting) && namespace == nil,
            claimsShareOnePurpose: counting
        )
        if counting, let hold = leaseCounterHold { leaseCounters.register(client, pid: pid, maximumHold: hold) }
        connections.add(
            channel,
            for: client,
            arguments: ProcessCommandLine.arguments(of: pid),
            namespace: namespace,
            foldsNames: foldsNames
        )
        discoverDocumentPortal(for: client)
        logger.info(
            "client connected",
            metadata: ["client.id": "\(client.rawValue)", "client.pid": "\(pid)", "client.name": "\(name)"]
        )
        return client
    }

    /// After a crash of the previous daemon, clients whose accessors still run declare their claims again
    /// (`RequestClaim.held`). For `grace`, only those are arbitrated; every other event waits, in order, so that no
    /// new claim is granted before every surviving holder had the time to reconnect and say what it holds, as NFS
    /// lock recovery does. Then the held-back events are handled as if they had just arrived.
    func startRecovery(
        for grace: Duration,
        because reason: String = "the previous filecoordd did not stop cleanly",
        marker: String? = nil
    ) {
        loop.preconditionInEventLoop()
        recovery.start(for: grace, because: reason, marker: marker) { [weak self] events in
            guard let self else { return }
            for (client, event) in events where self.connections[client] != nil { self.receive(event, from: client) }
        }
    }

    /// One event from a client, in its own ids.
    func receive(_ event: ArbiterEvent, from client: ClientID) {
        loop.preconditionInEventLoop()
        // Behind an event that waits for the document portal: in order, after it.
        if portalClients.queueIfWaiting(event, from: client) { return }
        // While the daemon recovers, every event but a claim still held and a lease given back waits, in order.
        if recovery.holdsBack(event, from: client) {
            if recovery.heldBackBytes(of: client) > RecoveryGate.maximumHeldBackBytesPerClient {
                recovery.forget(client)
                close(
                    client,
                    because: ProtocolError(
                        .limitExceeded,
                        "more than \(RecoveryGate.maximumHeldBackBytesPerClient) bytes of messages sent while filecoordd "
                            + "recovers from a crash: the client sends without end"
                    )
                )
            }
            return
        }
        // Behind an event that waits for the types of new mounts: in order, after it.
        if mountTypes.holdsBack(event, from: client) { return }
        if shuttingDown, case .claimRequested(let request) = event {
            send(
                Filecoord_V1_Frame(
                    .claimFailed(
                        Filecoord_V1_ClaimFailed(
                            claim: request.id,
                            reason: .shuttingDown("filecoordd is shutting down; retry when it is back"),
                            message: nil
                        )
                    )
                ),
                to: client
            )
            return
        }
        do {
            // In the daemon's paths once, here: held-back events come through this function again.
            var inDaemonPaths = connections.namespaces[client]?.inbound(event) ?? event
            if connections.anyFoldsNames, event.containsPath(where: { _ in true }) {
                // Any client's: a lease of a folding client is keyed by the table it was granted under.
                guard refreshNameFolding(holding: event, from: client) else { return }
                if connections.foldsNames(client) { inDaemonPaths = nameFolding.inbound(inDaemonPaths) }
            }
            var translated = inDaemonPaths
            if namesDocumentPortalPath(inDaemonPaths) {
                if waitsForPortal(event, inDaemonPaths: inDaemonPaths, from: client) { return }
                translated = mappingDocumentPortalPaths(inDaemonPaths, from: client)
            }
            cluster?.checkFence()
            leaseCounterEvent(translated, from: client)
            apply(try router.handle(translated, from: client))
        } catch {
            switch (error, event) {
            case (.tooManyClaims, .claimRequested(let request)):
                logger.warning("claim refused: \(error)", metadata: ["client.id": "\(client.rawValue)"])
                let failed = Filecoord_V1_ClaimFailed(
                    claim: request.id,
                    reason: .limitExceeded("\(error)"),
                    message: nil
                )
                send(Filecoord_V1_Frame(.claimFailed(failed)), to: client)
            default:
                close(client, because: ProtocolError(.limitExceeded, "\(error)"))
            }
        }
    }

    /// Fails one claim the daemon could not take as sent (an item over a limit, a path that is not absolute),
    /// naming why; the connection and the client's other claims go on.
    func refuse(_ claim: ClaimID, because error: ProtocolError, from client: ClientID) {
        loop.preconditionInEventLoop()
        logger.info("claim refused: \(error)", metadata: ["client.id": "\(client.rawValue)"])
        let reason: ClaimFailedReason =
            error.code == .invalidPath ? .invalidRequest("\(error)") : .limitExceeded("\(error)")
        let failed = Filecoord_V1_ClaimFailed(claim: claim, reason: reason, message: nil)
        send(Filecoord_V1_Frame(.claimFailed(failed)), to: client)
    }

    /// A connection closed: its claims are released and its presenters removed at once (docs/SEMANTICS.md §7). One
    /// the daemon closed itself (``close(_:because:)``) belongs to a process that may live on and, holding leases,
    /// decide claims in them until it reads the end: its leases stay for the recovery grace (§13.5).
    func closed(_ client: ClientID) {
        loop.preconditionInEventLoop()
        guard let closedHere = connections.forget(client) else { return }
        recovery.forget(client)  // What it sent during a recovery grace is handed back to nobody.
        portalClients.forget(client)
        progressClientLeft(client)
        queryClientLeft(client)
        // The arbiter logs the disconnect itself.
        cluster?.checkFence()
        // Kept until its process declares what it holds on a new connection, or exits (ArbiterHost+Handover.swift);
        // the duration is only the arbiter's form for "until the host says".
        apply(router.disconnect(client, keepingLeasesFor: leasesKept(for: client, closedHere: closedHere)))
    }

    /// Sends a protocol error and closes one connection; nothing else is affected.
    func close(_ client: ClientID, because error: ProtocolError) {
        loop.preconditionInEventLoop()
        guard let channel = connections.startClosing(client) else { return }
        logger.warning("closing a connection: \(error)", metadata: ["client.id": "\(client.rawValue)"])
        write(Filecoord_V1_Frame(error), on: channel, for: client)
        // A close drops writes not flushed: what was written for this client goes out first.
        channel.flush()
        channel.close(promise: nil)
    }

    /// Fails every claim that has not been granted with a clear error, and closes every connection.
    func shutDown() {
        loop.preconditionInEventLoop()
        shuttingDown = true
        failClaimsHeldForMountTypes()
        for (lease, client) in leaseCounters.shutDown() {
            // Nothing runs in it: returned, not handed on (its client never declares).
            apply((try? router.handle(.leaseReturned(lease, client: client, running: []), from: client)) ?? .init())
        }
        holdersAtShutDown =
            recovery.isRecovering || !router.arbiter.leaseSnapshots().isEmpty
            || router.arbiter.snapshot().claims.contains { $0.phase == .granted && !$0.request.id.isHostGate }
        if holdersAtShutDown { handedOn = handOn() }
        for (client, claim) in router.pendingClaims() {
            let failed = Filecoord_V1_ClaimFailed(
                claim: claim,
                reason: .shuttingDown("filecoordd is shutting down; the call failed instead of waiting"),
                message: nil
            )
            send(Filecoord_V1_Frame(.claimFailed(failed)), to: client)
        }
        flushPending()
        for channel in connections.allChannels { channel.close(promise: nil) }
        timers.removeAll()
    }

    func apply(_ routed: SessionRouter.Routed) {
        for effect in routed.host {
            switch effect {
            case .startTimer(let timer, let after):
                timers.start(timer, after: after)
            case .cancelTimer(let timer):
                timers.cancel(timer)
            case .log(let record):
                logger.log(record)
            case .watch(let directory):
                // Always passed on: the arbiter asks again for a folder that appeared, and the watcher then adds
                // its watch and scans it (a watch already in place is not added twice).
                arbiterWatches.insert(directory)
                watcher?.watch(directory)
            case .unwatch(let directory):
                if arbiterWatches.remove(directory) != nil, queryWatches[directory] == nil {
                    watcher?.unwatch(directory)
                }
            case .fileWithOtherNamesWritten(let identity):
                watcher?.fileWritten(identity)
            case .drainWatcher:
                drainWatcher()
            case .hostGateWanted(let folder):
                // After this pass: the cluster adapter's answer may feed the arbiter again.
                loop.assumeIsolated().execute { [weak self] in self?.cluster?.claimWaits(in: folder) }
            case .hostGateDrained(let folder):
                loop.assumeIsolated().execute { [weak self] in self?.cluster?.drained(folder) }
            case .grant, .fail, .message, .watchUnavailable, .watchAvailable, .grantLease, .recallLease,
                .leaseDropped, .claimInsideLease:
                break
            }
        }
        if let registered = routed.registered {
            // After the registration's watches: what changed between the registration and them (issue 37).
            watcher?.changedSince(
                registered.since,
                itemChangeTime: registered.changeTime,
                path: registered.path,
                presenter: registered.presenter
            )
        }
        if let cluster {
            if !routed.presenterChanges.isEmpty {
                let local = routed.presenterChanges.filter { change in
                    switch change {
                    case .added(let registration): !remoteClients.contains(registration.client)
                    case .removed(_, let client), .moved(_, let client, _): !remoteClients.contains(client)
                    }
                }
                if !local.isEmpty { cluster.presentersChanged(local) }
            }
            for (request, reply) in routed.relayReplies { cluster.relayReplied(request, reply) }
            for request in routed.relayDropped { cluster.relayReplied(request, nil) }
        }
        for (client, effects) in routed.perClient {
            if !remoteClients.isEmpty && remoteClients.contains(client) {
                cluster?.deliver(effects, toRemote: client)
                continue
            }
            let namespace = connections.namespaces[client]
            for effect in effects {
                let portalSpelled = respellingDocumentPortalPaths(effect, for: client)
                let respelled = namespace?.outbound(portalSpelled) ?? portalSpelled
                let frame =
                    leaseCounters.counts(client)
                    ? leaseCounterEffect(respelled, for: client) : Filecoord_V1_Frame(respelled)
                if let frame {
                    send(frame, to: client)
                }
            }
        }
        timers.armUnlessFiring()
    }

    /// The number of arbiter timers scheduled (for tests).
    var scheduledTimerCount: Int { timers.count }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}
