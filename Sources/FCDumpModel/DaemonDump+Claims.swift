// The claims part of the dump: each live claim, its items and the requests it awaits (docs/FCDUMP-SCHEMA.md).

extension DaemonDump {
    /// A live claim: one `coordinate…` or `prepare…` call.
    public struct Claim: Codable, Hashable, Sendable {
        /// The daemon's id for the claim.
        public var id: UInt64
        /// The client that made the call.
        public var client: UInt64
        /// `waiting`, `preparing` or `granted`.
        public var phase: String
        /// The coordinator's purpose identifier.
        public var purpose: String
        /// The presenter the coordinator was created with, or `null`.
        public var filePresenter: UInt64?
        /// The presenter whose queue the call was made from, or `null`.
        public var fromPresenterQueue: UInt64?
        /// The callback of that presenter the call was made in (`presentedItemDidChange`; `reacquirer` for the
        /// block a relinquish handed back), or `null` (other work on its queue, or not said).
        public var fromCallback: String?
        /// `true` for `prepare(forReadingItemsAt:…)`.
        public var isPreparation: Bool
        /// Seconds since the daemon received the request.
        public var ageSeconds: Double
        /// The items, granted together or not at all.
        public var items: [Item]
        /// For a waiting claim, the claims that keep it from starting.
        public var blockedBy: [UInt64]
        /// For a preparing claim, the presenter requests it waits on.
        public var awaiting: [Awaiting]
        /// For a granted preparation whose batch block returned before its completion handler was called: seconds
        /// since the block returned (the batch waits for its handler); else `null`. Absent from older daemons.
        public var waitingForHandlerSeconds: Double?

        /// Creates a claim entry.
        public init(
            id: UInt64,
            client: UInt64,
            phase: String,
            purpose: String,
            filePresenter: UInt64?,
            fromPresenterQueue: UInt64?,
            fromCallback: String? = nil,
            isPreparation: Bool,
            ageSeconds: Double,
            items: [Item],
            blockedBy: [UInt64],
            awaiting: [Awaiting],
            waitingForHandlerSeconds: Double? = nil
        ) {
            self.id = id
            self.client = client
            self.phase = phase
            self.purpose = purpose
            self.filePresenter = filePresenter
            self.fromPresenterQueue = fromPresenterQueue
            self.fromCallback = fromCallback
            self.isPreparation = isPreparation
            self.ageSeconds = ageSeconds
            self.items = items
            self.blockedBy = blockedBy
            self.awaiting = awaiting
            self.waitingForHandlerSeconds = waitingForHandlerSeconds
        }

        private enum CodingKeys: String, CodingKey {
            case id, client, phase, purpose, filePresenter, fromPresenterQueue, fromCallback, isPreparation
            case ageSeconds, items, blockedBy, awaiting, waitingForHandlerSeconds
        }

        /// Decodes a claim; `fromCallback` and `waitingForHandlerSeconds` may be missing (older daemons).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                id: try container.decode(UInt64.self, forKey: .id),
                client: try container.decode(UInt64.self, forKey: .client),
                phase: try container.decode(String.self, forKey: .phase),
                purpose: try container.decode(String.self, forKey: .purpose),
                filePresenter: try container.decodeIfPresent(UInt64.self, forKey: .filePresenter),
                fromPresenterQueue: try container.decodeIfPresent(UInt64.self, forKey: .fromPresenterQueue),
                fromCallback: try container.decodeIfPresent(String.self, forKey: .fromCallback),
                isPreparation: try container.decode(Bool.self, forKey: .isPreparation),
                ageSeconds: try container.decode(Double.self, forKey: .ageSeconds),
                items: try container.decode([Item].self, forKey: .items),
                blockedBy: try container.decode([UInt64].self, forKey: .blockedBy),
                awaiting: try container.decode([Awaiting].self, forKey: .awaiting),
                waitingForHandlerSeconds: try container.decodeIfPresent(Double.self, forKey: .waitingForHandlerSeconds)
            )
        }

        /// Encodes every key, absent presenters and callback as `null`.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(client, forKey: .client)
            try container.encode(phase, forKey: .phase)
            try container.encode(purpose, forKey: .purpose)
            try container.encode(filePresenter, forKey: .filePresenter)
            try container.encode(fromPresenterQueue, forKey: .fromPresenterQueue)
            try container.encode(fromCallback, forKey: .fromCallback)
            try container.encode(isPreparation, forKey: .isPreparation)
            try container.encode(ageSeconds, forKey: .ageSeconds)
            try container.encode(items, forKey: .items)
            try container.encode(blockedBy, forKey: .blockedBy)
            try container.encode(awaiting, forKey: .awaiting)
            try container.encode(waitingForHandlerSeconds, forKey: .waitingForHandlerSeconds)
        }
    }

    /// One item of a claim.
    public struct Item: Codable, Hashable, Sendable {
        /// Where the item is now.
        public var path: String
        /// `read` or `write`.
        public var kind: String
        /// The reading or writing option names.
        public var options: [String]

        /// Creates an item.
        public init(path: String, kind: String, options: [String]) {
            self.path = path
            self.kind = kind
            self.options = options
        }
    }

    /// A presenter request a preparing claim waits on.
    public struct Awaiting: Codable, Hashable, Sendable {
        /// The request's id.
        public var request: UInt64
        /// The presenter that owes the reply.
        public var presenter: UInt64

        /// Creates an entry.
        public init(request: UInt64, presenter: UInt64) {
            self.request = request
            self.presenter = presenter
        }
    }
}
