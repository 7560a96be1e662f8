import FCToolkit
import FCVersionStore
import Foundation

// The daemon side of the version store seam (issue 15): each call is one `VersionStoreRequest` frame over the
// client's daemon connection, answered by one `VersionStoreReply` (docs/PROTOCOL.md §8). The client's
// `VersionRequestTable` (in its `ClaimTable`) matches replies to calls: the transport hands each reply to the client
// as `InboundMessage.versionReply`, and the client fails a lost connection's calls.

/// ``VersionStoreAccess`` through the daemon.
///
/// - Important: Thread-safe; each call blocks its thread until the daemon answers, the connection is lost, or
///   ``VersionRequestTable/timeout`` passes. Never call it on the connection's reader thread.
struct DaemonVersionStoreAccess: VersionStoreAccess {
    let transport: DaemonTransport
    /// The client's table of calls waiting for replies.
    let table: VersionRequestTable
    /// The transport to use now, connecting anew if needed (the client's current one).
    let current: @Sendable () -> DaemonTransport?

    /// One call; a request that could not even be written (a daemon that went away, unseen yet by the listener)
    /// did nothing, so it goes once more on a new connection. Before, such a call failed: right after a daemon's
    /// restart, `otherVersionsOfItem(at:)` answered `nil` for a document with versions (CI, stop 53). A request that
    /// changes nothing (`idempotent`: a listing, a lookup) goes once more too when its connection was lost after it
    /// was written: asking again is harmless, and the next daemon has the same store.
    private func call(_ request: VersionStoreRequest, idempotent: Bool = false) throws -> VersionStoreReply.Answer {
        do {
            return try table.call(request, on: transport)
        } catch let lost as VersionRequestLost where !lost.written || idempotent {
            guard let next = current(), next !== transport else { throw lost.error }
            do {
                return try table.call(request, on: next)
            } catch let again as VersionRequestLost {
                throw again.error
            }
        } catch let lost as VersionRequestLost {
            throw lost.error
        }
    }

    private func one(_ reply: VersionStoreReply.Answer) -> StoredVersion? {
        reply.versions.first
    }

    func versions(of itemPath: String) throws -> [StoredVersion] {
        try call(.list(itemPath: itemPath), idempotent: true).versions
    }
    func version(id: String) throws -> StoredVersion? { one(try call(.find(id: id), idempotent: true)) }
    func add(item: String, contentsOf: String, byMoving: Bool, conflict: ConflictOrigin?) throws -> StoredVersion {
        let reply = try call(.add(item: item, contentsPath: contentsOf, byMoving: byMoving, conflict: conflict))
        guard let added = one(reply) else {
            throw VersionStoreError(.storeUnavailable, "filecoordd answered an add with no version.")
        }
        return added
    }
    func remove(id: String) throws -> StoredVersion? { one(try call(.remove(id: id))) }
    func removeAll(of itemPath: String) throws -> [StoredVersion] { try call(.removeAll(itemPath: itemPath)).versions }
    func markResolved(id: String) throws -> StoredVersion? { one(try call(.resolve(id: id))) }
    func markDiscardable(id: String) throws -> Bool { try call(.discardable(id: id)).found }
    func replaceItem(at itemPath: String, with id: String, byMoving: Bool) throws -> String {
        try call(.replace(itemPath: itemPath, id: id, byMoving: byMoving)).path
    }
    func itemMoved(from: String, to: String) throws { _ = try call(.moved(from: from, to: to)) }
    func makeTemporaryDirectory() throws -> String { try call(.temporaryDirectory).path }
}

/// A version store request whose connection was lost before its reply came: when it was `written`, whether it was
/// done is unknown; when it could not be written, nothing was done.
struct VersionRequestLost: Error {
    let error: VersionStoreError
    let written: Bool
}

/// One client's version store requests waiting for their replies, by request id, across its connections.
///
/// - Important: Thread-safe (one lock); entries leave when answered, failed or timed out, so the table holds only
///   calls that are blocked right now.
final class VersionRequestTable: Sendable {
    /// How long a call waits for the daemon before it fails (the daemon answers store calls off its event loop).
    static let timeout: TimeInterval = 120

    /// One blocked call. `outcome` is written under the table's lock, before `done` is signalled.
    // @unchecked: `outcome` is written under the table's lock before `done` is signalled, and read after.
    private final class Waiter: @unchecked Sendable {
        let transport: ObjectIdentifier
        let done = DispatchSemaphore(value: 0)
        var outcome: Result<VersionStoreReply.Answer, VersionStoreError>?
        /// Whether it failed because its connection was lost (written with `outcome`).
        var connectionLost = false
        init(transport: ObjectIdentifier) { self.transport = transport }
    }

    private struct State {
        var nextID: UInt64 = 0
        var waiting: [UInt64: Waiter] = [:]
    }
    private let state = Locked(State())

    /// Sends `request` (its id set here) on `transport` and waits for the reply; a reply that carries an error is
    /// thrown as ``VersionStoreError``, a connection lost before the reply as ``VersionRequestLost``.
    func call(_ request: VersionStoreRequest, on transport: DaemonTransport) throws -> VersionStoreReply.Answer {
        let waiter = Waiter(transport: ObjectIdentifier(transport))
        let id = state.withLock { state in
            state.nextID += 1
            state.waiting[state.nextID] = waiter
            return state.nextID
        }
        do {
            try transport.sendVersionRequest(request, id: id)
        } catch {
            state.withLock { _ = $0.waiting.removeValue(forKey: id) }
            throw VersionRequestLost(
                error: VersionStoreError(.storeUnavailable, "The request could not be sent to filecoordd (\(error))."),
                written: false
            )
        }
        // Waits in slices, so that a daemon that stopped answering is noticed by the keepalive (issue 28).
        let since = transport.keepalive.now
        let slice = transport.keepalive.enabled ? transport.keepalive.policy.checkEvery.timeInterval : Self.timeout
        while waiter.done.wait(timeout: .now() + slice) == .timedOut {
            if transport.keepalive.now - since >= .milliseconds(Int64(Self.timeout * 1000)) {
                state.withLock { _ = $0.waiting.removeValue(forKey: id) }
                throw VersionStoreError(
                    .storeUnavailable,
                    "filecoordd did not answer a version store request in \(Int(Self.timeout)) s; check its log."
                )
            }
            transport.checkKeepalive(waitingSince: since)
        }
        let (outcome, connectionLost) = state.withLock { _ in (waiter.outcome!, waiter.connectionLost) }
        if connectionLost, case .failure(let error) = outcome { throw VersionRequestLost(error: error, written: true) }
        return try outcome.get()
    }

    /// A reply arrived (on the reader thread).
    func complete(_ reply: VersionStoreReply) {
        let waiter = state.withLock { state in
            let waiter = state.waiting.removeValue(forKey: reply.requestID)
            waiter?.outcome = reply.result
            return waiter
        }
        guard let waiter else { return }
        waiter.done.signal()
    }

    /// `transport` is gone: its calls fail (whether the daemon made the change is unknown to them).
    func transportLost(_ transport: DaemonTransport) {
        fail(
            on: transport,
            because: "The connection to filecoordd was lost during a version store call; check the versions before "
                + "trying again.",
            connectionLost: true
        )
    }

    /// The calls sent on `transport` fail with `message` (whether the daemon made the change is unknown to them).
    func fail(on transport: DaemonTransport, because message: String, connectionLost: Bool = false) {
        let id = ObjectIdentifier(transport)
        let lost = state.withLock { state -> [Waiter] in
            let lost = state.waiting.filter { $0.value.transport == id }
            for key in lost.keys { state.waiting[key] = nil }
            for waiter in lost.values {
                waiter.outcome = .failure(VersionStoreError(.storeUnavailable, message))
                waiter.connectionLost = connectionLost
            }
            return Array(lost.values)
        }
        for waiter in lost { waiter.done.signal() }
    }
}
