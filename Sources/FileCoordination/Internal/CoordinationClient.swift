import Dispatch
import FCCore
import FCProtocol
import Foundation
import Logging
import Synchronization

/// The process's side of file coordination: its presenters, the claims its coordinators wait for, and the
/// transport to the arbiter. One per process (``shared``).
///
/// - Important: Thread-safe. `lock` protects the tables below; it is never held while user code (presenter
///   callbacks, accessors) runs or while the transport is called.
final class CoordinationClient: @unchecked Sendable {
    /// The process's client.
    static let shared = CoordinationClient()

    let clientID = ClientID(1)
    private let lock = NSLock()
    /// Serialises connecting, so that one thread connects (or starts the daemon) while the others wait for it.
    private let connectLock = NSLock()
    private var transport: (any ArbiterTransport)?
    /// Set while the process coordinates in process: by choice (`FILECOORD_ARBITER=in-process`), or because no
    /// daemon answers and none can be started (SEMANTICS.md §9; then ``fallbackReason`` says why, and a probe
    /// thread moves the process to a daemon once one answers).
    private var local: LocalArbiterTransport?
    /// Why the process coordinates in process although it did not choose to; `nil` otherwise.
    private var fallbackReason: String?
    /// A thread is probing for a daemon to leave the in-process fallback (at most one).
    private var probing = false
    /// A thread is reconnecting for the presenters after the connection was lost (at most one).
    private var reconnecting = false
    /// How the daemon is reached (from the environment at the first use).
    private let policy = ConnectionPolicy.fromEnvironment(ProcessInfo.processInfo.environment)
    private var nextID: UInt64 = 0
    private var presenters: [PresenterID: PresenterEntry] = [:]
    private var presenterIDs: [ObjectIdentifier: PresenterID] = [:]
    private var waiters: [ClaimID: ClaimWaiter] = [:]
    /// The requests of claims sent and not yet granted or failed.
    private var requested: [ClaimID: ClaimRequest] = [:]
    /// The claims granted and not finished: their accessors run. If the daemon crashes meanwhile, they are declared
    /// again to the next one (`isHeld`), which takes nothing that conflicts until they finish (issue 11).
    private var held: [ClaimID: ClaimRequest] = [:]
    private var reacquirers: [RequestID: @Sendable () -> Void] = [:]
    /// The error objects presenters failed with, so that the caller gets the very object (SEMANTICS.md §3).
    private var presenterErrors: [PresenterID: any Error] = [:]

    /// The ids of the serial queues registered presenters run on (``PresenterEntry/serialQueue``): small numbers,
    /// so that no address leaves the process. An id lives while a presenter on its queue is registered.
    private var queueIDs: [ObjectIdentifier: UInt64] = [:]
    /// Registered presenters by the id of the serial queue they run on, lowest id first.
    private var presentersByQueue: [UInt64: [PresenterID]] = [:]
    private var nextQueueID: UInt64 = 0

    final class PresenterEntry {
        let presenter: any NSFilePresenter
        var path: ItemPath?
        /// The presenter's operation queue as it was at registration. Kept alive here, so that its
        /// `ObjectIdentifier` names no other queue while the presenter is registered.
        let queue: OperationQueue
        /// The queue's id for the arbiter when it is serial (`OperationQueue.main`, or one operation at a time):
        /// a coordinated call made on it holds it (SEMANTICS.md §6). `nil` for a concurrent queue. Set under the
        /// client's lock when the presenter is registered.
        var serialQueue: UInt64?
        init(presenter: any NSFilePresenter, path: ItemPath?) {
            self.presenter = presenter
            self.path = path
            self.queue = presenter.presentedItemOperationQueue
        }

        /// `true` for `OperationQueue.main` and for queues that run one operation at a time.
        static func isSerial(_ queue: OperationQueue) -> Bool {
            queue === OperationQueue.main || queue.maxConcurrentOperationCount == 1
        }

        func registration(id: PresenterID, client: ClientID) -> PresenterRegistration {
            PresenterRegistration(
                id: id,
                client: client,
                path: path,
                callbacks: presenter.presentedItemCallbacks.core,
                isPackage: presenter.presentedItemIsPackage,
                serialQueue: serialQueue
            )
        }
    }

    private init() {
        if policy.inProcessByChoice {
            local = makeLocal()
            transport = local
        }
    }

    private func makeLocal() -> LocalArbiterTransport {
        let local = LocalArbiterTransport(
            configuration: ArbiterConfiguration(),
            logger: { record in
                let level: Logger.Level =
                    switch record.level {
                    case .trace: .trace
                    case .debug: .debug
                    case .info: .info
                    case .notice: .notice
                    case .warning: .warning
                    case .error: .error
                    }
                FileCoordinationLogging.logger.log(level: level, "\(record)")
            },
            delegate: self
        )
        local.submit(
            .clientConnected(
                ClientInfo(
                    id: clientID,
                    pid: ProcessInfo.processInfo.processIdentifier,
                    name: ProcessInfo.processInfo.processName
                )
            )
        )
        return local
    }

    func newID() -> UInt64 {
        lock.withLock {
            nextID += 1
            return nextID
        }
    }

    /// Sends an event to the arbiter. A claim connects first if needed (starting the daemon) and fails with the
    /// reason if no arbiter can be had; other events go only to a live transport: without one they belong to a
    /// connection that is gone (its claims and presenters went with it), and the next connection registers every
    /// presenter again.
    func submit(_ event: ArbiterEvent) {
        if case .claimRequested(let request) = event {
            switch currentTransport() {
            case .success(let transport):
                if let waiter = lock.withLock({ waiters[request.id] }) {
                    transport.submitClaim(request, waiter: waiter)
                } else {
                    transport.submit(event)
                }
            case .failure(let error): fail(request.id, with: error)
            }
            return
        }
        let transport: (any ArbiterTransport)? = lock.withLock {
            // A claim that ends is no longer held (one lock with reading the transport: this is every call's path).
            if case .claimFinished(let claim, _) = event { held[claim] = nil }
            return self.transport
        }
        transport?.submit(event)
    }

    /// The transport to use now: the live connection; or a new one (the daemon started if needed, this process's
    /// presenters registered again), tried again after failures that may pass until the connect deadline; or the
    /// in-process arbiter, by choice or when no daemon answers and none can be started (``ConnectionPolicy``).
    /// With `retrying` false, one attempt only (a presenter's registration must not block its caller: it is kept,
    /// and registered by the reconnecting thread).
    fileprivate func currentTransport(retrying: Bool = true) -> Result<any ArbiterTransport, FileCoordinationError> {
        if let transport = lock.withLock({ transport }) { return .success(transport) }
        connectLock.lock()
        defer { connectLock.unlock() }
        if let transport = lock.withLock({ transport }) { return .success(transport) }
        let chosen: any ArbiterTransport
        var policy = self.policy
        if !retrying { policy.connectDeadline = .zero }
        switch ArbiterConnection.connect(policy: policy, client: clientID, delegate: self) {
        case .daemon(let daemon):
            chosen = daemon
        case .noDaemon(let reason):
            FileCoordinationLogging.logger.warning(
                """
                coordinating in this process only: \(reason) Accesses are coordinated with this process's own \
                presenters and calls, not with other processes; the process moves to filecoordd as soon as one \
                answers.
                """
            )
            let local = makeLocal()
            lock.withLock {
                self.local = local
                fallbackReason = reason
            }
            chosen = local
            startProbing()
        case .unreachable(let error):
            FileCoordinationLogging.logger.error("no arbiter: \(error.message)")
            if lock.withLock({ !presenters.isEmpty }) { startReconnecting() }
            return .failure(error)
        }
        register(on: chosen)
        return .success(chosen)
    }

    /// Makes `chosen` the transport and registers every presenter of this process with it.
    private func register(on chosen: any ArbiterTransport) {
        let (registrations, holding): ([PresenterRegistration], [ClaimRequest]) = lock.withLock {
            transport = chosen
            let registrations = presenters.sorted { $0.key < $1.key }.map { id, entry in
                entry.registration(id: id, client: clientID)
            }
            return (registrations, held.values.sorted { $0.id < $1.id })
        }
        for registration in registrations { chosen.submit(.presenterAdded(registration)) }
        // Claims whose accessors still run are declared again: a new daemon (after a crash) knew nothing of them.
        for request in holding {
            var declared = request
            declared.isHeld = true
            declared.timeout = nil
            chosen.submit(.claimRequested(declared))
        }
        // A claim that finished while it was being declared may have sent its finish first: send it again (a second
        // finish of a claim the daemon no longer has is ignored).
        let finished = lock.withLock { holding.filter { held[$0.id] == nil } }
        for request in finished { chosen.submit(.claimFinished(request.id, created: [])) }
    }

    /// While the process coordinates in process for want of a daemon, looks for one (a daemon another process
    /// started, or an executable that appeared) with a backoff from 0.2 s to 5 s, and moves there once this
    /// process's in-process arbiter holds no claim: from then on every claim goes to the daemon, and the presenters
    /// are registered there.
    private func startProbing() {
        guard
            lock.withLock({ () -> Bool in
                defer { probing = true }
                return !probing
            })
        else { return }
        let thread = Thread { [self] in
            var delay = 0.2
            while lock.withLock({ fallbackReason != nil }) {
                Thread.sleep(forTimeInterval: delay)
                delay = min(delay * 2, 5)
                guard
                    case .success(let daemon) = DaemonTransport.connect(
                        socketPath: policy.socketPath,
                        client: clientID,
                        delegate: self,
                        handshakeTimeout: policy.handshakeTimeout
                    )
                else { continue }
                // Wait for the in-process arbiter to be idle, as long as the new connection lasts.
                while !daemon.isLost {
                    if moveToDaemon(daemon) {
                        lock.withLock { probing = false }
                        return
                    }
                    Thread.sleep(forTimeInterval: 0.05)
                }
            }
            lock.withLock { probing = false }
        }
        thread.name = "FileCoordination.probe"
        thread.start()
    }

    /// Leaves the in-process fallback for `daemon` if the in-process arbiter holds no claim.
    private func moveToDaemon(_ daemon: DaemonTransport) -> Bool {
        connectLock.lock()
        defer { connectLock.unlock() }
        guard let local = lock.withLock({ fallbackReason != nil ? self.local : nil }) else { return true }
        guard local.retireIfIdle(reroute: { CoordinationClient.shared.submit($0) }) else { return false }
        ArbiterConnection.sawDaemon.store(true, ordering: .relaxed)
        lock.withLock {
            self.local = nil
            fallbackReason = nil
        }
        register(on: daemon)
        FileCoordinationLogging.logger.warning(
            "filecoordd answers now: this process coordinates through it again",
            metadata: ["daemon.pid": "\(daemon.daemonPID)"]
        )
        return true
    }

    /// After the connection was lost, reconnects for the presenters (they must hear what other processes do),
    /// trying again with a backoff up to 5 s for as long as the process has presenters.
    private func startReconnecting() {
        guard
            lock.withLock({ () -> Bool in
                defer { reconnecting = true }
                return !reconnecting
            })
        else { return }
        let thread = Thread { [self] in
            var delay = 0.1
            while lock.withLock({ transport == nil && (!presenters.isEmpty || !held.isEmpty) }) {
                // Cleared first, so that a failure inside asks for no second thread while this one runs.
                if case .success = currentTransport() { break }
                Thread.sleep(forTimeInterval: delay)
                delay = min(delay * 2, 5)
            }
            lock.withLock { reconnecting = false }
        }
        thread.name = "FileCoordination.reconnect"
        thread.start()
    }

    /// Where version store calls go (issue 15): the daemon's connection (connecting first, as a claim does), `nil`
    /// when this process coordinates in process, or the error that leaves no arbiter to ask.
    func versionStoreTransport() -> Result<DaemonTransport?, FileCoordinationError> {
        currentTransport().map { $0 as? DaemonTransport }
    }

    /// The in-process arbiter's state, for tests (`nil` when a daemon arbitrates).
    func snapshot() -> ArbiterSnapshot? { lock.withLock { local }?.snapshot() }

    // MARK: Presenters

    func addPresenter(_ presenter: any NSFilePresenter) {
        // Connect first: a new connection registers the presenters already known, and this one must not be among
        // them as well as sent below. Without an arbiter it is kept, and registered when one is reached.
        if case .failure = currentTransport(retrying: false) { startReconnecting() }
        let key = ObjectIdentifier(presenter)
        let path = presenter.presentedItemURL.flatMap { try? URLMapping.canonicalPath($0) }
        // The presenter's properties are the app's code: read outside the lock.
        let entry = PresenterEntry(presenter: presenter, path: path)
        let registration: PresenterRegistration? = lock.withLock {
            guard presenterIDs[key] == nil else { return nil }
            nextID += 1
            let id = PresenterID(nextID)
            presenterIDs[key] = id
            presenters[id] = entry
            if PresenterEntry.isSerial(entry.queue) {
                let queueKey = ObjectIdentifier(entry.queue)
                let queue: UInt64
                if let known = queueIDs[queueKey] {
                    queue = known
                } else {
                    nextQueueID += 1
                    queue = nextQueueID
                    queueIDs[queueKey] = queue
                }
                entry.serialQueue = queue
                presentersByQueue[queue, default: []].append(id)
            }
            return entry.registration(id: id, client: clientID)
        }
        guard let registration else { return }
        submit(.presenterAdded(registration))
    }

    func removePresenter(_ presenter: any NSFilePresenter) {
        let id: PresenterID? = lock.withLock {
            guard let id = presenterIDs.removeValue(forKey: ObjectIdentifier(presenter)) else { return nil }
            if let entry = presenters.removeValue(forKey: id), let queue = entry.serialQueue {
                presentersByQueue[queue]?.removeAll { $0 == id }
                if presentersByQueue[queue]?.isEmpty == true {
                    presentersByQueue[queue] = nil
                    queueIDs[ObjectIdentifier(entry.queue)] = nil
                }
            }
            presenterErrors[id] = nil
            return id
        }
        if let id { submit(.presenterRemoved(id)) }
    }

    var allPresenters: [any NSFilePresenter] {
        lock.withLock { presenters.sorted { $0.key < $1.key }.map(\.value.presenter) }
    }

    func presenterID(of presenter: any NSFilePresenter) -> PresenterID? {
        lock.withLock { presenterIDs[ObjectIdentifier(presenter)] }
    }

    /// The presenter whose serial queue the calling thread holds, if any, and the callback of it that runs here:
    /// the presenter whose callback runs here, else a registered presenter whose queue is the one running this
    /// code (no callback). Code on the main thread or in a block of the main dispatch queue counts as running
    /// `OperationQueue.main` (with `dispatchMain()` on Linux, the main queue's blocks run on another thread). A
    /// coordinated call made here keeps that queue, and the presenters on it, from answering until it returns: the
    /// deadlock detector must know, and its report names the callback (SEMANTICS.md §6).
    func presenterQueueHeldHere() -> (presenter: PresenterID, callback: PresenterCallbacks?)? {
        if let running = ThreadContext.currentCallback { return (running.presenter, running.callback) }
        let queue = Self.isOnMainQueue ? OperationQueue.main : OperationQueue.current
        guard let queue, PresenterEntry.isSerial(queue) else { return nil }
        let presenter = lock.withLock { queueIDs[ObjectIdentifier(queue)].flatMap { presentersByQueue[$0]?.first } }
        return presenter.map { ($0, nil) }
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
        guard let presenter = lock.withLock({ presenters[id]?.presenter }) else { return }
        let path = presenter.presentedItemURL.flatMap { try? URLMapping.canonicalPath($0) }
        let changed: Bool = lock.withLock {
            guard let entry = presenters[id], entry.path != path else { return false }
            entry.path = path
            return true
        }
        if changed { submit(.presenterURLChanged(id, to: path)) }
    }

    // MARK: Claims

    /// Registers the waiter of a claim about to be sent, and its request (kept until the claim ends, so that a claim
    /// still held when the daemon crashes can be declared again to the next one).
    func register(_ waiter: ClaimWaiter, for request: ClaimRequest) {
        lock.withLock {
            waiters[request.id] = waiter
            requested[request.id] = request
        }
    }

    // MARK: Inbound messages (on the transport's reading thread, in the arbiter's order)

    func receive(_ message: InboundMessage) {
        switch message {
        case .granted(let claim, let paths):
            lock.withLock { () -> ClaimWaiter? in
                if let request = requested.removeValue(forKey: claim) { held[claim] = request }
                return waiters.removeValue(forKey: claim)
            }?.resume(.granted(paths))
        case .failed(let claim, let error):
            lock.withLock { () -> ClaimWaiter? in
                requested[claim] = nil
                return waiters.removeValue(forKey: claim)
            }?.resume(.failed(error))
        case .presenter(let message):
            deliver(message)
        case .versionReply(let reply):
            VersionRequestTable.shared.complete(reply)
        }
    }

    /// Runs one message on the presenter's queue; a request is answered through the transport, exactly once.
    private func deliver(_ message: PresenterMessage) {
        let entry = lock.withLock { presenters[message.presenter] }
        guard let entry else {
            // The presenter was removed after the arbiter sent this: answer for it.
            if let request = message.request { submit(.presenterReplied(request, .succeeded)) }
            return
        }
        let presenter = UncheckedPresenter(value: entry.presenter)
        let id = message.presenter
        entry.presenter.presentedItemOperationQueue.addOperation { [self] in
            ThreadContext.withCallback(message.kind.callback, of: id) {
                PresenterDelivery.run(message, on: presenter.value, client: self)
            }
        }
    }

    func storeReacquirer(_ reacquirer: @escaping @Sendable () -> Void, for request: RequestID) {
        lock.withLock { reacquirers[request] = reacquirer }
    }

    func takeReacquirer(_ request: RequestID) -> (@Sendable () -> Void)? {
        lock.withLock { reacquirers.removeValue(forKey: request) }
    }

    func recordPresenterError(_ error: any Error, presenter: PresenterID) {
        lock.withLock { presenterErrors[presenter] = error }
    }
}

/// A presenter carried to its own operation queue. Presenters are not `Sendable`; Apple's contract, which this
/// library keeps, is that their callbacks run on `presentedItemOperationQueue`, which is where this goes.
struct UncheckedPresenter: @unchecked Sendable {
    let value: any NSFilePresenter
}

extension CoordinationClient: TransportDelegate {
    func fail(_ claim: ClaimID, with error: any Error) {
        receive(.failed(claim, error))
    }

    func takePresenterError(of presenter: PresenterID) -> (any Error)? {
        lock.withLock { presenterErrors.removeValue(forKey: presenter) }
    }

    /// Every waiting call fails (never hangs); reacquirers of the lost daemon's requests are dropped; the next call
    /// reconnects, starting the daemon if needed, and registers this process's presenters again (SEMANTICS.md §7).
    func transportLost(_ error: FileCoordinationError, from lost: DaemonTransport) {
        VersionRequestTable.shared.transportLost(lost)
        let state: (waiting: [ClaimWaiter], presenting: Bool)? = lock.withLock {
            // A probe's connection that was never put in charge: nothing depended on it.
            guard let current = transport, current === lost else { return nil }
            transport = nil
            reacquirers = [:]
            defer { waiters = [:] }
            requested = [:]
            // Presenters must be registered again, and claims still held declared again, at once.
            return (Array(waiters.values), !presenters.isEmpty || !held.isEmpty)
        }
        guard let state else { return }
        FileCoordinationLogging.logger.warning("\(error.message)")
        for waiter in state.waiting { waiter.resume(.failed(error)) }
        // Presenters must not miss what other processes do meanwhile: reconnect now rather than at the next call.
        if state.presenting { startReconnecting() }
    }
}
