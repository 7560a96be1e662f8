import AsyncHTTPClient
public import FCCore
public import FCDaemon
public import FCDumpModel
import FCSystem
import Foundation
public import Logging
import NIOCore

/// The daemon's cluster adapter (issue 40; docs/ARCHITECTURE.md, "Cluster mode"): carries this host's
/// ``HostLeaseTable`` out against etcd and the arbiter's host gates.
///
/// - The table's effects: a key put or deleted in etcd (``EtcdClient``), a gate opened, closed, drained or failed in
///   the arbiter (``SessionRouter/hostGate(_:_:)``), a session replaced, a timer on the loop.
/// - Its events: the session's grant and each keep-alive's answer, what each folder's copy of its keys says
///   (``SharedFolderKeys``: one list of the cluster's keys, then one watch over the cluster's prefix from the list's
///   revision on), the arbiter's ``ArbiterEffect/hostGateWanted(_:)`` and ``ArbiterEffect/hostGateDrained(_:)``.
///
/// The adapter contract the cluster simulator encodes (`ClusterSimulation`): news about a key names its revision (the
/// table ignores news of a replaced session's key), a keep-alive answered for a replaced session is dropped, and
/// ``HostLeaseEvent/keyCreated(folder:revision:)`` comes with the key's standing (holder, another host waiting).
///
/// - Important: Every method runs on ``loop``, the arbiter's. etcd calls run in tasks of their own and come back to
///   the loop with their answers; the loop never waits for etcd.
public final class ClusterHost: ClusterAdapter {
    let loop: any EventLoop
    let configuration: ClusterConfiguration
    let logger: Logger
    let table: HostLeaseTable
    let httpClient: HTTPClient
    let etcd: EtcdClient
    let gates: ClusterGates
    /// The origin of the table's clock: the time since boot, suspend included (``BootClock``), so that a machine
    /// that slept past its fence finds it passed (NIO's monotonic clock stops while it sleeps; etcd's leases do not).
    let origin = BootClock.nanoseconds

    /// The session: its etcd lease and the generation it was opened in (answers about an older one are dropped).
    var session: (lease: Int64, ttl: Int64)?
    var generation = 0
    /// Whether a session's grant is on its way.
    var opening = false
    /// The delay before the next attempt to open a session after one failed; doubles up to 2 s.
    var retryDelay: Duration = .milliseconds(100)
    /// Whether an attempt to open a session is scheduled (one at a time).
    var retryScheduled = false
    var keepAliveTask: Scheduled<Void>?
    /// What this host knows of each shared folder's keys (``SharedFolderKeys``, in FCCore): a copy of them, kept by
    /// the list and the watch across sessions, and this host's own key in this session (a new name for every put: a
    /// late delete of an earlier one cannot remove it).
    var views: [ItemPath: SharedFolderKeys]
    /// The folders the watch message being read changed: where this host stands there is told at its end.
    var foldersInMessage: Set<ItemPath> = []
    /// Puts made by this adapter, for the keys' names (with the session's lease in the name, unique).
    var puts = 0
    /// Keys of this session that hold a folder for nobody, their delete sent (``deleteOrphans(in:)``).
    var orphansDeleting: Set<String> = []
    /// Lists of the cluster's keys issued so far (a list answered before one issued after a put's answer may not
    /// show the key).
    var listsIssued = 0
    /// The last error seen talking to etcd, for the dump and the log.
    var lastError: String?
    var timers: [HostLeaseTimer: Scheduled<Void>] = [:]
    var watchTask: Task<Void, Never>?
    var stopped = false
    /// Shared folders by their cluster name (for the watch's keys).
    let folderByName: [String: ItemPath]
    /// The shared folders' paths as every host reads them (issue 41).
    let sharedPaths: SharedPaths
    /// Presenters across hosts: this host's published, the other hosts' stand-ins, the mail (issue 41).
    var exchange = PresenterExchange()

    /// An adapter for `configuration`, driving `gates`.
    public init(configuration: ClusterConfiguration, gates: ClusterGates, logger: Logger) {
        self.loop = gates.loop
        self.configuration = configuration
        self.logger = logger
        self.gates = gates
        self.table = HostLeaseTable(policy: configuration.policy)
        self.httpClient = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: EtcdClient.httpClientConfiguration
        )
        self.etcd = EtcdClient(httpClient: httpClient, endpoints: configuration.endpoints)
        var byName: [String: ItemPath] = [:]
        for folder in configuration.sharedFolders { byName[folder.name] = folder.path }
        self.folderByName = byName
        self.sharedPaths = SharedPaths(configuration.sharedFolders)
        var views: [ItemPath: SharedFolderKeys] = [:]
        for folder in configuration.sharedFolders {
            views[folder.path] = SharedFolderKeys(folder: folder.path, host: configuration.hostName)
        }
        self.views = views
    }

    var now: Duration { .nanoseconds(BootClock.nanoseconds - origin) }

    /// The way back to this adapter on its loop, for the tasks that talk to etcd.
    var bound: LoopBack { LoopBack(loop: loop, host: NIOLoopBound(self, eventLoop: loop)) }

    /// Runs a closure with the adapter on its loop, from any task.
    struct LoopBack: Sendable {
        let loop: any EventLoop
        let host: NIOLoopBound<ClusterHost>

        func execute(_ body: @escaping @Sendable (ClusterHost) -> Void) {
            let host = self.host
            loop.execute { body(host.value) }
        }
    }

    // MARK: Start and stop

    /// Closes every shared folder's gate (nothing there is granted before this host holds it), then opens the
    /// session and the watch.
    public func start() {
        loop.preconditionInEventLoop()
        for folder in configuration.sharedFolders {
            gates.command(folder.path, .close)
        }
        logger.info(
            "cluster: joining",
            metadata: [
                "cluster.host": "\(configuration.hostName)",
                "cluster.endpoints": "\(configuration.endpoints.joined(separator: ","))",
                "cluster.ttl": "\(configuration.policy.sessionTTL)",
                "cluster.folders":
                    "\(configuration.sharedFolders.map { "\($0.name)=\($0.path)" }.joined(separator: ","))",
            ]
        )
        openSession()
        listAndWatch()
        watchPresence()
        watchMail()
        watchMailboxes()
        startMailListener()
        scheduleSharedScan()
    }

    /// Stops the keep-alives, the watch and the timers, and returns what is left to do off the loop, once no claim
    /// runs any more (the daemon is stopping): revoke the session, so that its keys go at once instead of after its
    /// time to live, and shut the HTTP client down.
    public func stop(revoking: Bool) -> @Sendable () async -> Void {
        loop.preconditionInEventLoop()
        stopped = true
        keepAliveTask?.cancel()
        watchTask?.cancel()
        exchange.presenceWatch?.cancel()
        exchange.mailWatch?.cancel()
        exchange.mailboxWatch?.cancel()
        stopPeerMail()
        exchange.scanTask?.cancel()
        exchange.mailSweepTask?.cancel()
        for timer in timers.values { timer.cancel() }
        timers = [:]
        let (etcd, httpClient, lease) = (self.etcd, self.httpClient, revoking ? session?.lease : nil)
        return {
            if let lease { _ = try? await etcd.revokeLease(lease) }
            try? await httpClient.shutdown()
        }
    }

    // MARK: From the arbiter

    /// A claim waits at the closed gate of `folder`.
    public func claimWaits(in folder: ItemPath) {
        handle(.claimArrived(folder: folder))
    }

    /// After a drain, nothing inside `folder` is granted any more.
    public func drained(_ folder: ItemPath) {
        handle(.localClaimsEnded(folder: folder))
    }

    /// Fences this host now if its session's fence has passed, before the arbiter handles anything that could
    /// grant a claim: a daemon stopped past its fence (SIGSTOP, a frozen machine) wakes with its I/O and timers in
    /// any order, and must not grant on a gate it opened before (the fence's own timer may come later). O(1) unless
    /// it fences.
    public func checkFence() {
        guard case .live(let fenceAt) = table.session, now >= fenceAt else { return }
        handle(.timerFired(.fence))
    }

    // MARK: The table

    func handle(_ event: HostLeaseEvent) {
        loop.preconditionInEventLoop()
        guard !stopped else { return }
        for effect in table.handle(event, at: now) { carryOut(effect) }
    }

    func carryOut(_ effect: HostLeaseEffect) {
        switch effect {
        case .putKey(let folder):
            putKey(folder)
        case .deleteKey(let folder):
            deleteKey(folder)
        case .admit(let folder, let revision):
            logger.info(
                "cluster: holding the shared folder",
                metadata: ["folder": "\(folder)", "cluster.revision": "\(revision)"]
            )
            gates.command(folder, .open(revision: revision))
        case .holdBack(let folder):
            gates.command(folder, .close)
        case .drain(let folder):
            logger.info("cluster: another host asks for the shared folder", metadata: ["folder": "\(folder)"])
            gates.command(folder, .drain)
        case .failClaims(let folder, let reason):
            gates.command(folder, .failWaiting(reason))
        case .claimsLost(let folder, let reason):
            logger.error(
                "cluster: claims granted in a shared folder are no longer exclusive",
                metadata: ["folder": "\(folder)", "reason": "\(reason)"]
            )
            gates.command(folder, .claimsLost(reason))
        case .replaceSession:
            logger.error(
                "cluster: this host's session is gone; claims in shared folders fail until a new one opens",
                metadata: ["reason": "\(table.session)"]
            )
            replaceSession()
        case .startTimer(let timer, let after):
            timers[timer]?.cancel()
            timers[timer] = loop.assumeIsolated().scheduleTask(in: TimeAmount(after)) { [weak self] in
                guard let self else { return }
                self.timers[timer] = nil
                self.handle(.timerFired(timer))
            }
        case .cancelTimer(let timer):
            timers.removeValue(forKey: timer)?.cancel()
        }
    }

    // MARK: Session

    func openSession() {
        guard !opening, !stopped else { return }
        opening = true
        generation += 1
        let attempt = generation
        let sentAt = now
        let ttl = Self.requestedTTLSeconds(for: configuration.policy.sessionTTL)
        let (etcd, bound) = (self.etcd, self.bound)
        Task {
            do {
                let granted = try await etcd.grantLease(ttlSeconds: ttl)
                bound.execute { $0.sessionOpened(granted.id, ttl: granted.ttl, sentAt: sentAt, attempt) }
            } catch {
                bound.execute { $0.sessionFailed("\(error)", attempt) }
            }
        }
    }

    /// The whole seconds asked of etcd for a session of `ttl`: rounded up, so that the session etcd keeps outlives the
    /// host's fence, which counts `ttl` (a 2.5-s policy asked 2 s before, and fenced at 2.375 s, past the expiry).
    static func requestedTTLSeconds(for ttl: Duration) -> Int64 {
        let (seconds, attoseconds) = ttl.components
        return max(seconds + (attoseconds > 0 ? 1 : 0), 1)
    }

    func sessionOpened(_ lease: Int64, ttl: Int64, sentAt: Duration, _ attempt: Int) {
        guard attempt == generation, !stopped else { return }
        guard Duration.seconds(ttl) >= configuration.policy.sessionTTL else {
            // Shorter than the fence counts on: it could expire before the host stops granting. Left to expire.
            sessionFailed(
                "etcd granted a time to live of \(ttl) s, shorter than the \(configuration.policy.sessionTTL) asked",
                attempt
            )
            return
        }
        opening = false
        retryDelay = .milliseconds(100)
        lastError = nil
        session = (lease, ttl)
        forgetOwnKeys()
        orphansDeleting = []
        logger.info(
            "cluster: session open",
            metadata: ["cluster.lease": "\(String(lease, radix: 16))", "cluster.ttl": "\(ttl)"]
        )
        handle(.sessionStarted(sentAt: sentAt))
        scheduleKeepAlive()
        presenceSessionOpened()
    }

    func sessionFailed(_ reason: String, _ attempt: Int) {
        guard attempt == generation, !stopped else { return }
        opening = false
        noteError("cannot open a cluster session: \(reason)")
        handle(.sessionLost("cannot open a cluster session: \(reason)"))
        // The table replaces a lost session (replaceSession retries); if it did not (it was unavailable already),
        // try again later.
        if session == nil && !opening { retryLater() }
    }

    /// After a fence or a lost session: a new session is opened. The old one is not revoked: claims granted under
    /// it may still run, and process leases may still decide claims until their holders read the recall, so its keys
    /// stay in etcd until it expires, and the other hosts wait until then (docs/SEMANTICS.md §14).
    func replaceSession() {
        keepAliveTask?.cancel()
        keepAliveTask = nil
        session = nil
        forgetOwnKeys()
        presenceSessionLost()
        orphansDeleting = []
        generation += 1  // Answers about the old session are dropped from now on, a grant on its way included.
        opening = false
        retryLater()
    }

    /// A new session has no key yet (the old one's stay in the copies until etcd deletes them).
    func forgetOwnKeys() {
        for folder in views.keys { views[folder]?.sessionReplaced() }
    }

    func retryLater() {
        guard !retryScheduled, !stopped else { return }
        retryScheduled = true
        let delay = retryDelay
        retryDelay = min(retryDelay * 2, .seconds(2))
        loop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) { [weak self] in
            guard let self else { return }
            self.retryScheduled = false
            guard self.session == nil else { return }
            self.openSession()
        }
    }

    /// Renews the session a third of its time to live after the last renewal was sent.
    func scheduleKeepAlive() {
        keepAliveTask?.cancel()
        let interval = configuration.policy.sessionTTL / 3
        let attempt = generation
        keepAliveTask = loop.assumeIsolated().scheduleTask(in: TimeAmount(interval)) { [weak self] in
            guard let self, attempt == self.generation else { return }  // One chain per session.
            self.keepAlive()
        }
    }

    func keepAlive() {
        guard let session, !stopped else { return }
        let attempt = generation
        let sentAt = now
        let (etcd, bound) = (self.etcd, self.bound)
        Task {
            let answer: Result<Int64, any Error>
            do { answer = .success(try await etcd.keepAliveOnce(lease: session.lease)) } catch {
                answer = .failure(error)
            }
            bound.execute { $0.keptAlive(answer, sentAt: sentAt, attempt) }
        }
        listAgainIfHolding()
        scheduleKeepAlive()
    }

    func keptAlive(_ answer: Result<Int64, any Error>, sentAt: Duration, _ attempt: Int) {
        guard attempt == generation, session != nil else { return }  // About a replaced session: dropped.
        switch answer {
        case .success(let ttl) where ttl > 0:
            handle(.sessionRenewed(sentAt: sentAt))
        case .success:
            noteError("the cluster says this host's session has expired")
            handle(.sessionLost("the cluster says this host's session has expired"))
        case .failure(let error):
            // The fence, not this, decides: renewals may still get through before it.
            noteError("a renewal of the cluster session failed: \(error)")
        }
    }

    // MARK: Reading

    /// What fcdump shows of the cluster: the session, and each shared folder's host lease, gate and waiting claims.
    public func dump() -> DaemonDump.Cluster {
        let session: String
        switch table.session {
        case .live(let fenceAt):
            let left = fenceAt - now
            let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            session = "live (fence in \((seconds * 10).rounded() / 10) s unless renewed)"
        case .connecting, .unavailable:
            session = "\(table.session)"
        }
        let gateStates = Dictionary(uniqueKeysWithValues: gates.snapshots().map { ($0.folder, $0) })
        let records = Dictionary(uniqueKeysWithValues: table.snapshot().folders.map { ($0.folder, $0) })
        var cluster = DaemonDump.Cluster(
            host: configuration.hostName,
            endpoints: configuration.endpoints,
            session: session,
            sessionLease: self.session.map { String($0.lease, radix: 16) },
            ttlSeconds: self.session?.ttl,
            lastError: lastError,
            folders: configuration.sharedFolders.map { folder in
                let record = records[folder.path]
                let gate = gateStates[folder.path]
                return DaemonDump.SharedFolder(
                    path: folder.path.escapedDescription,
                    name: folder.name,
                    state: record.map { "\($0.state)" } ?? "idle",
                    wanted: record?.wanted ?? false,
                    otherHostWaiting: record?.otherHostWaiting ?? false,
                    firstHost: views[folder.path]?.firstHost,
                    gate: gate.map { $0.draining ? "draining" : "closed" } ?? "open",
                    waitingClaims: gate?.waiting ?? 0
                )
            }
        )
        cluster.mailAddress = exchange.mailbox.map {
            "\(ClusterConfiguration.MailListen.address($0.address, port: $0.port))"
        }
        cluster.lettersDirect = exchange.lettersDirect
        cluster.lettersThroughEtcd = exchange.lettersThroughEtcd
        cluster.mailSeriesRead = Set(exchange.expected.keys).union(exchange.early.keys).count
        cluster.mailSeriesSent = exchange.sequences.count
        return cluster
    }

    func noteError(_ message: String) {
        if lastError != message { logger.warning("cluster: \(message)") }
        lastError = message
    }

    static func hex(_ string: String) -> String {
        string.utf8.map { String(format: "%02x", $0) }.joined()
    }

    static func unhex(_ string: String) -> String? {
        var bytes: [UInt8] = []
        var index = string.startIndex
        while index < string.endIndex {
            let end = string.index(index, offsetBy: 2, limitedBy: string.endIndex) ?? string.endIndex
            guard let byte = UInt8(string[index..<end], radix: 16) else { return nil }
            bytes.append(byte)
            index = end
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
