import FCCore
import FCProtocol
import FCSystem
import Logging
import NIOCore

// Live queries through the daemon (issue 44; docs/PROTOCOL.md §13): the connection's query frames start and stop
// queries of the host's ``QueryService``; what the service asks (items for a client, folders to watch) is done here,
// on the loop. A folder is watched while the arbiter or a query tree wants it.

/// A live query as the host keeps it, by client and the client's query id (``ArbiterHost/liveQueries``).
struct LiveQuery {
    /// How many results the query holds after its predicate, as its client last told (`QueryResults`, for fcdump).
    var resultCount: UInt64?
}

extension ArbiterHost {
    /// The most live queries one connection may have.
    static let maximumQueriesPerClient = 64
    /// The most search scopes one query may have (each a tree the service may gather and watch).
    static let maximumScopesPerQuery = 256

    /// One query frame from `client`.
    ///
    /// - Throws: ``ProtocolError`` for a frame the daemon cannot take (a bad scope path, an id reused while live,
    ///   more live queries than a connection may have): the connection closes.
    func receiveQuery(
        _ payload: Filecoord_V1_Frame.OneOf_Payload,
        from client: ClientID,
        limits: ProtocolLimits
    )
        throws(ProtocolError)
    {
        loop.preconditionInEventLoop()
        switch payload {
        case .queryStart(let message):
            guard message.scopes.count <= Self.maximumScopesPerQuery else {
                throw ProtocolError(
                    .limitExceeded,
                    "a query with \(message.scopes.count) search scopes (at most \(Self.maximumScopesPerQuery))"
                )
            }
            var scopes: [ItemPath] = []
            for bytes in message.scopes {
                let path = try ItemPath(wire: bytes, limits: limits)
                scopes.append(connections.namespaces[client]?.toDaemon(path) ?? path)
            }
            var live = liveQueries[client] ?? [:]
            guard live[message.queryID] == nil else {
                throw ProtocolError(.limitExceeded, "query id \(message.queryID) reused while live")
            }
            guard live.count < Self.maximumQueriesPerClient else {
                throw ProtocolError(
                    .limitExceeded,
                    "more than \(Self.maximumQueriesPerClient) live queries on one connection"
                )
            }
            live[message.queryID] = LiveQuery()
            liveQueries[client] = live
            queryService().start(QueryService.QueryKey(client: client, local: message.queryID), scopes: scopes)
        case .queryStop(let message):
            guard liveQueries[client]?.removeValue(forKey: message.queryID) != nil else { return }
            if liveQueries[client]?.isEmpty == true { liveQueries[client] = nil }
            queries?.stop(QueryService.QueryKey(client: client, local: message.queryID))
        case .queryResults(let message):
            // A query stopped meanwhile (or never started) keeps nothing.
            liveQueries[client]?[message.queryID]?.resultCount = message.resultCount
        default:
            return
        }
    }

    /// A client left: its queries stop.
    func queryClientLeft(_ client: ClientID) {
        queryOutbox[client] = nil
        guard liveQueries.removeValue(forKey: client) != nil else { return }
        queries?.clientLeft(client)
    }

    /// Sends a query frame once its client has taken the one before (the write completed): a gathering of 100,000
    /// items is 50 frames, which written at once would fill the connection's queue past ``DaemonConfiguration/
    /// maximumQueuedBytes`` (a client that does not read) before the client could read them. One frame of queries
    /// at a time is in the connection's queue; the rest wait here, as much as the tree they come from.
    func sendQueryFrame(_ frame: QueuedQueryFrame, to client: ClientID) {
        queryOutbox[client, default: (false, [])].frames.append(frame)
        // A client that takes no frame while this many wait does not read: it is treated as such (like a queue over
        // --max-queued-bytes), so that the daemon does not keep its changes without bound.
        if let waiting = queryOutbox[client]?.frames.count, waiting > Self.maximumWaitingQueryFrames {
            queryOutbox[client] = nil
            close(
                client,
                because: ProtocolError(
                    .limitExceeded,
                    "the client does not read: \(waiting) messages of its live queries wait to be sent to it"
                )
            )
            return
        }
        pumpQueryOutbox(client)
    }

    /// The most query frames that may wait for one client: a gathering of 2,000,000 items is 1,000 of them.
    static let maximumWaitingQueryFrames = 4_096

    private func pumpQueryOutbox(_ client: ClientID) {
        guard var box = queryOutbox[client], !box.inFlight else { return }
        guard let channel = connections.reachable(client), !box.frames.isEmpty else {
            queryOutbox[client] = nil
            return
        }
        let queued = box.frames.removeFirst()
        // A query stopped since its frame was queued gets nothing more.
        guard liveQueries[client]?[queued.key.local] != nil else {
            queryOutbox[client] = box
            pumpQueryOutbox(client)
            return
        }
        let buffer: ByteBuffer
        do {
            // Converted here, one frame at a time: a gathering's pieces are not all converted in one loop pass.
            buffer = try encoder.encode(
                queued.frame(namespace: connections.namespaces[client]),
                allocator: channel.allocator
            )
        } catch {
            // Not left first in line (every later frame would wait behind it for good): the client's queries end
            // with the connection, and it starts them again on a new one.
            logger.error("could not encode a frame: \(error)", metadata: ["client.id": "\(client.rawValue)"])
            queryOutbox[client] = nil
            close(client, because: ProtocolError(.limitExceeded, "a live query's message could not be sent: \(error)"))
            return
        }
        box.inFlight = true
        queryOutbox[client] = box
        let promise = loop.makePromise(of: Void.self)
        let bound = NIOLoopBound(self, eventLoop: loop)
        promise.futureResult.whenComplete { result in
            let host = bound.value
            guard case .success = result else {
                host.queryOutbox[client] = nil
                return
            }
            host.queryOutbox[client]?.inFlight = false
            host.pumpQueryOutbox(client)
        }
        channel.writeAndFlush(buffer, promise: promise)
    }

    /// The service, made at the first query.
    private func queryService() -> QueryService {
        if let queries { return queries }
        let bound = NIOLoopBound(self, eventLoop: loop)
        let loop = self.loop
        let service = QueryService(
            bytesPerMessage: QueryMessageRuns.bytesPerMessage(maximumFrameSize: configuration.maximumFrameSize),
            logger: logger
        ) { outputs in
            loop.execute { bound.value.apply(outputs) }
        }
        queries = service
        queryRelay.service = service
        return service
    }

    /// What the service asked, in order (on the loop).
    private func apply(_ outputs: [QueryService.Output]) {
        // Without a watcher, the folders asked are told to the service as not watched, in one batch at the end.
        var notWatched: [ItemPath] = []
        defer { tellNotWatched(notWatched) }
        for output in outputs {
            switch output {
            case .watch(let directory):
                // Passed on even when the arbiter wants the folder too: its watch may have gone with a folder that
                // was deleted and made again (the watcher adds a watch only where none is in place).
                queryWatches[directory, default: 0] += 1
                watchForQueries(directory, else: &notWatched)
            case .rewatch(let directory):
                watchForQueries(directory, else: &notWatched)
            case .unwatch(let directory):
                guard let count = queryWatches[directory] else { continue }
                if count > 1 {
                    queryWatches[directory] = count - 1
                } else {
                    queryWatches[directory] = nil
                    if !arbiterWatches.contains(directory) { watcher?.unwatch(directory) }
                }
            case .barrier(let token):
                // Without a watcher nothing is watched: the folders are listed at once.
                if let watcher { watcher.barrier(token) } else { queries?.barriersPassed([token]) }
            case .items(let key, let added, let changed, let removed, let gathered, let count):
                // A query stopped meanwhile gets nothing more.
                guard liveQueries[key.client]?[key.local] != nil else { continue }
                sendQueryFrame(
                    QueuedQueryFrame(
                        key: key,
                        .items(added: added, changed: changed, removed: removed, gathered: gathered, count: count)
                    ),
                    to: key.client
                )
            case .watchUnavailable(let key, let folder, let reason):
                guard liveQueries[key.client]?[key.local] != nil else { continue }
                sendQueryFrame(QueuedQueryFrame(key: key, .watchUnavailable(folder, reason: reason)), to: key.client)
            case .watchAvailable(let key, let root):
                guard liveQueries[key.client]?[key.local] != nil else { continue }
                sendQueryFrame(QueuedQueryFrame(key: key, .watchAvailable(root)), to: key.client)
            }
        }
    }
}

extension ArbiterHost {
    /// Asks the watcher to watch `directory` for the query trees; without a watcher (`--no-watching`, or inotify did
    /// not start), adds it to `notWatched` (``tellNotWatched(_:)``).
    fileprivate func watchForQueries(_ directory: ItemPath, else notWatched: inout [ItemPath]) {
        guard let watcher else {
            notWatched.append(directory)
            return
        }
        // A query's folder needs no index of its files unless the arbiter watches it too (it asks again then).
        watcher.watch(directory, indexingFiles: arbiterWatches.contains(directory))
    }

    /// Tells the query service that `folders` cannot be watched, as for watches that failed: one batch, whatever
    /// number of folders one pass asked for.
    fileprivate func tellNotWatched(_ folders: [ItemPath]) {
        guard !folders.isEmpty else { return }
        let reason = "filecoordd does not watch the file system (--no-watching, or its file watcher did not start)"
        queries?.fileSystemChanged(folders.map { .watchFailed($0, reason: reason) })
    }
}

/// One frame of a live query waiting for its client (``ArbiterHost/sendQueryFrame(_:to:)``), converted to its frame
/// only when it is written.
struct QueuedQueryFrame {
    enum Content {
        /// `QueryItems`.
        case items(
            added: [(ItemPath, ItemMetadata)],
            changed: [(ItemPath, ItemMetadata)],
            removed: [ItemPath],
            gathered: Bool,
            count: Int
        )
        /// `QueryWatchUnavailable` (revision 9).
        case watchUnavailable(ItemPath, reason: String)
        /// `QueryWatchAvailable` (revision 11).
        case watchAvailable(ItemPath)
    }

    let key: QueryService.QueryKey
    let content: Content

    init(key: QueryService.QueryKey, _ content: Content) {
        self.key = key
        self.content = content
    }

    /// The frame, in the client's spelling of the paths.
    func frame(namespace: MountNamespaceTranslation?) -> Filecoord_V1_Frame {
        func spelled(_ path: ItemPath) -> ItemPath { namespace?.toClient(path) ?? path }
        switch content {
        case .items(let added, let changed, let removed, let gathered, let count):
            var message = Filecoord_V1_QueryItems()
            message.queryID = key.local
            message.added = added.map { Filecoord_V1_QueryItem(path: spelled($0.0), metadata: $0.1) }
            message.changed = changed.map { Filecoord_V1_QueryItem(path: spelled($0.0), metadata: $0.1) }
            message.removed = removed.map { Filecoord_V1_QueryItem.encode(spelled($0)) }
            message.gathered = gathered
            message.gatheredCount = UInt64(count)
            return Filecoord_V1_Frame(.queryItems(message))
        case .watchUnavailable(let folder, let reason):
            var message = Filecoord_V1_QueryWatchUnavailable()
            message.queryID = key.local
            message.directory = Filecoord_V1_QueryItem.encode(spelled(folder))
            message.reason = reason
            return Filecoord_V1_Frame(.queryWatchUnavailable(message))
        case .watchAvailable(let root):
            var message = Filecoord_V1_QueryWatchAvailable()
            message.queryID = key.local
            message.root = Filecoord_V1_QueryItem.encode(spelled(root))
            return Filecoord_V1_Frame(.queryWatchAvailable(message))
        }
    }
}

extension Filecoord_V1_QueryItem {
    init(path: ItemPath, metadata: ItemMetadata) {
        self.init()
        self.path = Self.encode(path)
        size = metadata.size
        isDirectory = metadata.isDirectory
        modified = metadata.modified
        created = metadata.changed
    }
}
