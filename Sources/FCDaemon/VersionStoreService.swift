import FCProtocol
import FCVersionStore
import Foundation
import Logging
import NIOCore

/// The daemon's version store (issue 15, docs/ARCHITECTURE.md §11): `VersionStoreRequest`s are answered on one
/// serial queue of its own, never on the event loop (every store call does disk I/O); the store is opened (and
/// repaired) at the first request, and versions of items deleted longer than the retention are purged hourly.
///
/// - Important: Thread-safe: everything runs on ``queue``.
// @unchecked: `store` and `purging` are read and written only on `queue`.
final class VersionStoreService: @unchecked Sendable {
    let queue = DispatchQueue(label: "filecoordd.versions")
    private let directory: String
    private let retention: Duration
    private let logger: Logger
    /// Opened on `queue` only.
    private var store: VersionStore?
    private var purging = false
    /// Requests answered on the caller's thread (``DaemonConfiguration/runsOffLoopWorkInline``: the handshake's
    /// fuzz target, whose one thread is everything's).
    private let answersInline: Bool
    /// The largest reply one frame carries (``DaemonConfiguration/maximumFrameSize``): a larger one could not be
    /// sent, and its caller would wait for it until its timeout (``fitted(_:to:)``).
    let maximumReplySize: Int

    init(
        directory: String,
        retention: Duration = .seconds(30 * 24 * 3600),
        logger: Logger,
        answersInline: Bool = false,
        maximumReplySize: Int = 1 << 20
    ) {
        self.directory = directory
        self.retention = retention
        self.logger = logger
        self.answersInline = answersInline
        self.maximumReplySize = maximumReplySize
    }

    /// An item moved without coordination (the watcher of issue 13 saw a rename): its versions, and those of
    /// everything inside it, follow it. Queued on the store's queue; returns at once, callable from the loop.
    func itemMoved(from: String, to: String) {
        queue.async { [self] in
            do {
                _ = try opened().itemMoved(from: from, to: to)
            } catch {
                logger.error(
                    "versions did not follow a moved item: \(error)",
                    metadata: ["item.path": "\(from)", "item.new.path": "\(to)"]
                )
            }
        }
    }

    /// Answers `request` of the client process `pid` on the queue, then calls `reply` there.
    func answer(
        _ request: Filecoord_V1_VersionStoreRequest,
        from pid: Int32,
        reply: @escaping @Sendable (Filecoord_V1_VersionStoreReply) -> Void
    ) {
        if answersInline {
            reply(handle(request, from: pid))
            return
        }
        queue.async { [self] in reply(handle(request, from: pid)) }
    }

    private func opened() throws -> VersionStore {
        if let store { return store }
        let store = try VersionStore(directory: directory, retention: retention, logger: logger)
        self.store = store
        logger.info("version store opened", metadata: ["store.path": "\(directory)"])
        purge()
        return store
    }

    private func purge() {
        guard let store else { return }
        do { try store.purgeDeletedItems() } catch { logger.error("purging the version store failed: \(error)") }
        // Answered inline (the fuzz target's probe): no hourly purge on the queue, which would race the caller.
        guard !purging, !answersInline else { return }
        purging = true
        queue.asyncAfter(deadline: .now() + 3600) { [self] in
            purging = false
            purge()
        }
    }

    /// The reply to `request` of the client process `pid` (the owner of a temporary directory made for it; `nil`:
    /// this process).
    func handle(
        _ request: Filecoord_V1_VersionStoreRequest,
        from pid: Int32? = nil
    ) -> Filecoord_V1_VersionStoreReply {
        var reply = Filecoord_V1_VersionStoreReply()
        reply.requestID = request.requestID
        let item = String(decoding: request.itemPath, as: UTF8.self)
        do {
            let store = try opened()
            switch request.operation {
            case .list:
                reply.versions = try store.versions(of: item).map(Self.record)
            case .find:
                reply.versions = try store.version(id: request.versionID).map { [Self.record($0)] } ?? []
            case .add:
                let conflict =
                    request.hasSavingComputer
                    ? ConflictOrigin(
                        computer: request.savingComputer,
                        originator: request.hasOriginator ? request.originator : nil
                    ) : nil
                let added = try store.add(
                    item: item,
                    contentsOf: String(decoding: request.contentsPath, as: UTF8.self),
                    byMoving: request.byMoving,
                    conflict: conflict
                )
                reply.versions = [Self.record(added)]
            case .remove:
                reply.versions = try store.remove(id: request.versionID).map { [Self.record($0)] } ?? []
            case .removeAll:
                reply.versions = try store.removeAll(of: item).map(Self.record)
            case .resolve:
                reply.versions = try store.markResolved(id: request.versionID).map { [Self.record($0)] } ?? []
            case .discardable:
                reply.found = try store.markDiscardable(id: request.versionID)
            case .replace:
                reply.path = Data(
                    try store.replaceItem(at: item, with: request.versionID, byMoving: request.byMoving).utf8
                )
            case .moved:
                _ = try store.itemMoved(from: item, to: String(decoding: request.toPath, as: UTF8.self))
            case .temporaryDirectory:
                // Owned by the client that fills it: a restarted daemon's repair keeps it while the client lives.
                reply.path = Data(try store.makeTemporaryDirectory(owner: pid).utf8)
            case .unspecified, .UNRECOGNIZED:
                reply.errorCode = 3
                reply.errorMessage = "filecoordd does not know this version store operation; update filecoordd."
            }
        } catch let error as VersionStoreError {
            reply.errorCode =
                switch error.code {
                case .noSuchFile: 1
                case .noSuchVersion: 2
                case .storeUnavailable: 3
                case .ioFailure: 4
                }
            reply.errorMessage = error.message
        } catch {
            reply.errorCode = 3
            reply.errorMessage = "The version store failed: \(error)"
        }
        return fitted(reply, to: request)
    }

    /// `reply`, made to fit in one frame: the versions a removal of all took away are named by their ids alone (all
    /// their caller uses), and a listing too long for a frame is refused with a clear error. Until stop 69 such a
    /// reply could not be encoded, was logged and dropped, and its caller waited the call's timeout (120 s).
    private func fitted(
        _ reply: Filecoord_V1_VersionStoreReply,
        to request: Filecoord_V1_VersionStoreRequest
    ) -> Filecoord_V1_VersionStoreReply {
        // Room for the frame's own fields and the reply's; each record's fields and their tags and lengths.
        let room = maximumReplySize - 256 - reply.path.count - reply.errorMessage.utf8.count
        func size(of record: Filecoord_V1_StoredVersionRecord) -> Int {
            64 + record.id.utf8.count + record.itemPath.count + record.name.utf8.count + record.contentsPath.count
                + record.savingComputer.utf8.count + record.originator.utf8.count
        }
        guard reply.versions.reduce(0, { $0 + size(of: $1) }) > room else { return reply }
        var fitted = reply
        if request.operation == .removeAll {
            fitted.versions = reply.versions.map { version in
                var record = Filecoord_V1_StoredVersionRecord()
                record.id = version.id
                return record
            }
            if fitted.versions.reduce(0, { $0 + size(of: $1) }) <= room { return fitted }
        }
        fitted.versions = []
        fitted.errorCode = 4
        fitted.errorMessage =
            request.operation == .removeAll
            ? "The \(reply.versions.count) versions were removed, but their ids are more than one reply of filecoordd "
                + "holds (\(maximumReplySize) bytes): presenters of the item were not told of each."
            : "The item has \(reply.versions.count) versions, more than one reply of filecoordd holds "
                + "(\(maximumReplySize) bytes); remove some (NSFileVersion.removeOtherVersionsOfItem(at:))."
        logger.warning(
            "a version store reply was too large for a frame",
            metadata: ["versions": "\(reply.versions.count)"]
        )
        return fitted
    }

    static func record(_ version: StoredVersion) -> Filecoord_V1_StoredVersionRecord {
        var record = Filecoord_V1_StoredVersionRecord()
        record.id = version.id
        record.itemPath = Data(version.itemPath.utf8)
        record.name = version.name
        record.contentsPath = Data(version.contentsPath.utf8)
        if let computer = version.savingComputer { record.savingComputer = computer }
        if let originator = version.originator { record.originator = originator }
        record.modificationDate = version.modificationDate.timeIntervalSince1970
        record.addedDate = version.addedDate.timeIntervalSince1970
        record.isConflict = version.isConflict
        record.isResolved = version.isResolved
        record.isDiscardable = version.isDiscardable
        return record
    }
}

extension SessionHandler {
    /// Most version store requests one connection may have unanswered; one more is a protocol error.
    static let maximumVersionRequestsInFlight = 64

    /// Hands a `VersionStoreRequest` to the store's queue and sends the reply back from the loop.
    func answerVersionStore(
        _ request: Filecoord_V1_VersionStoreRequest,
        context: ChannelHandlerContext
    ) throws(ProtocolError) {
        guard versionRequestsInFlight < Self.maximumVersionRequestsInFlight else {
            throw ProtocolError(
                .limitExceeded,
                "more than \(Self.maximumVersionRequestsInFlight) version store requests unanswered"
            )
        }
        versionRequestsInFlight += 1
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, channel: context.channel), eventLoop: loop)
        host.versionStore.answer(request, from: pid) { reply in
            loop.execute {
                let (handler, channel) = bound.value
                handler.versionRequestsInFlight -= 1
                guard channel.isActive else { return }
                handler.host.writeNow(Filecoord_V1_Frame(.versionStoreReply(reply)), on: channel, pid: handler.pid)
            }
        }
    }
}

extension DaemonConfiguration {
    /// `FILECOORD_VERSIONS_DIR`, else ``VersionStore/defaultDirectory(environment:)``.
    public static func defaultVersionStoreDirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        return environment["FILECOORD_VERSIONS_DIR"] ?? VersionStore.defaultDirectory(environment: environment)
    }
}
