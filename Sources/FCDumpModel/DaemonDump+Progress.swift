// The file progress part of the dump (issue 44; docs/FCDUMP-SCHEMA.md): per item, who publishes a progress about it
// and who subscribes to it.

extension DaemonDump {
    /// An item with file progress published about it or subscriptions at it.
    public struct ProgressItem: Codable, Hashable, Sendable {
        /// The item's path, escaped as node paths are.
        public var path: String
        /// The progresses published about it.
        public var publishers: [ProgressPublisher]
        /// The clients subscribed at it (each subscription once, by client id, in id order).
        public var subscribers: [UInt64]

        public init(path: String, publishers: [ProgressPublisher], subscribers: [UInt64]) {
            self.path = path
            self.publishers = publishers
            self.subscribers = subscribers
        }
    }

    /// One published progress, as its publisher last sent it.
    public struct ProgressPublisher: Codable, Hashable, Sendable {
        /// The daemon's id for the publication (as in `ProgressAppeared`).
        public var id: UInt64
        /// The publisher's client id.
        public var client: UInt64
        public var completedUnitCount: Int64
        public var totalUnitCount: Int64
        /// 0 to 1, children included.
        public var fractionCompleted: Double
        /// `Progress.FileOperationKind`'s raw value, or empty.
        public var fileOperationKind: String
        public var cancelled: Bool
        public var paused: Bool

        public init(
            id: UInt64,
            client: UInt64,
            completedUnitCount: Int64,
            totalUnitCount: Int64,
            fractionCompleted: Double,
            fileOperationKind: String,
            cancelled: Bool,
            paused: Bool
        ) {
            self.id = id
            self.client = client
            self.completedUnitCount = completedUnitCount
            self.totalUnitCount = totalUnitCount
            self.fractionCompleted = fractionCompleted
            self.fileOperationKind = fileOperationKind
            self.cancelled = cancelled
            self.paused = paused
        }
    }
}

extension DaemonDump {
    /// A folder tree that live queries watch (issue 44).
    public struct QueryTree: Codable, Hashable, Sendable {
        /// The tree's folder, escaped as node paths are.
        public var root: String
        /// The client id of each query that uses it (one entry per query).
        public var queries: [UInt64]
        /// Items in the tree (the folder itself not counted).
        public var items: Int
        /// Folders watched for it, the root included.
        public var directories: Int
        /// The first gathering is done.
        public var gathered: Bool
        /// Each query that uses it, with its result count (added within version 1: absent from older daemons).
        public var live: [LiveQuery]?
        /// How many of its folders could not be watched: changes in them do not reach its queries (added within version
        /// 1, protocol revision 9: absent from older daemons).
        public var unwatched: Int?

        public init(root: String, queries: [UInt64], items: Int, directories: Int, gathered: Bool) {
            self.root = root
            self.queries = queries
            self.items = items
            self.directories = directories
            self.gathered = gathered
        }
    }

    /// A live query of a tree (issue 44): its client, its id in that client, and how many results it holds after
    /// its predicate, as the client last told (`nil` until it does: a client before revision 8 never does).
    public struct LiveQuery: Codable, Hashable, Sendable {
        public var client: UInt64
        public var query: UInt64
        public var results: Int?

        public init(client: UInt64, query: UInt64, results: Int?) {
            self.client = client
            self.query = query
            self.results = results
        }
    }
}
