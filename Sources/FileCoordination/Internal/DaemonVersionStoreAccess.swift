import FCProtocol
import FCVersionStore
import Foundation

// The daemon side of the version store seam (issue 15): each call is one `VersionStoreRequest` frame over the
// process's daemon connection, answered by one `VersionStoreReply` (docs/PROTOCOL.md §8). Kept in this one file so
// that it moves onto the rebuilt client transport (issue 12) as a whole: it needs only `send(_:)` of a frame, and
// the reader thread's `VersionRequestTable.shared.complete(_:)` and `transportLost(_:)`.

/// ``VersionStoreAccess`` through the daemon.
///
/// - Important: Thread-safe; each call blocks its thread until the daemon answers, the connection is lost, or
///   ``VersionRequestTable/timeout`` passes. Never call it on the connection's reader thread.
struct DaemonVersionStoreAccess: VersionStoreAccess {
    let transport: DaemonTransport

    private func call(
        _ operation: Filecoord_V1_VersionStoreOperation,
        _ fill: (inout Filecoord_V1_VersionStoreRequest) -> Void = { _ in }
    )
        throws -> Filecoord_V1_VersionStoreReply
    {
        var request = Filecoord_V1_VersionStoreRequest()
        request.operation = operation
        fill(&request)
        return try VersionRequestTable.shared.call(request, on: transport)
    }

    private func one(_ reply: Filecoord_V1_VersionStoreReply) -> StoredVersion? {
        reply.versions.first.map(Self.stored)
    }

    func versions(of itemPath: String) throws -> [StoredVersion] {
        try call(.list) { $0.itemPath = Data(itemPath.utf8) }.versions.map(Self.stored)
    }
    func version(id: String) throws -> StoredVersion? { one(try call(.find) { $0.versionID = id }) }
    func add(item: String, contentsOf: String, byMoving: Bool, conflict: ConflictOrigin?) throws -> StoredVersion {
        let reply = try call(.add) { request in
            request.itemPath = Data(item.utf8)
            request.contentsPath = Data(contentsOf.utf8)
            request.byMoving = byMoving
            if let conflict {
                request.savingComputer = conflict.computer
                if let originator = conflict.originator { request.originator = originator }
            }
        }
        guard let added = one(reply) else {
            throw VersionStoreError(.storeUnavailable, "filecoordd answered an add with no version.")
        }
        return added
    }
    func remove(id: String) throws -> StoredVersion? { one(try call(.remove) { $0.versionID = id }) }
    func removeAll(of itemPath: String) throws -> [StoredVersion] {
        try call(.removeAll) { $0.itemPath = Data(itemPath.utf8) }.versions.map(Self.stored)
    }
    func markResolved(id: String) throws -> StoredVersion? { one(try call(.resolve) { $0.versionID = id }) }
    func markDiscardable(id: String) throws -> Bool { try call(.discardable) { $0.versionID = id }.found }
    func replaceItem(at itemPath: String, with id: String, byMoving: Bool) throws -> String {
        let reply = try call(.replace) { request in
            request.itemPath = Data(itemPath.utf8)
            request.versionID = id
            request.byMoving = byMoving
        }
        return String(decoding: reply.path, as: UTF8.self)
    }
    func itemMoved(from: String, to: String) throws {
        _ = try call(.moved) { request in
            request.itemPath = Data(from.utf8)
            request.toPath = Data(to.utf8)
        }
    }
    func makeTemporaryDirectory() throws -> String {
        String(decoding: try call(.temporaryDirectory).path, as: UTF8.self)
    }

    static func stored(_ record: Filecoord_V1_StoredVersionRecord) -> StoredVersion {
        StoredVersion(
            id: record.id,
            itemPath: String(decoding: record.itemPath, as: UTF8.self),
            name: record.name,
            contentsPath: String(decoding: record.contentsPath, as: UTF8.self),
            savingComputer: record.hasSavingComputer ? record.savingComputer : nil,
            originator: record.hasOriginator ? record.originator : nil,
            modificationDate: Date(timeIntervalSince1970: record.modificationDate),
            addedDate: Date(timeIntervalSince1970: record.addedDate),
            isConflict: record.isConflict,
            isResolved: record.isResolved,
            isDiscardable: record.isDiscardable,
            itemGoneSince: nil
        )
    }
}

/// The version store requests waiting for their replies, by request id, across the process's connections.
///
/// - Important: Thread-safe (one lock); entries leave when answered, failed or timed out, so the table holds only
///   calls that are blocked right now.
final class VersionRequestTable: @unchecked Sendable {
    static let shared = VersionRequestTable()
    /// How long a call waits for the daemon before it fails (the daemon answers store calls off its event loop).
    static let timeout: TimeInterval = 120

    private final class Waiter {
        let transport: ObjectIdentifier
        let done = DispatchSemaphore(value: 0)
        var outcome: Result<Filecoord_V1_VersionStoreReply, VersionStoreError>?
        init(transport: ObjectIdentifier) { self.transport = transport }
    }

    private let lock = NSLock()
    private var nextID: UInt64 = 0
    private var waiting: [UInt64: Waiter] = [:]

    /// Sends `request` (its id set here) on `transport` and waits for the reply; a reply that carries an error is
    /// thrown as ``VersionStoreError``.
    func call(
        _ request: Filecoord_V1_VersionStoreRequest,
        on transport: DaemonTransport
    ) throws -> Filecoord_V1_VersionStoreReply {
        var request = request
        let waiter = Waiter(transport: ObjectIdentifier(transport))
        lock.withLock {
            nextID += 1
            request.requestID = nextID
            waiting[nextID] = waiter
        }
        let id = request.requestID
        do {
            try transport.sendVersionRequest(Filecoord_V1_Frame(.versionStoreRequest(request)))
        } catch {
            lock.withLock { waiting[id] = nil }
            throw VersionStoreError(.storeUnavailable, "The request could not be sent to filecoordd (\(error)).")
        }
        if waiter.done.wait(timeout: .now() + Self.timeout) == .timedOut {
            lock.withLock { waiting[id] = nil }
            throw VersionStoreError(
                .storeUnavailable,
                "filecoordd did not answer a version store request in \(Int(Self.timeout)) s; check its log."
            )
        }
        let reply = try lock.withLock { waiter.outcome! }.get()
        guard reply.errorCode == 0 else {
            let code: VersionStoreError.Code =
                switch reply.errorCode {
                case 1: .noSuchFile
                case 2: .noSuchVersion
                case 4: .ioFailure
                default: .storeUnavailable
                }
            throw VersionStoreError(code, reply.errorMessage)
        }
        return reply
    }

    /// A reply arrived (on the reader thread).
    func complete(_ reply: Filecoord_V1_VersionStoreReply) {
        guard let waiter = lock.withLock({ waiting.removeValue(forKey: reply.requestID) }) else { return }
        lock.withLock { waiter.outcome = .success(reply) }
        waiter.done.signal()
    }

    /// `transport` is gone: its calls fail (whether the daemon made the change is unknown to them).
    func transportLost(_ transport: DaemonTransport) {
        let id = ObjectIdentifier(transport)
        let lost = lock.withLock { () -> [Waiter] in
            let lost = waiting.filter { $0.value.transport == id }
            for key in lost.keys { waiting[key] = nil }
            for waiter in lost.values {
                waiter.outcome = .failure(
                    VersionStoreError(
                        .storeUnavailable,
                        "The connection to filecoordd was lost during a version store call; check the versions "
                            + "before trying again."
                    )
                )
            }
            return Array(lost.values)
        }
        for waiter in lost { waiter.done.signal() }
    }
}
