import FCCore
import FCTestSupport

/// One random schedule of several hosts sharing folders through a model of the cluster's store (etcd), each host's
/// ``HostLeaseTable`` driven by a model of its daemon's cluster adapter (issue 40). Deterministic: the same seed gives
/// the same schedule. Time is simulated (milliseconds); messages between a host and the store take a random delay,
/// in order per direction, and stall while the host is cut off (a TCP connection that stops moving, its requests
/// retried): a cut-off host's keep-alives reach the store late, or after its session expired.
///
/// The store model keeps what the real adapter relies on: sessions with a time to live, renewed when a keep-alive
/// arrives and expired (their keys deleted) when none did for that long; keys per folder, each of a new name, in
/// create-revision order; one watch per host that reports every put and delete, in revision order, on a channel of
/// its own (so a put's or delete's answer and the watch's report of it come in either order, as on two
/// connections). Each host's adapter is modelled as ClusterHost works: a ``SharedFolderKeys`` per folder (the FCCore
/// rules that turn the copy of the folder's keys into the table's events), listed at the start (the store is empty
/// then) and kept by the host's watch, its key put and deleted by name. Not modelled: a watch that etcd cancels
/// (compacted) and the list that follows it (SharedFolderKeysTests covers the list). Faults: a host cut off from the
/// store for a while (a partition), a host whose daemon is stopped for a while (SIGSTOP: it handles nothing, its
/// timers fire late), claims of any length.
///
/// Invariants, checked at each grant and at the end:
/// 1. **No host grants what another may still grant**: when a host grants a local claim in a folder, no other host
///    both admits claims there (its gate is open) and is before its fence.
/// 2. **What another host still runs is lost, and said so**: when a host grants a local claim in a folder, every claim
///    another host granted there and that still runs was granted by a host now past its fence (so its table reports
///    it lost: `claimsLost`, as soon as that host handles anything).
/// 3. **A host grants only while its table admits** (`admits(_:at:)`).
/// 4. **Nothing waits forever**: once faults end and claims stop coming, every waiting claim is granted or failed
///    within a bounded time, and every host's gate agrees with its table.
struct ClusterSimulation {
    struct Failure: Error, CustomStringConvertible {
        var seed: UInt64
        var time: Int
        var message: String
        var trace: [String]
        var description: String { "seed \(seed), at \(time) ms: \(message)" }
    }

    /// What the run did, for the test's report (a run that exercised nothing must not pass unnoticed).
    struct Counts {
        var grants = 0
        var handovers = 0
        var fences = 0
        var lost = 0
        var failed = 0
        /// Puts applied but answered as failed.
        var appliedButFailed = 0
        /// Keys an operator deleted with others at one revision.
        var deletedAtOnce = 0
    }

    let seed: UInt64
    private var rng: SplitMix64
    private let policy: HostLeasePolicy
    private let folders: [ItemPath]
    private var hosts: [Host]
    private var store = Store()
    private var queue = EventQueue<Action>()
    private var order = 0
    private var now = 0
    private(set) var counts = Counts()
    private(set) var trace: [String] = []

    private enum Action {
        case arrive(host: Int, folder: Int)
        case finish(host: Int, claim: Int)
        case toStore(host: Int, StoreRequest)
        case toHost(host: Int, HostLeaseEvent)
        /// The store's answer to a put of `name` in `session` (`failed`: its session had expired).
        case putAnswer(host: Int, session: Int, folder: Int, name: String, failed: Bool)
        /// The store's answer to a delete of `name`.
        case deleteAnswer(host: Int, session: Int, folder: Int, name: String)
        /// A change the host's watch reports.
        /// The host's watch delivers its next report (``Host/watchQueue``: the stream is in revision order, even when
        /// a cut or a stop makes the deliveries themselves wait).
        case watched(host: Int)
        case opened(host: Int, session: Int, sentAt: Int)
        case local(host: Int, HostLeaseEvent)
        /// The store's answer to a keep-alive of `session`: the adapter hands it on only while that session is the
        /// host's (a late answer about a session it replaced must not fence the new one).
        case keepAliveAnswer(host: Int, session: Int, HostLeaseEvent)
        case timer(host: Int, HostLeaseTimer, generation: Int)
        case keepAlive(host: Int)
        case expire
        /// An operator deletes every key of the folder at once (`etcdctl del --prefix`): one revision for them all.
        case deleteAll(folder: Int)
    }

    private enum StoreRequest {
        case openSession(sentAt: Int)
        case keepAlive(session: Int, sentAt: Int)
        case put(folder: Int, session: Int, name: String)
        case delete(folder: Int, session: Int, name: String)
    }

    private struct Key {
        var name: String
        var host: Int
        var session: Int
        var revision: Int64
    }

    private struct Store {
        var revision: Int64 = 1
        var nextSession = 1
        /// Live sessions: their host and when they expire.
        var sessions: [Int: (host: Int, expiresAt: Int)] = [:]
        /// Keys per folder, in create-revision order.
        var keys: [Int: [Key]] = [:]
    }

    private struct Claim {
        var folder: Int
        var endsAt: Int
        var lost = false
    }

    private struct Host {
        let name: String
        let table: HostLeaseTable
        var session: Int?
        var gates: [Int: Bool] = [:]
        /// The adapter's state: its copy of each folder's keys (listed empty at the start, when the store is empty,
        /// then kept by its watch), its puts (for the keys' names).
        var views: [Int: SharedFolderKeys] = [:]
        var puts = 0
        var waiting: [Int: Int] = [:]
        var granted: [Int: Claim] = [:]
        var draining: Set<Int> = []
        var timerGenerations: [HostLeaseTimer: Int] = [:]
        var cutOffUntil = 0
        var stoppedUntil = 0
        /// When each direction's last message arrives, so that messages keep their order.
        var lastToStore = 0
        var lastToHost = 0
        /// When the host's watch's last event arrives (the watch is a connection of its own).
        var lastWatched = 0
        /// The watch's reports not delivered yet, in revision order.
        var watchQueue: [(folder: Int, change: SharedFolderKeys.Change, revision: Int64, endsBatch: Bool)] = []
    }

    init(seed: UInt64) {
        self.seed = seed
        var rng = SplitMix64(seed: seed)
        let ttl = [1_000, 2_000][Int(rng.next() % 2)]
        self.policy = HostLeasePolicy(
            sessionTTL: .milliseconds(ttl),
            minimumHold: .milliseconds([0, 20, 100][Int(rng.next() % 3)])
        )
        let hostCount = 2 + Int(rng.next() % 2)
        let folderCount = 1 + Int(rng.next() % 2)
        self.folders = (0..<folderCount).map { try! ItemPath(absolute: "/shared/f\($0)") }
        let policy = self.policy
        let folders = self.folders
        self.hosts = (0..<hostCount).map { index in
            var host = Host(name: "host\(index)", table: HostLeaseTable(policy: policy))
            for (folder, path) in folders.enumerated() {
                var view = SharedFolderKeys(folder: path, host: "host\(index)")
                _ = view.listed([], serial: 0, revision: 1)
                host.views[folder] = view
            }
            return host
        }
        self.rng = rng
    }

    /// Runs the schedule: `duration` ms of random claims and faults, then a quiet drain.
    mutating func run(duration: Int = 20_000) throws(Failure) {
        for host in hosts.indices { openSession(host) }
        var t = 0
        while t < duration {
            t += 1 + Int(rng.next() % 60)
            schedule(.arrive(host: random(hosts.count), folder: random(folders.count)), at: t)
        }
        // Faults: a partition and a stopped daemon, each in some seeds, each for up to three times the TTL.
        let ttl = Int(policy.sessionTTL.components.seconds) * 1_000
        if random(3) > 0 {
            let host = random(hosts.count)
            let from = random(duration / 2)
            hosts[host].cutOffUntil = from + 300 + random(3 * ttl)
            trace.append("host\(host) cut off from \(from) ms to \(hosts[host].cutOffUntil) ms")
            cutOffFrom[host] = from
        }
        if random(3) > 0 {
            let host = random(hosts.count)
            let from = random(duration / 2)
            stoppedFrom[host] = from
            stoppedUntilPlanned[host] = from + 300 + random(3 * ttl)
            trace.append("host\(host) stopped from \(from) ms to \(stoppedUntilPlanned[host]!) ms")
        }
        if random(4) == 0 {
            let at = random(duration)
            schedule(.deleteAll(folder: random(folders.count)), at: at)
            trace.append("an operator deletes every key of a folder at \(at) ms")
        }
        schedule(.expire, at: 0)
        let end = duration + 20 * ttl
        while let (time, _, action) = popNext(), time <= end {
            now = time
            applyFaults()
            try perform(action)
        }
        try checkDrained()
    }

    private var cutOffFrom: [Int: Int] = [:]
    /// Hosts whose key an operator deleted, until their table fences (``Action/deleteAll(folder:)``).
    private var deletedUnheard: Set<Int> = []
    private var stoppedFrom: [Int: Int] = [:]
    private var stoppedUntilPlanned: [Int: Int] = [:]

    private mutating func applyFaults() {
        for (host, from) in stoppedFrom where now >= from {
            hosts[host].stoppedUntil = stoppedUntilPlanned[host]!
            stoppedFrom[host] = nil
        }
    }

    private func isCutOff(_ host: Int) -> Bool {
        guard let from = cutOffFrom[host] else { return false }
        return now >= from && now < hosts[host].cutOffUntil
    }

    // MARK: Scheduling

    private mutating func schedule(_ action: Action, at time: Int) {
        order += 1
        queue.push(action, at: time, order: order)
    }

    private mutating func popNext() -> (Int, Int, Action)? {
        queue.pop()
    }

    private mutating func random(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(rng.next() % UInt64(bound)) }

    private mutating func delay() -> Int { 1 + random(30) }

    private mutating func sendToStore(_ host: Int, _ request: StoreRequest) {
        let at = max(now + delay(), hosts[host].lastToStore)
        hosts[host].lastToStore = at
        schedule(.toStore(host: host, request), at: at)
    }

    private mutating func sendToHost(_ host: Int, _ event: HostLeaseEvent) {
        sendToHost(host, .toHost(host: host, event))
    }

    private mutating func sendToHost(_ host: Int, _ action: Action) {
        let at = max(now + delay(), hosts[host].lastToHost)
        hosts[host].lastToHost = at
        schedule(action, at: at)
    }

    /// A message between `host` and the store stalls while the host is cut off: it moves on when the cut heals.
    /// Returns whether it goes on now.
    private mutating func deferIfCutOff(_ host: Int, _ action: Action) -> Bool {
        guard isCutOff(host) else { return true }
        schedule(action, at: hosts[host].cutOffUntil)
        return false
    }

    // MARK: Actions

    private mutating func perform(_ action: Action) throws(Failure) {
        switch action {
        case .toStore(let host, let request):
            guard deferIfCutOff(host, action) else { return }
            storeHandles(request, from: host)
        case .expire:
            expireSessions()
            schedule(.expire, at: now + 50)
        case .deleteAll(let folder):
            let keys = store.keys[folder] ?? []
            guard !keys.isEmpty else { return }
            trace.append("\(now) ms: an operator deleted every key of \(folders[folder])")
            counts.deletedAtOnce += keys.count
            store.revision += 1
            store.keys[folder] = []
            for (index, key) in keys.enumerated() {
                notifyWatchers(folder, .deleted(name: key.name), endsBatch: index == keys.count - 1)
            }
            // Deleted under them: until each hears it (and fences), the others may grant beside it (SEMANTICS §14:
            // a key deleted by hand lets the others proceed).
            deletedUnheard.formUnion(keys.map(\.host))
        case .arrive(let host, let folder):
            guard deferIfStopped(host, action) else { return }
            try arrive(host, folder)
        case .finish(let host, let claim):
            guard deferIfStopped(host, action) else { return }
            try finish(host, claim)
        case .toHost(let host, let event):
            guard deferIfCutOff(host, action), deferIfStopped(host, action) else { return }
            try handle(host, event)
        case .putAnswer(let host, let session, let folder, let name, let failed):
            guard deferIfCutOff(host, action), deferIfStopped(host, action) else { return }
            try putAnswered(host, session: session, folder: folder, name: name, failed: failed)
        case .deleteAnswer(let host, let session, let folder, let name):
            guard deferIfCutOff(host, action), deferIfStopped(host, action) else { return }
            guard hosts[host].session == session, hosts[host].views[folder]?.forget(name: name) == true else { return }
            try handle(host, .keyDeleted(folder: folders[folder]))
        case .watched(let host):
            guard deferIfCutOff(host, action), deferIfStopped(host, action) else { return }
            let (folder, change, revision, endsBatch) = hosts[host].watchQueue.removeFirst()
            try watched(host, folder: folder, change, revision: revision, endsBatch: endsBatch)
        case .opened(let host, let session, let sentAt):
            guard deferIfCutOff(host, action), deferIfStopped(host, action) else { return }
            hosts[host].session = session
            try handle(host, .sessionStarted(sentAt: .milliseconds(sentAt)))
        case .local(let host, let event):
            guard deferIfStopped(host, action) else { return }
            try handle(host, event)
        case .keepAliveAnswer(let host, let session, let event):
            guard deferIfCutOff(host, action), deferIfStopped(host, action) else { return }
            guard hosts[host].session == session else { return }
            try handle(host, event)
        case .timer(let host, let timer, let generation):
            guard hosts[host].timerGenerations[timer] == generation else { return }  // Cancelled.
            guard deferIfStopped(host, action) else { return }
            try handle(host, .timerFired(timer))
        case .keepAlive(let host):
            guard deferIfStopped(host, action) else { return }
            if let session = hosts[host].session { sendToStore(host, .keepAlive(session: session, sentAt: now)) }
            schedule(.keepAlive(host: host), at: now + Int(policy.sessionTTL.components.seconds) * 1_000 / 3)
        }
    }

    /// A stopped daemon handles nothing: the action waits until it runs again. Returns whether to go on now.
    private mutating func deferIfStopped(_ host: Int, _ action: Action) -> Bool {
        guard now < hosts[host].stoppedUntil else { return true }
        schedule(action, at: hosts[host].stoppedUntil)
        return false
    }

    private mutating func openSession(_ host: Int) {
        sendToStore(host, .openSession(sentAt: now))
        if hosts[host].session == nil, !keepAliveScheduled.contains(host) {
            keepAliveScheduled.insert(host)
            schedule(.keepAlive(host: host), at: now + 100)
        }
    }

    private var keepAliveScheduled: Set<Int> = []

    // MARK: The store

    private mutating func storeHandles(_ request: StoreRequest, from host: Int) {
        expireSessions()
        switch request {
        case .openSession(let sentAt):
            let session = store.nextSession
            store.nextSession += 1
            store.sessions[session] = (host, now + milliseconds(policy.sessionTTL))
            sendToHost(host, .opened(host: host, session: session, sentAt: sentAt))
        case .keepAlive(let session, let sentAt):
            if store.sessions[session] != nil {
                let expiresAt = now + milliseconds(policy.sessionTTL)
                store.sessions[session]?.expiresAt = expiresAt
                sendToHost(
                    host,
                    .keepAliveAnswer(host: host, session: session, .sessionRenewed(sentAt: .milliseconds(sentAt)))
                )
            } else {
                sendToHost(
                    host,
                    .keepAliveAnswer(host: host, session: session, .sessionLost("the cluster session expired"))
                )
            }
        case .put(let folder, let session, let name):
            guard store.sessions[session] != nil else {
                sendToHost(host, .putAnswer(host: host, session: session, folder: folder, name: name, failed: true))
                return
            }
            store.revision += 1
            let key = Key(name: name, host: host, session: session, revision: store.revision)
            store.keys[folder, default: []].append(key)
            // One put in twenty is applied but answered as failed (a timeout, an error from the member a retry went
            // to): the host deletes the key it believes it never got, and must not have held the folder on it.
            let failed = random(20) == 0
            if failed { counts.appliedButFailed += 1 }
            sendToHost(host, .putAnswer(host: host, session: session, folder: folder, name: name, failed: failed))
            notifyWatchers(folder, .put(.init(name: name, createRevision: key.revision, host: "host\(host)")))
        case .delete(let folder, let session, let name):
            if store.keys[folder]?.contains(where: { $0.name == name }) == true {
                store.revision += 1
                store.keys[folder]?.removeAll { $0.name == name }
                notifyWatchers(folder, .deleted(name: name))
            }
            sendToHost(host, .deleteAnswer(host: host, session: session, folder: folder, name: name))
        }
    }

    /// Sessions renewed by nothing for their time to live expire: their keys go, all at one revision (etcd deletes a
    /// lease's keys in one transaction), and the watchers hear each.
    private mutating func expireSessions() {
        for (session, entry) in store.sessions.sorted(by: { $0.key < $1.key }) where entry.expiresAt <= now {
            store.sessions[session] = nil
            trace.append("\(now) ms: the store expired host\(entry.host)'s session \(session)")
            store.revision += 1
            var deleted: [(Int, String)] = []
            for folder in folders.indices {
                for key in store.keys[folder] ?? [] where key.session == session {
                    store.keys[folder]?.removeAll { $0.name == key.name }
                    deleted.append((folder, key.name))
                }
            }
            // One watch message for the revision.
            for (index, (folder, name)) in deleted.enumerated() {
                notifyWatchers(folder, .deleted(name: name), endsBatch: index == deleted.count - 1)
            }
        }
    }

    /// Every host's watch reports `change` (each in order on its own channel; a host with no key there ignores it).
    /// `endsBatch`: the last change of its watch message (a revision's changes come in one).
    private mutating func notifyWatchers(_ folder: Int, _ change: SharedFolderKeys.Change, endsBatch: Bool = true) {
        for host in hosts.indices {
            let at = max(now + delay(), hosts[host].lastWatched)
            hosts[host].lastWatched = at
            hosts[host].watchQueue.append((folder, change, store.revision, endsBatch))
            schedule(.watched(host: host), at: at)
        }
    }

    // MARK: The adapter (ClusterHost+Keys.swift)

    private mutating func putAnswered(
        _ host: Int,
        session: Int,
        folder: Int,
        name: String,
        failed: Bool
    ) throws(Failure) {
        guard hosts[host].session == session else { return }
        if failed {
            guard hosts[host].views[folder]?.forget(name: name) == true else { return }
            // The put may have been applied: its key is deleted (ClusterHost.keyPutFailed).
            sendToStore(host, .delete(folder: folder, session: session, name: name))
            try handle(host, .keyFailed(folder: folders[folder], "requested lease not found"))
            return
        }
        // No list after the first.
        for event in hosts[host].views[folder]?.putAcknowledged(name: name, listsFrom: 1) ?? [] {
            try handle(host, event)
        }
    }

    private mutating func watched(
        _ host: Int,
        folder: Int,
        _ change: SharedFolderKeys.Change,
        revision: Int64,
        endsBatch: Bool
    ) throws(Failure) {
        // As ClusterHost.watched: where the host stands, after the message's last change, in every folder.
        let events = hosts[host].views[folder]?.watched(change, revision: revision, endsBatch: false) ?? []
        for event in events { try handle(host, event) }
        guard endsBatch else { return }
        for folder in folders.indices {
            for event in hosts[host].views[folder]?.endBatch() ?? [] { try handle(host, event) }
        }
    }

    // MARK: A host

    /// A claim arrives: granted at once when the gate is open and the table still admits (a daemon that wakes past
    /// its fence must not grant on a gate it opened before: it asks the table, whose time-based answer fences it),
    /// else it waits and the table hears of it.
    private mutating func arrive(_ host: Int, _ folder: Int) throws(Failure) {
        if hosts[host].gates[folder] == true, hosts[host].table.admits(folders[folder], at: .milliseconds(now)) {
            try grant(host, folder)
        } else {
            hosts[host].waiting[folder, default: 0] += 1
            try handle(host, .claimArrived(folder: folders[folder]))
        }
    }

    private mutating func grant(_ host: Int, _ folder: Int) throws(Failure) {
        // 3. Only while the table admits, or while carrying out its admit.
        guard
            admitting.map({ $0 == (host, folder) }) == true
                || hosts[host].table.admits(folders[folder], at: .milliseconds(now))
        else {
            throw failure("host\(host) granted in f\(folder) while its table does not admit there")
        }
        for other in hosts.indices where other != host && !deletedUnheard.contains(other) {
            // 1. No other host may still grant there.
            if hosts[other].gates[folder] == true, hosts[other].table.admits(folders[folder], at: .milliseconds(now)) {
                throw failure("host\(host) granted in f\(folder) while host\(other) may still grant there")
            }
            // 2. What another host still runs there was granted by a host past its fence.
            for (id, claim) in hosts[other].granted where claim.folder == folder && claim.endsAt > now {
                if !claim.lost && !pastFence(other) {
                    throw failure("host\(host) granted in f\(folder) while host\(other)'s claim \(id) still runs there")
                }
            }
        }
        nextClaim += 1
        let length = random(10) == 0 ? 500 + random(3_000) : 1 + random(200)
        hosts[host].granted[nextClaim] = Claim(folder: folder, endsAt: now + length)
        schedule(.finish(host: host, claim: nextClaim), at: now + length)
        counts.grants += 1
        if lastGranter[folder] != nil, lastGranter[folder] != host { counts.handovers += 1 }
        lastGranter[folder] = host
    }

    private var nextClaim = 0
    private var admitting: (host: Int, folder: Int)?
    private var lastGranter: [Int: Int] = [:]

    /// Whether `host`'s session fence has passed (by its table's own clock reading: now).
    private func pastFence(_ host: Int) -> Bool {
        if case .live(let fenceAt) = hosts[host].table.snapshot().session { return .milliseconds(now) >= fenceAt }
        return true
    }

    private mutating func finish(_ host: Int, _ claim: Int) throws(Failure) {
        guard let ended = hosts[host].granted.removeValue(forKey: claim) else { return }
        if hosts[host].draining.contains(ended.folder),
            !hosts[host].granted.values.contains(where: { $0.folder == ended.folder })
        {
            hosts[host].draining.remove(ended.folder)
            try handle(host, .localClaimsEnded(folder: folders[ended.folder]))
        }
    }

    private mutating func handle(_ host: Int, _ event: HostLeaseEvent) throws(Failure) {
        switch event {
        case .sessionLost, .keyDeleted: deletedUnheard.remove(host)
        default: break
        }
        let effects = hosts[host].table.handle(event, at: .milliseconds(now))
        trace.append("\(now) ms host\(host) \(event) -> \(effects)")
        for effect in effects { try carryOut(effect, on: host) }
    }

    private mutating func carryOut(_ effect: HostLeaseEffect, on host: Int) throws(Failure) {
        switch effect {
        case .putKey(let path):
            guard let session = hosts[host].session else {
                sendLocal(host, .keyFailed(folder: path, "no cluster session"))
                return
            }
            let folder = index(of: path)
            hosts[host].puts += 1
            let name = "f\(folder)/host\(host)/\(session).\(hosts[host].puts)"
            hosts[host].views[folder]?.putSent(name: name)
            sendToStore(host, .put(folder: folder, session: session, name: name))
        case .deleteKey(let path):
            let folder = index(of: path)
            guard let session = hosts[host].session, let name = hosts[host].views[folder]?.leave() else {
                sendLocal(host, .keyDeleted(folder: path))
                return
            }
            sendToStore(host, .delete(folder: folder, session: session, name: name))
        case .admit(let path, _):
            // The claims that waited are granted by the admit, even when the same batch drains the folder again
            // (another host waits, and the minimum hold has passed): the host served its turn in revision order.
            let folder = index(of: path)
            hosts[host].gates[folder] = true
            let waiting = hosts[host].waiting.removeValue(forKey: folder) ?? 0
            admitting = (host, folder)
            defer { admitting = nil }
            for _ in 0..<waiting { try grant(host, folder) }
        case .holdBack(let path):
            hosts[host].gates[index(of: path)] = false
        case .drain(let path):
            let folder = index(of: path)
            if hosts[host].granted.values.contains(where: { $0.folder == folder }) {
                hosts[host].draining.insert(folder)
            } else {
                sendLocal(host, .localClaimsEnded(folder: path))
            }
        case .failClaims(let path, _):
            counts.failed += hosts[host].waiting.removeValue(forKey: index(of: path)) ?? 0
        case .claimsLost(let path, _):
            let folder = index(of: path)
            hosts[host].draining.remove(folder)
            for (id, claim) in hosts[host].granted where claim.folder == folder {
                hosts[host].granted[id]?.lost = true
                counts.lost += 1
            }
        case .replaceSession:
            counts.fences += 1
            hosts[host].session = nil
            hosts[host].draining = []
            for folder in hosts[host].views.keys { hosts[host].views[folder]?.sessionReplaced() }
            openSession(host)
        case .startTimer(let timer, let after):
            let generation = (hosts[host].timerGenerations[timer] ?? 0) + 1
            hosts[host].timerGenerations[timer] = generation
            schedule(.timer(host: host, timer, generation: generation), at: now + max(milliseconds(after), 0))
        case .cancelTimer(let timer):
            hosts[host].timerGenerations[timer] = (hosts[host].timerGenerations[timer] ?? 0) + 1
        }
    }

    /// An event the host's own daemon reports (not from the store): handled after the current one.
    private mutating func sendLocal(_ host: Int, _ event: HostLeaseEvent) {
        schedule(.local(host: host, event), at: now)
    }

    private func index(of path: ItemPath) -> Int { folders.firstIndex(of: path)! }

    private func milliseconds(_ duration: Duration) -> Int {
        let parts = duration.components
        return Int(parts.seconds) * 1_000 + Int(parts.attoseconds / 1_000_000_000_000_000)
    }

    // MARK: The end

    /// 4. After the faults and the claims, nothing waits, and each gate agrees with its table.
    private func checkDrained() throws(Failure) {
        for host in hosts.indices {
            for (folder, count) in hosts[host].waiting where count > 0 {
                throw failure("host\(host) still has \(count) claims waiting in f\(folder) after the drain")
            }
            for (folder, open) in hosts[host].gates
            where open != hosts[host].table.admits(folders[folder], at: .milliseconds(now)) {
                throw failure(
                    "host\(host)'s gate for f\(folder) is \(open ? "open" : "closed"), its table says otherwise"
                )
            }
        }
    }

    private func failure(_ message: String) -> Failure {
        Failure(seed: seed, time: now, message: message, trace: Array(trace.suffix(60)))
    }
}

/// A min-heap of actions by time, then by the order they were scheduled in (so equal times keep their order).
private struct EventQueue<Action> {
    private var heap: [(time: Int, order: Int, action: Action)] = []

    mutating func push(_ action: Action, at time: Int, order: Int) {
        heap.append((time, order, action))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (Int, Int, Action)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < heap.count, Self.before(heap[left], heap[first]) { first = left }
            if right < heap.count, Self.before(heap[right], heap[first]) { first = right }
            guard first != parent else { break }
            heap.swapAt(parent, first)
            parent = first
        }
        return (top.time, top.order, top.action)
    }

    private static func before(
        _ a: (time: Int, order: Int, action: Action),
        _ b: (time: Int, order: Int, action: Action)
    ) -> Bool {
        (a.time, a.order) < (b.time, b.order)
    }
}
