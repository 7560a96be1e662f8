import FCCore
import FCProtocol
import FCToolkit
import Foundation

/// The live queries of one client (issue 44): routes each `QueryItems` to its query, and starts every query again
/// on a new connection (a restarted daemon knows none of them).
///
/// - Important: Thread-safe (one lock, never held while a query runs its code).
final class MetadataQueryRegistry: Sendable {
    /// A live query as the registry knows it: its scopes and where its items go.
    struct Entry: Sendable {
        let scopes: [ItemPath]
        let receive: @Sendable (Filecoord_V1_QueryItems, _ restarted: Bool) -> Void
        /// The connection it was started on (its serial).
        var startedOn: UInt64?
    }

    private let entries = Locked([UInt64: Entry]())

    var needsConnection: Bool { entries.withLock { !$0.isEmpty } }

    /// The daemon's limit of live queries per connection (docs/PROTOCOL.md §13): a query over it is refused here,
    /// not sent (the daemon would close the connection).
    static let maximumQueries = 64
    /// The daemon's limit of search scopes per query (docs/PROTOCOL.md §13), refused here likewise.
    static let maximumScopes = 256
    var isFull: Bool { entries.withLock { $0.count >= Self.maximumQueries } }

    /// Registers query `id` and starts it on the connection `current()` gives, unless a new connection started it
    /// meanwhile. `false` when it could not be sent now (no connection, or the connection was lost): it stays
    /// registered, and the next connection starts it (``connected(to:)``); the caller makes sure one is made.
    ///
    /// The entry is registered before it is sent, with no connection, and the connection it goes on is claimed
    /// under the lock: whichever of this call and a new connection's ``connected(to:)`` comes second sees the other's
    /// claim. Before, a connection made between the caller's choice of transport and the registration left the query
    /// started on a lost connection, never started again, or dropped with the daemon running it.
    func start(_ id: UInt64, entry: Entry, current: () -> DaemonTransport?) -> Bool {
        var entry = entry
        entry.startedOn = nil
        entries.withLock { $0[id] = entry }
        guard let transport = current() else { return false }
        let claimed = entries.withLock { entries -> Bool in
            guard entries[id] != nil, entries[id]?.startedOn == nil else { return false }
            entries[id]?.startedOn = transport.serial
            return true
        }
        // Started by a new connection meanwhile, or stopped: nothing to send.
        guard claimed else { return true }
        guard transport.sendProgress(Self.startFrame(id, entry.scopes)) else {
            entries.withLock { entries in
                if entries[id]?.startedOn == transport.serial { entries[id]?.startedOn = nil }
            }
            return false
        }
        return true
    }

    func stop(_ id: UInt64, on transport: DaemonTransport?) {
        guard let entry = entries.withLock({ $0.removeValue(forKey: id) }) else { return }
        guard let transport, entry.startedOn == transport.serial else { return }
        var message = Filecoord_V1_QueryStop()
        message.queryID = id
        transport.sendProgress(Filecoord_V1_Frame(.queryStop(message)))
    }

    /// Tells the daemon how many results query `id` holds (`QueryResults`, for fcdump), on the connection it was
    /// started on; `false` when it cannot be told there (no such connection, or a daemon before revision 8).
    func reportResults(_ id: UInt64, count: Int, on transport: DaemonTransport?) -> Bool {
        guard let transport, transport.daemonRevision >= ProtocolVersion.queryResultsRevision,
            entries.withLock({ $0[id]?.startedOn == transport.serial })
        else { return false }
        var message = Filecoord_V1_QueryResults()
        message.queryID = id
        message.resultCount = UInt64(count)
        return transport.sendProgress(Filecoord_V1_Frame(.queryResults(message)))
    }

    private static func startFrame(_ id: UInt64, _ scopes: [ItemPath]) -> Filecoord_V1_Frame {
        var message = Filecoord_V1_QueryStart()
        message.queryID = id
        message.scopes = scopes.map { Filecoord_V1_QueryItem.encode($0) }
        return Filecoord_V1_Frame(.queryStart(message))
    }

    /// On the connection's reading thread: hands the items to their query (which queues them; never blocks).
    func receive(_ items: Filecoord_V1_QueryItems, on transport: DaemonTransport) {
        guard let entry = entries.withLock({ $0[items.queryID] }), entry.startedOn == transport.serial else { return }
        entry.receive(items, false)
    }

    func transportLost(_ lost: DaemonTransport) {
        entries.withLock { entries in
            for (id, entry) in entries where entry.startedOn == lost.serial { entries[id]?.startedOn = nil }
        }
    }

    /// A new connection: every query is started on it again; each gathers anew and reports the difference.
    func connected(to transport: DaemonTransport) {
        guard transport.daemonRevision >= ProtocolVersion.queriesRevision else { return }
        let restart = entries.withLock { entries -> [(UInt64, Entry)] in
            var restart: [(UInt64, Entry)] = []
            for (id, entry) in entries where entry.startedOn != transport.serial {
                entries[id]?.startedOn = transport.serial
                restart.append((id, entry))
            }
            return restart
        }
        for (id, entry) in restart.sorted(by: { $0.0 < $1.0 }) {
            entry.receive(Filecoord_V1_QueryItems(), true)
            transport.sendProgress(Self.startFrame(id, entry.scopes))
        }
    }
}
