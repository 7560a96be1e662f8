// The state `filecoordd` reports to `fcdump` (`DumpReply.json`): Codable types shared by the daemon, which encodes
// them, and `fcdump`, which decodes and renders them. The JSON schema is documented in docs/FCDUMP-SCHEMA.md; bump
// ``DaemonDump/currentSchemaVersion`` on any change that is not a pure addition.

import Foundation

/// The whole dump: one JSON object.
public struct DaemonDump: Codable, Hashable, Sendable {
    /// The schema this dump follows. Readers refuse a major version they do not know.
    public static let currentSchemaVersion = 1

    /// ``currentSchemaVersion`` when written.
    public var schemaVersion: Int
    /// The daemon's process id.
    public var daemonPID: Int32
    /// The connected clients, by id (the `fcdump` connection that asked included).
    public var clients: [Client]
    /// The registered presenters, by id.
    public var presenters: [Presenter]
    /// The live claims, in arrival order.
    public var claims: [Claim]
    /// The tree of items being presented or coordinated; only nodes with something on them or below them.
    public var tree: Node
    /// The wait-for graph (docs/SEMANTICS.md §6): who waits for whom now.
    public var waitFor: [Edge]
    /// The arbiter's counters since the daemon started.
    public var statistics: Statistics
    /// The most recent deadlock reports, oldest first.
    public var deadlocks: [String]
    /// The number of access nodes in the arbiter's tree, the root included.
    public var nodeCount: Int
    /// The file watcher's health; `null` until the daemon has a watcher.
    public var watcher: Watcher?
    /// The live leases (issue 23), by id. Added within schema version 1: a dump from an older daemon decodes with
    /// none.
    public var leases: [Lease] = []
    /// Whether the daemon grants leases, and its lease counters. Added within schema version 1: `nil` from an older
    /// daemon.
    public var leasing: Leasing?
    /// The cluster this daemon shares folders with (issue 40), `nil` when it shares none. Added within schema
    /// version 1: `nil` from an older daemon.
    public var cluster: Cluster?
    /// File progress by item (issue 44; added within version 1, absent from older daemons).
    public var progress: [ProgressItem] = []
    /// The folder trees live queries watch (issue 44; added within version 1, absent from older daemons).
    public var queries: [QueryTree] = []

    /// Creates a dump.
    public init(
        daemonPID: Int32,
        clients: [Client],
        presenters: [Presenter],
        claims: [Claim],
        tree: Node,
        waitFor: [Edge],
        statistics: Statistics,
        deadlocks: [String],
        nodeCount: Int,
        watcher: Watcher? = nil
    ) {
        self.schemaVersion = Self.currentSchemaVersion
        self.daemonPID = daemonPID
        self.clients = clients
        self.presenters = presenters
        self.claims = claims
        self.tree = tree
        self.waitFor = waitFor
        self.statistics = statistics
        self.deadlocks = deadlocks
        self.nodeCount = nodeCount
        self.watcher = watcher
    }

    private enum CodingKeys: String, CodingKey {
        case schemaVersion, daemonPID, clients, presenters, claims, tree, waitFor, statistics, deadlocks, nodeCount
        case watcher, leases, leasing, cluster, progress, queries
    }

    /// Decodes a dump; `leases` and `leasing` may be absent (older daemons).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.schemaVersion = try container.decode(Int.self, forKey: .schemaVersion)
        self.daemonPID = try container.decode(Int32.self, forKey: .daemonPID)
        self.clients = try container.decode([Client].self, forKey: .clients)
        self.presenters = try container.decode([Presenter].self, forKey: .presenters)
        self.claims = try container.decode([Claim].self, forKey: .claims)
        self.tree = try container.decode(Node.self, forKey: .tree)
        self.waitFor = try container.decode([Edge].self, forKey: .waitFor)
        self.statistics = try container.decode(Statistics.self, forKey: .statistics)
        self.deadlocks = try container.decode([String].self, forKey: .deadlocks)
        self.nodeCount = try container.decode(Int.self, forKey: .nodeCount)
        self.watcher = try container.decodeIfPresent(Watcher.self, forKey: .watcher)
        self.leases = try container.decodeIfPresent([Lease].self, forKey: .leases) ?? []
        self.leasing = try container.decodeIfPresent(Leasing.self, forKey: .leasing)
        self.cluster = try container.decodeIfPresent(Cluster.self, forKey: .cluster)
        self.progress = try container.decodeIfPresent([ProgressItem].self, forKey: .progress) ?? []
        self.queries = try container.decodeIfPresent([QueryTree].self, forKey: .queries) ?? []
    }

    /// Encodes every key, `watcher` as `null` when absent.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(schemaVersion, forKey: .schemaVersion)
        try container.encode(daemonPID, forKey: .daemonPID)
        try container.encode(clients, forKey: .clients)
        try container.encode(presenters, forKey: .presenters)
        try container.encode(claims, forKey: .claims)
        try container.encode(tree, forKey: .tree)
        try container.encode(waitFor, forKey: .waitFor)
        try container.encode(statistics, forKey: .statistics)
        try container.encode(deadlocks, forKey: .deadlocks)
        try container.encode(nodeCount, forKey: .nodeCount)
        try container.encode(watcher, forKey: .watcher)
        try container.encode(leases, forKey: .leases)
        try container.encode(leasing, forKey: .leasing)
        try container.encode(cluster, forKey: .cluster)
        try container.encode(progress, forKey: .progress)
        try container.encode(queries, forKey: .queries)
    }

    /// A connected client.
    public struct Client: Codable, Hashable, Sendable {
        /// The daemon's id for the connection.
        public var id: UInt64
        /// The process id (`SO_PEERCRED`).
        public var pid: Int32
        /// The name the client gave in `Hello`.
        public var name: String
        /// Its presenters' ids.
        public var presenters: [UInt64]
        /// Its live claims' ids.
        public var claims: [UInt64]
        /// Its command line (`/proc/PID/cmdline` when it connected); empty when it could not be read. Added to
        /// schema version 1: a dump from an older daemon decodes with none.
        public var arguments: [String]
        /// Its claims that failed because they were not granted within their timeout (`TIMED_OUT`) since it
        /// connected. A preload client (`name` starting `preload:`) let its program's call through uncoordinated
        /// after each. Added to schema version 1: a dump from an older daemon decodes with 0.
        public var timedOutClaims: Int

        /// Creates a client entry.
        public init(
            id: UInt64,
            pid: Int32,
            name: String,
            presenters: [UInt64],
            claims: [UInt64],
            arguments: [String] = [],
            timedOutClaims: Int = 0
        ) {
            self.id = id
            self.pid = pid
            self.name = name
            self.presenters = presenters
            self.claims = claims
            self.arguments = arguments
            self.timedOutClaims = timedOutClaims
        }

        private enum CodingKeys: String, CodingKey {
            case id, pid, name, presenters, claims, arguments, timedOutClaims
        }

        /// Decodes a client; `arguments` may be missing (older daemons).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                id: try container.decode(UInt64.self, forKey: .id),
                pid: try container.decode(Int32.self, forKey: .pid),
                name: try container.decode(String.self, forKey: .name),
                presenters: try container.decode([UInt64].self, forKey: .presenters),
                claims: try container.decode([UInt64].self, forKey: .claims),
                arguments: try container.decodeIfPresent([String].self, forKey: .arguments) ?? [],
                timedOutClaims: try container.decodeIfPresent(Int.self, forKey: .timedOutClaims) ?? 0
            )
        }
    }

    /// A registered presenter.
    public struct Presenter: Codable, Hashable, Sendable {
        /// The daemon's id for the presenter.
        public var id: UInt64
        /// The client that registered it.
        public var client: UInt64
        /// The presented item, or `null` while it does not exist.
        public var path: String?
        /// The `NSFilePresenter` callbacks it declared, by name.
        public var callbacks: [String]
        /// Whether it declared its item a package.
        public var isPackage: Bool
        /// The client's id for the presenter's serial queue, equal among the client's presenters that share one
        /// (`OperationQueue.main`, say); `null` for a concurrent queue. Added to schema version 1: a dump from an
        /// older daemon decodes with none.
        public var serialQueue: UInt64?
        /// The presented file's other names in use by presenters and claims (hard links, bind mounts: issue 26),
        /// which claims through either name meet. Added to schema version 1: a dump from an older daemon decodes
        /// with none.
        public var otherNames: [String]

        /// Creates a presenter entry.
        public init(
            id: UInt64,
            client: UInt64,
            path: String?,
            callbacks: [String],
            isPackage: Bool,
            serialQueue: UInt64? = nil,
            otherNames: [String] = []
        ) {
            self.id = id
            self.client = client
            self.path = path
            self.callbacks = callbacks
            self.isPackage = isPackage
            self.serialQueue = serialQueue
            self.otherNames = otherNames
        }

        private enum CodingKeys: String, CodingKey {
            case id, client, path, callbacks, isPackage, serialQueue, otherNames
        }

        /// Decodes a presenter; `serialQueue` may be missing (older daemons).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                id: try container.decode(UInt64.self, forKey: .id),
                client: try container.decode(UInt64.self, forKey: .client),
                path: try container.decodeIfPresent(String.self, forKey: .path),
                callbacks: try container.decode([String].self, forKey: .callbacks),
                isPackage: try container.decode(Bool.self, forKey: .isPackage),
                serialQueue: try container.decodeIfPresent(UInt64.self, forKey: .serialQueue),
                otherNames: try container.decodeIfPresent([String].self, forKey: .otherNames) ?? []
            )
        }

        /// Encodes every key, `path` and `serialQueue` as `null` when absent.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(client, forKey: .client)
            try container.encode(path, forKey: .path)
            try container.encode(callbacks, forKey: .callbacks)
            try container.encode(isPackage, forKey: .isPackage)
            try container.encode(serialQueue, forKey: .serialQueue)
            try container.encode(otherNames, forKey: .otherNames)
        }
    }

    /// A node of the item tree.
    public struct Node: Codable, Hashable, Sendable {
        /// The last path component (`/` for the root).
        public var name: String
        /// The absolute path.
        public var path: String
        /// Presenters of this item.
        public var presenters: [UInt64]
        /// Claims on this item, in arrival order.
        public var claims: [UInt64]
        /// Children with something on them or below them, by name.
        public var children: [Node]

        /// Creates a node.
        public init(name: String, path: String, presenters: [UInt64], claims: [UInt64], children: [Node]) {
            self.name = name
            self.path = path
            self.presenters = presenters
            self.claims = claims
            self.children = children
        }
    }

    /// An edge of the wait-for graph. Nodes are named `claim#N` or `presenter#N`.
    public struct Edge: Codable, Hashable, Sendable {
        /// The node that waits.
        public var from: String
        /// The node it waits for.
        public var to: String
        /// The arbiter's sentence for the edge.
        public var label: String

        /// Creates an edge.
        public init(from: String, to: String, label: String) {
            self.from = from
            self.to = to
            self.label = label
        }
    }

    /// The arbiter's counters.
    public struct Statistics: Codable, Hashable, Sendable {
        public var claimsRequested: Int
        public var claimsGranted: Int
        public var claimsFailed: Int
        public var messagesSent: Int
        public var presenterTimeouts: Int
        public var deadlocksBroken: Int
        public var longWaits: Int
        /// Claims the daemon ended past their longest hold (issue 42: a program under the preload library that kept
        /// a file open while another waited); absent in dumps of older daemons.
        public var holdsEnded: Int?

        /// Creates counters.
        public init(
            claimsRequested: Int,
            claimsGranted: Int,
            claimsFailed: Int,
            messagesSent: Int,
            presenterTimeouts: Int,
            deadlocksBroken: Int,
            longWaits: Int,
            holdsEnded: Int? = nil
        ) {
            self.claimsRequested = claimsRequested
            self.claimsGranted = claimsGranted
            self.claimsFailed = claimsFailed
            self.messagesSent = messagesSent
            self.presenterTimeouts = presenterTimeouts
            self.deadlocksBroken = deadlocksBroken
            self.longWaits = longWaits
            self.holdsEnded = holdsEnded
        }
    }

    /// The file watcher's health (issue 13): watches against the limits, what is watched and for how many
    /// presenters, and the counters of events, overflows, rescans and coalesced notifications.
    public struct Watcher: Codable, Hashable, Sendable {
        /// Watches in use: one per watched directory, and one per file with other names in them (issue 26).
        public var watches: Int
        /// The limit that applies first: the daemon's cap (`--max-watches`) or the kernel's `max_user_watches`.
        public var maximumWatches: Int?
        /// Event queue overflows seen.
        public var overflows: Int
        /// Rescans done (after an overflow, or of a directory created after its watch was asked for).
        public var recrawls: Int
        /// The backend (`inotify`).
        public var backend: String?
        /// The daemon's own cap on watches, if set (`--max-watches`).
        public var watchCap: Int?
        /// The kernel's `fs.inotify.max_user_watches` (shared by every inotify user of the uid).
        public var kernelMaximumWatches: Int?
        /// The kernel's `fs.inotify.max_queued_events`.
        public var queueLimit: Int?
        /// File-system events read.
        public var events: Int?
        /// Watches that could not be added (a limit reached, permission denied).
        public var failedWatches: Int?
        /// Of `watches`, those on files of watched directories that have other names (hard links, issue 26).
        public var linkedFileWatches: Int?
        /// Watches the kernel dropped (directories deleted) that the inotify library still holds until its next
        /// renewal.
        public var retiredWatches: Int?
        /// Times the inotify library was started again to let go of the watches the kernel dropped.
        public var renewals: Int?
        /// Notifications sent for file-system events.
        public var notificationsSent: Int?
        /// Notifications held back by the coalescing window.
        public var coalesced: Int?
        /// Events dropped as echoes of coordinated writes.
        public var echoesSuppressed: Int?
        /// Directories the arbiter asked to watch, with their presenters' counts.
        public var directories: [WatchedDirectory]?

        /// Creates a health record.
        public init(watches: Int, maximumWatches: Int?, overflows: Int, recrawls: Int) {
            self.watches = watches
            self.maximumWatches = maximumWatches
            self.overflows = overflows
            self.recrawls = recrawls
        }
    }

    /// A directory the arbiter asked to watch.
    public struct WatchedDirectory: Codable, Hashable, Sendable {
        /// The directory (escaped as in ``Node/path``).
        public var path: String
        /// How many presenters need it (as their item's parent, or as their item).
        public var presenters: Int
        /// Why it is not watched, if the watcher could not watch it (its presenters' clients were told).
        public var failure: String?

        /// Creates a record.
        public init(path: String, presenters: Int, failure: String?) {
            self.path = path
            self.presenters = presenters
            self.failure = failure
        }
    }
}

extension DaemonDump {
    /// The dump as JSON, keys sorted (stable output).
    public func jsonBytes(pretty: Bool = false) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys]
        return Array(try encoder.encode(self))
    }

    /// Decodes a dump.
    public init(json: [UInt8]) throws {
        self = try JSONDecoder().decode(DaemonDump.self, from: Data(json))
    }
}
