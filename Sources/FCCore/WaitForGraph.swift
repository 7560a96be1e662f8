/// A read-only view of the deadlock detector's wait-for graph (docs/SEMANTICS.md §6), for `fcdump --graph`.
extension Arbiter {
    /// The most edges a dump lists from one node, and the most blockers it lists for one waiting claim: the first
    /// found (a claim's holders before the claims queued ahead of it). A queue of n conflicting claims has about n²/2
    /// edges; a dump of ten thousand writers queued on one file would stall the daemon's loop for minutes and write
    /// gigabytes (until stop 70).
    public static let dumpedEdgesPerNode = 16

    /// The edges of the wait-for graph now, at most `limitPerNode` from each node: from each live claim that is not
    /// granted, then from each presenter whose queue is held by a coordinated call made on it. Nodes are named
    /// `claim#N` and `presenter#N`; the label is the detector's sentence for the edge. Costs O(state ×
    /// `limitPerNode`): for dumps, not for the hot path.
    public func waitForEdges(limitPerNode: Int = dumpedEdgesPerNode) -> [(from: String, to: String, label: String)] {
        func name(_ node: WaitNode) -> String {
            switch node {
            case .claim(let id): "\(id)"
            case .presenter(let id): "\(id)"
            }
        }
        var edges: [WaitEdge] = []
        for claim in claims.values.filter({ $0.phase != .granted }).sorted(by: { $0.sequence < $1.sequence }) {
            edges += self.edges(from: .claim(claim.id), limit: limitPerNode)
        }
        edges += presenterQueueEdges(limitPerNode: limitPerNode)
        return edges.map { (name($0.from), name($0.to), $0.line) }
    }

    /// ``edges(from:limit:)`` of every presenter, from one pass over the claims (asked presenter by presenter, each
    /// read every claim: O(presenters × claims)).
    private func presenterQueueEdges(limitPerNode: Int) -> [WaitEdge] {
        let holds = PresenterQueueHolds(self)
        return presenters.keys.sorted().flatMap { edges(from: $0, holds: holds, limit: limitPerNode) }
    }

    /// The claims not granted that hold each presenter's queue (``ClaimRequest/fromPresenterQueue``), found in one
    /// pass over the claims: by the presenter they were made on, and by the serial queue of that presenter when it
    /// shares one (then every presenter on that queue waits for them). A view of the arbiter at one moment: made
    /// again after anything changes.
    struct PresenterQueueHolds {
        private struct SerialQueue: Hashable {
            var client: ClientID
            var id: UInt64
        }
        private let presenters: [PresenterID: PresenterRecord]
        /// Every claim not granted that holds a presenter's queue, in arrival order.
        let holdingClaims: [ClaimRecord]
        private var byHolder: [PresenterID: [ClaimRecord]] = [:]
        private var byQueue: [SerialQueue: [ClaimRecord]] = [:]

        init(_ arbiter: Arbiter) {
            presenters = arbiter.presenters
            arbiter.statistics.queueHoldClaimsRead += arbiter.claims.count
            holdingClaims = arbiter.claims.values.filter {
                $0.phase != .granted && $0.request.fromPresenterQueue != nil
            }
            .sorted { $0.sequence < $1.sequence }
            // Filled in arrival order, so each list is too.
            for claim in holdingClaims {
                guard let holder = claim.request.fromPresenterQueue else { continue }
                if let queue = serialQueue(of: holder) {
                    byQueue[queue, default: []].append(claim)
                } else {
                    byHolder[holder, default: []].append(claim)
                }
            }
        }

        private func serialQueue(of presenter: PresenterID) -> SerialQueue? {
            presenters[presenter].flatMap { record in
                record.registration.serialQueue.map { SerialQueue(client: record.registration.client, id: $0) }
            }
        }

        /// The claims not granted made on `presenter`'s queue, or on the serial queue it shares, in arrival order.
        func claims(holding presenter: PresenterID) -> [ClaimRecord] {
            serialQueue(of: presenter).map { byQueue[$0] ?? [] } ?? byHolder[presenter] ?? []
        }
    }
}
