// The leases part of the dump (issue 23): each lease and the leasing counters (docs/FCDUMP-SCHEMA.md).

extension DaemonDump {
    /// A lease (issue 23; docs/SEMANTICS.md §13): its holder decides the claims inside `subtree` in process.
    public struct Lease: Codable, Hashable, Sendable {
        /// The daemon's id for the lease.
        public var id: UInt64
        /// The id its lease claim has in `claims[].blockedBy` and `waitFor` (the lease id with bit 63 set).
        public var claim: UInt64
        /// The holder's client id.
        public var client: UInt64
        /// The leased item (it and everything inside it), escaped as node paths are.
        public var subtree: String
        /// `held`, `recall due` (asked for within the minimum hold time), `recalled`, or `recall unanswered` (the
        /// holder did not answer within the presenter timeout; the lease still holds back conflicting claims).
        public var state: String
        /// Seconds since the grant, millisecond precision.
        public var ageSeconds: Double
        /// Seconds since the recall was sent, or `nil` before a recall.
        public var recalledSecondsAgo: Double?
        /// Recalls the holder has had since it connected.
        public var recalls: Int

        /// Creates a lease entry.
        public init(
            id: UInt64,
            claim: UInt64,
            client: UInt64,
            subtree: String,
            state: String,
            ageSeconds: Double,
            recalledSecondsAgo: Double?,
            recalls: Int
        ) {
            self.id = id
            self.claim = claim
            self.client = client
            self.subtree = subtree
            self.state = state
            self.ageSeconds = ageSeconds
            self.recalledSecondsAgo = recalledSecondsAgo
            self.recalls = recalls
        }

        private enum CodingKeys: String, CodingKey {
            case id, claim, client, subtree, state, ageSeconds, recalledSecondsAgo, recalls
        }

        /// Encodes every key, `recalledSecondsAgo` as `null` when absent.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(claim, forKey: .claim)
            try container.encode(client, forKey: .client)
            try container.encode(subtree, forKey: .subtree)
            try container.encode(state, forKey: .state)
            try container.encode(ageSeconds, forKey: .ageSeconds)
            try container.encode(recalledSecondsAgo, forKey: .recalledSecondsAgo)
            try container.encode(recalls, forKey: .recalls)
        }
    }

    /// Whether the daemon grants leases, and what it did with them since it started.
    public struct Leasing: Codable, Hashable, Sendable {
        /// `false` when started with `--no-leases`.
        public var enabled: Bool
        /// Leases granted.
        public var granted: Int
        /// Recalls sent.
        public var recalls: Int
        /// Recalls not answered within the presenter timeout.
        public var recallTimeouts: Int

        /// Creates the lease counters.
        public init(enabled: Bool, granted: Int, recalls: Int, recallTimeouts: Int) {
            self.enabled = enabled
            self.granted = granted
            self.recalls = recalls
            self.recallTimeouts = recallTimeouts
        }
    }
}
