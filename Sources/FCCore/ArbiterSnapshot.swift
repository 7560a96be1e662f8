/// A read-only picture of the arbiter's state, for dumps, tests and the simulator's invariant checks.
public struct ArbiterSnapshot: Hashable, Sendable {
    /// A live claim.
    public struct Claim: Hashable, Sendable {
        /// The claim as it was requested.
        public var request: ClaimRequest
        /// Where the claim is in its life.
        public var phase: ClaimPhase
        /// Where each item is now (waiting claims follow moves). A granted claim that reported a move also holds the
        /// new location, so it can have more paths than it requested.
        public var paths: [ItemPath]
        /// The access of each path in ``paths``.
        public var accesses: [Access]
        /// Each item's effective path: itself, or its outermost enclosing package.
        public var effectivePaths: [ItemPath]
        /// Arrival order.
        public var sequence: UInt64
        /// When the claim arrived, on the host's clock (``Arbiter/handle(_:at:)``); `nil` when the host gives no
        /// time.
        public var arrivedAt: Duration?
        /// Requests sent for this claim and not answered, with the presenter that owes each.
        public var awaiting: [RequestID: PresenterID]
        /// `true` when the presenter the claim was made with owed a reply when it arrived (rule 5).
        public var madeWhileAnswering: Bool
        /// For a granted preparation whose batch block returned: when it returned, on the host's clock (`.zero`
        /// when the host gives no time). The claim waits for its completion handler (docs/SEMANTICS.md).
        public var batchReturnedAt: Duration? = nil
    }

    /// The live claims, in arrival order.
    public var claims: [Claim]
    /// The registered presenters, by id, with their current paths.
    public var presenters: [PresenterID: PresenterRegistration]
    /// Requests sent and not answered, with their presenter.
    public var outstandingRequests: [RequestID: PresenterID]
    /// Known clients.
    public var clients: [ClientID: ClientInfo]
    /// The number of access nodes, the root included.
    public var nodeCount: Int
    /// Access nodes other than the root whose subtree holds nothing: kept for reuse (issue 12) or above such a node.
    public var idleNodeCount = 0
    /// Those of them that are leaves: at most ``ArbiterConfiguration/idleNodeRetention``.
    public var idleLeafCount = 0
    /// Access nodes created since the arbiter was made, the root excluded (reuse shows as a count that stays put).
    public var accessNodesCreated = 0
}

extension Arbiter {
    /// A picture of the current state. Costs O(state): for dumps and tests, not for the hot path.
    public func snapshot() -> ArbiterSnapshot {
        let live = claims.values.sorted { $0.sequence < $1.sequence }
        let idle = tree.idleNodeCounts
        return ArbiterSnapshot(
            claims: live.map { claim in
                ArbiterSnapshot.Claim(
                    request: claim.request,
                    phase: claim.phase,
                    paths: claim.entries.map(\.path),
                    accesses: claim.entries.map(\.access),
                    effectivePaths: claim.entries.map { tree.path(of: $0.node) },
                    sequence: claim.sequence,
                    arrivedAt: claim.arrivedAt,
                    awaiting: claim.outstanding,
                    madeWhileAnswering: claim.madeWhileAnswering,
                    batchReturnedAt: claim.batchReturnedAt
                )
            },
            presenters: presenters.mapValues(\.registration),
            outstandingRequests: requests.mapValues(\.presenter),
            clients: clients.mapValues(\.info),
            nodeCount: tree.nodeCount,
            idleNodeCount: idle.nodes,
            idleLeafCount: idle.leaves,
            accessNodesCreated: tree.idle.nodesCreated
        )
    }

    /// The phase of a live claim, or `nil` if it is not live.
    public func phase(of claim: ClaimID) -> ClaimPhase? {
        claims[claim]?.phase
    }

    /// Whether `path` counts as a package now (by extension, or declared by a presenter).
    public func isPackage(_ path: ItemPath) -> Bool {
        guard let last = path.lastComponent else { return false }
        return tree.isPackage(name: last, node: tree.existingNode(path))
    }

    /// The path that stands for `path` in conflict checks: its outermost enclosing package, or itself.
    public func effectivePath(_ path: ItemPath) -> ItemPath {
        tree.effectivePath(path)
    }
}
