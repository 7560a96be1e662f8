import FCCore
import FCProtocol
import FCSystem
import FCToolkit
import Foundation
import Logging
import NIOCore
import SystemPackage

/// The arbiter as the daemon runs it: the ``SessionRouter`` and its arbiter, the live connections, and the timers,
/// all on one event loop (docs/ARCHITECTURE.md §9, "One loop": no locks on the hot path).
///
/// - Important: Every method must be called on ``loop``.
final class ArbiterHost {
    let loop: any EventLoop
    let router: SessionRouter
    let configuration: DaemonConfiguration
    let logger: Logger
    /// The version store (issue 15), served off the loop.
    let versionStore: VersionStoreService
    /// Each connected client's channel.
    var connections: [ClientID: any Channel] = [:]
    /// Connections being closed by the daemon: nothing more is sent to them.
    private var closing: Set<ClientID> = []
    /// Connections open now, those still in their handshake included (``DaemonConfiguration/maximumConnections``).
    private(set) var openConnections = 0

    /// The arbiter's timers (presenter timeouts, deadlock checks), earliest first: one NIO timer is armed, for the
    /// earliest (issue 12), instead of one per request.
    private var deadlines = DeadlineHeap<TimerID, NIODeadline>()
    /// The NIO timer armed for the earliest deadline, and that deadline.
    private var armedTimer: (deadline: NIODeadline, task: Scheduled<Void>)?
    /// `true` while due timers are being fired: the NIO timer is armed again once, after all of them.
    private var firingTimers = false
    /// Connections written to since the last flush, in the order they were first written to; each is flushed
    /// once at the end of the loop pass (``flushPending()``, issue 12).
    private var unflushed: [any Channel] = []
    private var unflushedClients: Set<ClientID> = []
    /// `true` while a task that flushes ``unflushed`` waits on the loop.
    private var flushScheduled = false
    /// Frames flushed and flushes made (for tests and dumps: frames per flush is the batching).
    private(set) var flushStatistics = (frames: 0, flushes: 0)
    let encoder: FrameEncoder
    private var shuttingDown = false
    /// Whether, when the daemon shut down (``shutDown()``), a client held a granted claim or a lease, or the daemon
    /// was still in its own recovery grace: such a client declares its running claims to the next daemon only once
    /// it has read the end of its connection and reconnected (a lease's holder may even decide claims in process
    /// until then), so the next daemon starts with the recovery grace (``DaemonService``'s marker).
    private(set) var holdersAtShutDown = false
    /// The marker that started this daemon's recovery, removed when the grace ends (``endRecovery()``): a daemon
    /// stopped or crashed before then leaves it to the next.
    private var recoveryMarker: String?
    /// Each connected client's command line, read once when it connected (for the dump).
    var clientArguments: [ClientID: [String]] = [:]
    /// The path translation of each client in another mount namespace than the daemon's (issue 26).
    var namespaces: [ClientID: MountNamespaceTranslation] = [:]
    /// Document-portal paths to the host files they export, for every client (issue 26).
    let documentPortal: DocumentPortalMapping
    /// The portal paths each client spelled, for the way back (ArbiterHost+DocumentPortal.swift).
    var portalSpellings: [ClientID: DocumentPortalSpellings] = [:]
    /// Each client's events that wait, in order, for the portal's answer about a document the first one names
    /// (``waitsForPortal(_:inDaemonPaths:from:)``): the loop never waits for the portal.
    var portalWaits: [ClientID: [ArbiterEvent]] = [:]
    /// Where the portal is asked: a serial queue of the daemon's own (tests: a closure of theirs).
    let portalLookups: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// Each connected client's claims that failed `TIMED_OUT` (for the dump: a preload client lets its program's
    /// call through uncoordinated after each, Languages/preload/README.md).
    var timedOutClaims: [ClientID: Int] = [:]
    /// The file-system watcher the arbiter's watch effects go to, and its last status (ArbiterHost+Watching.swift).
    var watcher: (any FileSystemWatcher)?
    var watcherStatus: WatcherStatus?
    /// The directories the watcher watches now, as its reports said.
    var watchedDirectories: Set<ItemPath> = []
    /// The cluster adapter, when the daemon shares folders with other hosts (issue 40; ClusterAdapter.swift).
    var cluster: (any ClusterAdapter)?

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
        self.portalLookups =
            configuration.portalLookups ?? { work in DocumentPortalMapping.lookupQueue.async(execute: work) }
        self.versionStore = VersionStoreService(
            directory: configuration.versionStoreDirectory,
            retention: configuration.versionRetention,
            logger: logger
        )
        self.router = SessionRouter(
            configuration: configuration.arbiterConfiguration,
            maximumClaimsPerClient: configuration.maximumClaimsPerClient,
            maximumPresentersPerClient: configuration.maximumPresentersPerClient
        )
    }

    /// Counts a new connection; `false` when the daemon already serves as many as it may.
    func connectionOpened() -> Bool {
        loop.preconditionInEventLoop()
        guard openConnections < configuration.maximumConnections else { return false }
        openConnections += 1
        return true
    }

    /// Counts a connection that closed (one ``connectionOpened()`` accepted).
    func connectionClosed() {
        loop.preconditionInEventLoop()
        openConnections -= 1
    }

    /// A client finished its handshake.
    func accept(_ channel: any Channel, pid: Int32, name: String, answersRecalls: Bool = false) -> ClientID {
        loop.preconditionInEventLoop()
        let namespace = MountNamespaceTranslation.of(pid: pid)
        // A client in another mount namespace gets no lease: a lease is a subtree in the daemon's paths, which the
        // client's library compares with its own, so it would decide in process claims on paths that the daemon
        // maps elsewhere (docs/SEMANTICS.md §13), or hand back to the daemon, forever, claims the daemon maps in.
        let client = router.connect(pid: pid, name: name, answersRecalls: answersRecalls && namespace == nil)
        connections[client] = channel
        clientArguments[client] = ProcessCommandLine.arguments(of: pid)
        namespaces[client] = namespace
        discoverDocumentPortal(for: client)
        logger.info(
            "client connected",
            metadata: ["client.id": "\(client.rawValue)", "client.pid": "\(pid)", "client.name": "\(name)"]
        )
        return client
    }

    /// Events held back while the daemon recovers from a crashed predecessor (``startRecovery(for:)``), in order.
    private var heldBack: [(ClientID, ArbiterEvent)] = []
    private var recovering = false

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
        recovering = true
        recoveryMarker = marker
        logger.notice(
            "\(reason): only claims still held are taken for \(grace)",
            metadata: ["grace.seconds": "\(Double(grace.nanoseconds) / 1e9)"]
        )
        loop.assumeIsolated().scheduleTask(in: .nanoseconds(grace.nanoseconds)) { [weak self] in
            self?.endRecovery()
        }
    }

    private func endRecovery() {
        recovering = false
        if let marker = recoveryMarker {
            recoveryMarker = nil
            do throws(Errno) {
                try FileSystemCalls.removeFile(marker)
            } catch {
                if error != .noSuchFileOrDirectory {
                    logger.warning("cannot remove the recovery marker: \(error)", metadata: ["marker": "\(marker)"])
                }
            }
        }
        let events = heldBack
        heldBack = []
        logger.info("recovery over", metadata: ["events.heldBack": "\(events.count)"])
        for (client, event) in events where connections[client] != nil { receive(event, from: client) }
    }

    /// One event from a client, in its own ids.
    func receive(_ event: ArbiterEvent, from client: ClientID) {
        loop.preconditionInEventLoop()
        // Behind an event that waits for the document portal: in order, after it.
        if portalWaits[client] != nil {
            portalWaits[client]?.append(event)
            return
        }
        if recovering {
            if case .claimRequested(let request) = event, request.isHeld {
                // Taken at once: it is what recovery waits for.
            } else if case .leaseReturned = event {
                // So is a lease of the previous daemon given back with the claims still running in it.
            } else {
                heldBack.append((client, event))
                return
            }
        }
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
            let inDaemonPaths = namespaces[client]?.inbound(event) ?? event
            var translated = inDaemonPaths
            if namesDocumentPortalPath(inDaemonPaths) {
                if waitsForPortal(event, inDaemonPaths: inDaemonPaths, from: client) { return }
                translated = mappingDocumentPortalPaths(inDaemonPaths, from: client)
            }
            cluster?.checkFence()
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
        guard connections.removeValue(forKey: client) != nil else { return }
        let closedHere = closing.remove(client) != nil
        clientArguments[client] = nil
        namespaces[client] = nil
        portalSpellings[client] = nil
        portalWaits[client] = nil
        timedOutClaims[client] = nil
        // The arbiter logs the disconnect itself.
        cluster?.checkFence()
        apply(router.disconnect(client, keepingLeasesFor: closedHere ? configuration.recoveryGrace : nil))
    }

    /// Sends a protocol error and closes one connection; nothing else is affected.
    func close(_ client: ClientID, because error: ProtocolError) {
        loop.preconditionInEventLoop()
        guard let channel = connections[client], closing.insert(client).inserted else { return }
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
        holdersAtShutDown =
            recovering || !router.arbiter.leaseSnapshots().isEmpty
            || router.arbiter.snapshot().claims.contains { $0.phase == .granted && !$0.request.id.isHostGate }
        for (client, claim) in router.pendingClaims() {
            let failed = Filecoord_V1_ClaimFailed(
                claim: claim,
                reason: .shuttingDown("filecoordd is shutting down; the call failed instead of waiting"),
                message: nil
            )
            send(Filecoord_V1_Frame(.claimFailed(failed)), to: client)
        }
        flushPending()
        for channel in connections.values { channel.close(promise: nil) }
        deadlines.removeAll()
        armedTimer?.task.cancel()
        armedTimer = nil
    }

    /// The state as JSON, for `DumpRequest` (`fcdump`; the schema is docs/FCDUMP-SCHEMA.md). Read-only.
    /// The state for a dump, copied now (``captureDumpState()``); encode it off the loop with
    /// ``DumpState/json(logger:)``.
    func dumpState() -> DumpState {
        loop.preconditionInEventLoop()
        let start = ContinuousClock.now
        let state = captureDumpState()
        // Every other client waits while the state is copied: say how long, for whoever runs fcdump --watch.
        logger.debug(
            "dump state copied",
            metadata: [
                "dump.presenters": "\(state.snapshot.presenters.count)",
                "dump.claims": "\(state.snapshot.claims.count)",
                "dump.milliseconds": "\((ContinuousClock.now - start) / .milliseconds(1))",
            ]
        )
        return state
    }

    func send(_ frame: Filecoord_V1_Frame, to client: ClientID) {
        guard let channel = connections[client], !closing.contains(client) else { return }
        if case .claimFailed(let failed)? = frame.payload, failed.kind == .timedOut {
            timedOutClaims[client, default: 0] += 1
        }
        write(frame, on: channel, for: client)
        // More than maximumQueuedBytes wait for a client that does not read (11.3): it cannot be reached, so it is
        // treated like a presenter that does not answer, at once and for all its presenters: disconnected. Its
        // claims are released, its presenters removed, its pending replies count as answered; its queue is freed.
        if !channel.isWritable {
            close(
                client,
                because: ProtocolError(
                    .limitExceeded,
                    "the client does not read: more than \(configuration.maximumQueuedBytes) bytes of messages wait to "
                        + "be sent to it, so it is disconnected and its presenters count as gone"
                )
            )
        }
    }

    /// Writes a frame without flushing; the connection is flushed once at the end of this loop pass, however many
    /// frames it got (``flushPending()``).
    private func write(_ frame: Filecoord_V1_Frame, on channel: any Channel, for client: ClientID) {
        do {
            let buffer = try encoder.encode(frame, allocator: channel.allocator)
            channel.write(buffer, promise: nil)
        } catch {
            logger.error("could not encode a frame: \(error)", metadata: ["client.id": "\(client.rawValue)"])
            return
        }
        flushStatistics.frames += 1
        if unflushedClients.insert(client).inserted { unflushed.append(channel) }
        if !flushScheduled {
            flushScheduled = true
            // Runs after the I/O events and tasks of this pass: every effect of the pass, whether it came from a
            // read, a timer or the watcher, is flushed by it.
            loop.assumeIsolated().execute { [weak self] in self?.flushPending() }
        }
    }

    /// Writes and flushes at once, outside the batching: for the handshake, dumps and version store replies, which
    /// are not on the hot path. `pid` names the peer in the log if the frame cannot be encoded.
    func writeNow(_ frame: Filecoord_V1_Frame, on channel: any Channel, pid: Int32) {
        let buffer: ByteBuffer
        do {
            buffer = try encoder.encode(frame, allocator: channel.allocator)
        } catch {
            // Never silent: the peer would wait for an answer that does not come.
            logger.error("could not encode a frame: \(error)", metadata: ["client.pid": "\(pid)"])
            return
        }
        channel.writeAndFlush(buffer, promise: nil)
    }

    /// Flushes every connection written to since the last flush, once each.
    func flushPending() {
        loop.preconditionInEventLoop()
        flushScheduled = false
        let channels = unflushed
        unflushed.removeAll(keepingCapacity: true)
        unflushedClients.removeAll(keepingCapacity: true)
        for channel in channels {
            flushStatistics.flushes += 1
            channel.flush()
        }
    }

    func apply(_ routed: SessionRouter.Routed) {
        for effect in routed.host {
            switch effect {
            case .startTimer(let timer, let after):
                deadlines.schedule(timer, at: .now() + .nanoseconds(after.nanoseconds))
            case .cancelTimer(let timer):
                deadlines.cancel(timer)
            case .log(let record):
                logger.log(record)
            case .watch(let directory):
                watcher?.watch(directory)
            case .unwatch(let directory):
                watcher?.unwatch(directory)
            case .fileWithOtherNamesWritten(let identity):
                watcher?.fileWritten(identity)
            case .hostGateWanted(let folder):
                // After this pass: the cluster adapter's answer may feed the arbiter again.
                loop.assumeIsolated().execute { [weak self] in self?.cluster?.claimWaits(in: folder) }
            case .hostGateDrained(let folder):
                loop.assumeIsolated().execute { [weak self] in self?.cluster?.drained(folder) }
            case .grant, .fail, .message, .watchUnavailable, .grantLease, .recallLease, .leaseDropped,
                .claimInsideLease:
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
        for (client, effects) in routed.perClient {
            let namespace = namespaces[client]
            for effect in effects {
                let respelled = respellingDocumentPortalPaths(effect, for: client)
                if let frame = Filecoord_V1_Frame(namespace?.outbound(respelled) ?? respelled) {
                    send(frame, to: client)
                }
            }
        }
        if !firingTimers { armTimer() }
    }

    /// Arms the one NIO timer for the earliest deadline, unless one is armed that fires no later. A timer armed for
    /// a deadline since cancelled is left to fire: it finds nothing due and arms the next (cheaper than cancelling
    /// NIO's task on every cancel).
    private func armTimer() {
        guard let earliest = deadlines.earliest() else { return }
        if let armed = armedTimer {
            guard earliest < armed.deadline else { return }
            armed.task.cancel()
        }
        let task: Scheduled<Void> = loop.assumeIsolated().scheduleTask(deadline: earliest) { [weak self] in
            guard let self else { return }
            self.fireDueTimers()
        }
        armedTimer = (earliest, task)
    }

    /// Fires every timer due now, in deadline order, then arms the NIO timer for the next.
    private func fireDueTimers() {
        guard let armed = armedTimer else { return }
        armedTimer = nil
        // NIO fires at or after the deadline; the armed deadline counts as now in case the clocks' readings differ.
        let now = max(NIODeadline.now(), armed.deadline)
        firingTimers = true
        cluster?.checkFence()
        while let timer = deadlines.popDue(at: now) {
            apply(router.timerFired(timer))
        }
        firingTimers = false
        armTimer()
    }

    /// The number of arbiter timers scheduled (for tests).
    var scheduledTimerCount: Int { deadlines.count }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}
