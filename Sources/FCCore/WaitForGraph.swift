/// A read-only view of the deadlock detector's wait-for graph (docs/SEMANTICS.md §6), for `fcdump --graph`.
extension Arbiter {
    /// Every edge of the wait-for graph now: from each live claim that is not granted, then from each presenter whose
    /// queue is held by a coordinated call made on it. Nodes are named `claim#N` and `presenter#N`; the label is the
    /// detector's sentence for the edge. Costs O(state): for dumps, not for the hot path.
    public func waitForEdges() -> [(from: String, to: String, label: String)] {
        func name(_ node: WaitNode) -> String {
            switch node {
            case .claim(let id): "\(id)"
            case .presenter(let id): "\(id)"
            }
        }
        var nodes: [WaitNode] = claims.values.filter { $0.phase != .granted }.sorted { $0.sequence < $1.sequence }
            .map { .claim($0.id) }
        nodes += presenters.keys.sorted().map { .presenter($0) }
        return nodes.flatMap { node in edges(from: node).map { (name($0.from), name($0.to), $0.line) } }
    }
}
