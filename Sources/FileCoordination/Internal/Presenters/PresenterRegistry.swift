import Dispatch
import FCCore
import FCSystem
import FCToolkit
import Foundation
import Synchronization

/// A client's presenters: their ids, the ids of the serial queues they run on, the errors they failed with and the
/// reacquirers they gave when they relinquished.
///
/// - Important: Thread-safe. `state` is never held while the app's code (a presenter's properties or callbacks)
///   runs: callers read a presenter's properties first, then register what they read.
final class PresenterRegistry: Sendable {
    /// One registered presenter. `path` and `serialQueue` change only under the registry's lock.
    // @unchecked: `path` and `serialQueue` change only under the registry's lock; the presenter runs on `queue`.
    final class Entry: @unchecked Sendable {
        let presenter: any NSFilePresenter
        var path: ItemPath?
        /// The presenter's operation queue as it was at registration. Kept alive here, so that its
        /// `ObjectIdentifier` names no other queue while the presenter is registered.
        let queue: OperationQueue
        /// The queue's id for the arbiter when it is serial (`OperationQueue.main`, or one operation at a time):
        /// a coordinated call made on it holds it (docs/SEMANTICS.md §6). `nil` for a concurrent queue.
        var serialQueue: UInt64?
        /// The file `path` named at registration (issue 26), sent with the registration so that claims through the
        /// file's other names reach the presenter.
        let identity: ItemIdentity?
        /// That file had other names (hard links) at registration: the daemon recalls every lease for it (issue 23).
        let hasOtherNames: Bool
        /// A did change standing in for subitem messages the presenter does not implement is queued and has not run
        /// yet: more such messages join it (``CoordinationClient``'s fallback, issue 37).
        let fallbackDidChangeQueued = Atomic<Bool>(false)
        /// When `addFilePresenter` ran (wall clock, ns): sent with every registration, so that the daemon reports a
        /// change made after it but before its watch was in place (issue 37).
        let registeredAt = ChangeTimes.now
        /// The presented item's change time at `addFilePresenter` (`nil`: it did not exist): the daemon reports the
        /// item changed exactly when its change time then differs.
        let changeTimeAtRegistration: Int64?

        init(
            presenter: any NSFilePresenter,
            path: ItemPath?,
            identity: ItemIdentity? = nil,
            hasOtherNames: Bool = false
        ) {
            self.presenter = presenter
            self.path = path
            self.identity = identity
            self.hasOtherNames = hasOtherNames
            self.queue = presenter.presentedItemOperationQueue
            self.changeTimeAtRegistration = path.flatMap {
                try? ChangeTimes.changeTime(of: String(decoding: $0.bytes, as: UTF8.self))
            }
        }

        func registration(id: PresenterID, client: ClientID) -> PresenterRegistration {
            PresenterRegistration(
                id: id,
                client: client,
                path: path,
                callbacks: presenter.presentedItemCallbacks.core,
                isPackage: presenter.presentedItemIsPackage,
                serialQueue: serialQueue,
                identity: identity,
                hasOtherNames: hasOtherNames,
                registeredAt: registeredAt,
                changeTimeAtRegistration: changeTimeAtRegistration
            )
        }
    }

    private struct State {
        var presenters: [PresenterID: Entry] = [:]
        var ids: [ObjectIdentifier: PresenterID] = [:]
        /// The ids of the serial queues registered presenters run on: small numbers, so that no address leaves the
        /// process. An id lives while a presenter on its queue is registered.
        var queueIDs: [ObjectIdentifier: UInt64] = [:]
        /// Registered presenters by the id of the serial queue they run on, lowest id first.
        var byQueue: [UInt64: [PresenterID]] = [:]
        var nextQueueID: UInt64 = 0
        /// The error objects presenters failed with, so that the caller gets the very object (docs/SEMANTICS.md §3).
        var errors: [PresenterID: any Error] = [:]
        var reacquirers: [RequestID: @Sendable () -> Void] = [:]
    }
    private let state = Locked(State())
    /// How many presenters are registered: stored under `state` at each change, read without it on every
    /// coordinated call (``CoordinationClient/presenterQueueHeldHere()``: with none, no queue is looked for).
    let registeredCount = Atomic<Int>(0)
    private let client: ClientID
    private let ids: IDSource

    init(client: ClientID, ids: IDSource) {
        self.client = client
        self.ids = ids
    }

    /// `true` for `OperationQueue.main` and for queues that run one operation at a time.
    static func isSerial(_ queue: OperationQueue) -> Bool {
        queue === OperationQueue.main || queue.maxConcurrentOperationCount == 1
    }

    /// Registers `entry`'s presenter; returns what to tell the arbiter, or `nil` if it was registered already.
    func add(_ entry: Entry) -> PresenterRegistration? {
        let key = ObjectIdentifier(entry.presenter)
        return state.withLock { state in
            guard state.ids[key] == nil else { return nil }
            let id = PresenterID(ids.next())
            state.ids[key] = id
            state.presenters[id] = entry
            registeredCount.store(state.presenters.count, ordering: .releasing)
            if Self.isSerial(entry.queue) {
                let queueKey = ObjectIdentifier(entry.queue)
                let queue: UInt64
                if let known = state.queueIDs[queueKey] {
                    queue = known
                } else {
                    state.nextQueueID += 1
                    queue = state.nextQueueID
                    state.queueIDs[queueKey] = queue
                }
                entry.serialQueue = queue
                state.byQueue[queue, default: []].append(id)
            }
            return entry.registration(id: id, client: client)
        }
    }

    /// Unregisters `presenter`; returns its id, or `nil` if it was not registered.
    func remove(_ presenter: any NSFilePresenter) -> PresenterID? {
        state.withLock { state in
            guard let id = state.ids.removeValue(forKey: ObjectIdentifier(presenter)) else { return nil }
            let removed = state.presenters.removeValue(forKey: id)
            registeredCount.store(state.presenters.count, ordering: .releasing)
            if let entry = removed, let queue = entry.serialQueue {
                state.byQueue[queue]?.removeAll { $0 == id }
                if state.byQueue[queue]?.isEmpty == true {
                    state.byQueue[queue] = nil
                    state.queueIDs[ObjectIdentifier(entry.queue)] = nil
                }
            }
            state.errors[id] = nil
            return id
        }
    }

    /// The registered presenters, in registration order.
    var all: [any NSFilePresenter] {
        state.withLock { $0.presenters.sorted { $0.key < $1.key }.map(\.value.presenter) }
    }

    var isEmpty: Bool { registeredCount.load(ordering: .acquiring) == 0 }

    func id(of presenter: any NSFilePresenter) -> PresenterID? {
        state.withLock { $0.ids[ObjectIdentifier(presenter)] }
    }

    func entry(_ id: PresenterID) -> Entry? {
        state.withLock { $0.presenters[id] }
    }

    /// Every registration, in registration order (to register them all on a new connection).
    var registrations: [PresenterRegistration] {
        state.withLock { state in
            state.presenters.sorted { $0.key < $1.key }.map { id, entry in entry.registration(id: id, client: client) }
        }
    }

    /// Records the path `id`'s presenter presents now; returns whether it changed.
    func update(_ id: PresenterID, path: ItemPath?) -> Bool {
        state.withLock { state in
            guard let entry = state.presenters[id], entry.path != path else { return false }
            entry.path = path
            return true
        }
    }

    /// The first registered presenter that runs on `queue`, if the queue is serial and has one.
    func presenter(runningOn queue: OperationQueue) -> PresenterID? {
        guard Self.isSerial(queue) else { return nil }
        return state.withLock { state in
            state.queueIDs[ObjectIdentifier(queue)].flatMap { state.byQueue[$0]?.first }
        }
    }

    func storeReacquirer(_ reacquirer: @escaping @Sendable () -> Void, for request: RequestID) {
        state.withLock { $0.reacquirers[request] = reacquirer }
    }

    func takeReacquirer(_ request: RequestID) -> (@Sendable () -> Void)? {
        state.withLock { $0.reacquirers.removeValue(forKey: request) }
    }

    /// Drops every reacquirer: the requests they answer belonged to a connection that is gone.
    func dropReacquirers() {
        state.withLock { $0.reacquirers = [:] }
    }

    func recordError(_ error: any Error, presenter: PresenterID) {
        state.withLock { $0.errors[presenter] = error }
    }

    func takeError(of presenter: PresenterID) -> (any Error)? {
        state.withLock { $0.errors.removeValue(forKey: presenter) }
    }
}
