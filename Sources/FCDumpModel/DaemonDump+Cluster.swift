// The cluster part of the dump (issue 40): this host's session and the folders it shares (docs/FCDUMP-SCHEMA.md).

extension DaemonDump {
    /// This host in its cluster (issue 40; docs/SEMANTICS.md §14): its session and its shared folders.
    public struct Cluster: Codable, Hashable, Sendable {
        /// This host's name in the cluster.
        public var host: String
        /// The etcd members' client URLs.
        public var endpoints: [String]
        /// `connecting`, `live (fence in S s unless renewed)` or `unavailable: REASON`.
        public var session: String
        /// The session's etcd lease id (hexadecimal), `nil` without a session.
        public var sessionLease: String?
        /// The session's time to live in seconds, as etcd granted it.
        public var ttlSeconds: Int64?
        /// The last error talking to etcd, `nil` once a session opened after it.
        public var lastError: String?
        /// The shared folders, by path.
        public var folders: [SharedFolder]
        /// Where this host takes the other hosts' letters directly (`ADDRESS:PORT`), `nil` when it does not (they come
        /// through etcd). Absent from older daemons.
        public var mailAddress: String?
        /// Letters sent to other hosts' presenters since the daemon started: directly, and through etcd. Absent from
        /// older daemons.
        public var lettersDirect: Int?
        public var lettersThroughEtcd: Int?
        /// The mail's series kept: those this host reads (per pair of its session and a sender's), and those it sends
        /// (per receiving session); each goes when etcd says its other session ended. Absent from older daemons.
        public var mailSeriesRead: Int?
        public var mailSeriesSent: Int?

        /// Creates the cluster entry.
        public init(
            host: String,
            endpoints: [String],
            session: String,
            sessionLease: String?,
            ttlSeconds: Int64?,
            lastError: String?,
            folders: [SharedFolder]
        ) {
            self.host = host
            self.endpoints = endpoints
            self.session = session
            self.sessionLease = sessionLease
            self.ttlSeconds = ttlSeconds
            self.lastError = lastError
            self.folders = folders
        }
    }

    /// One shared folder, as this host sees it.
    public struct SharedFolder: Codable, Hashable, Sendable {
        /// The folder in this daemon's paths, escaped as node paths are.
        public var path: String
        /// Its name in the cluster.
        public var name: String
        /// This host's host lease on it: `idle`, `requested`, `queued at revision N`, `held at revision N`, `held at
        /// revision N, recall due`, `draining (revision N)` or `releasing`.
        public var state: String
        /// Local claims wait for this host's turn.
        public var wanted: Bool
        /// Another host waits for this host to give the folder up.
        public var otherHostWaiting: Bool
        /// The host whose key comes first in the folder (the holder, or the next to hold), when known.
        public var firstHost: String?
        /// `closed` (claims inside wait for this host's turn), `draining` or `open`.
        public var gate: String
        /// Local claims waiting at the gate.
        public var waitingClaims: Int

        /// Creates a shared folder entry.
        public init(
            path: String,
            name: String,
            state: String,
            wanted: Bool,
            otherHostWaiting: Bool,
            firstHost: String?,
            gate: String,
            waitingClaims: Int
        ) {
            self.path = path
            self.name = name
            self.state = state
            self.wanted = wanted
            self.otherHostWaiting = otherHostWaiting
            self.firstHost = firstHost
            self.gate = gate
            self.waitingClaims = waitingClaims
        }
    }
}
