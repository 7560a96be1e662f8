/// The deadlock detector (docs/SEMANTICS.md §6): a wait-for graph over claims, presenter replies and presenter queues,
/// searched when a claim has waited for the detection delay.
///
/// Edges:
/// - a waiting claim waits for the claims that block it (``Arbiter/blockers(of:)``);
/// - a preparing claim waits for each presenter that owes it a reply, and, once every reply is in, for the granted
///   claims that still conflict with it;
/// - a presenter waits for the claims made on its queue (`ClaimRequest.fromPresenterQueue`: inside its callbacks,
///   or in other work on that queue) that are not granted yet, and for those made on the queue of another presenter
///   of the same client that shares its serial queue (``PresenterRegistration/serialQueue``): such a call holds the
///   queue, so nothing else reaches the presenter.
///
/// Each edge says how long its wait has lasted when the host timestamps events (``Arbiter/handle(_:at:)``).
///
/// A cycle is broken by failing one claim in it with ``ClaimFailure/deadlock(_:)``: the youngest that holds a
/// presenter's queue (its failure frees that queue), else the youngest. The report names every edge.
extension Arbiter {
    /// A node of the wait-for graph.
    enum WaitNode: Hashable {
        case claim(ClaimID)
        case presenter(PresenterID)
    }

    /// One edge, with what a person needs to read it. The line is written only when read (a report shows a few
    /// edges; the search for a cycle reads many).
    struct WaitEdge {
        var from: WaitNode
        var to: WaitNode
        private let describe: () -> String

        init(from: WaitNode, to: WaitNode, line: @escaping @autoclosure () -> String) {
            self.from = from
            self.to = to
            self.describe = line
        }

        var line: String { describe() }
    }

    /// How many edges a long-wait or timeout report names; the rest are counted (issue 11.2: a claim queued behind
    /// a thousand others must not write a thousand lines).
    static let reportedEdges = 3

    /// The first ``reportedEdges`` lines of `edges`, and how many more there are.
    func boundedLines(_ edges: [WaitEdge]) -> (lines: [String], more: Int) {
        let shown = edges.prefix(Self.reportedEdges).map(\.line)
        return (shown, edges.count - shown.count)
    }

    /// The most recent deadlock reports, newest last (for the dump).
    public var recentDeadlockReports: [String] { deadlockReports }

    func armDeadlockChecks() {
        for id in pendingOrder {
            guard let claim = claims[id] else { continue }
            armDeadlockCheck(claim)
        }
    }

    /// Arms the deadlock check of a claim that is not granted, unless it is armed.
    func armDeadlockCheck(_ claim: ClaimRecord) {
        guard let delay = configuration.deadlockDetectionDelay, claim.phase != .granted, !claim.deadlockCheckArmed
        else { return }
        claim.deadlockCheckArmed = true
        claim.deadlockChecks += 1
        // After a long-wait report the next look comes later, so that a long wait is not logged every second.
        let factor = Int64(1) << min(claim.deadlockChecks - 1, 6)
        effects.append(.startTimer(.deadlockCheck(claim.id), after: delay * factor))
    }

    func cancelDeadlockCheck(_ claim: ClaimRecord) {
        guard claim.deadlockCheckArmed else { return }
        claim.deadlockCheckArmed = false
        effects.append(.cancelTimer(.deadlockCheck(claim.id)))
    }

    func deadlockCheck(_ id: ClaimID) {
        guard let claim = claims[id], claim.phase != .granted else { return }
        claim.deadlockCheckArmed = false
        var brokeAny = false
        // Break every cycle reachable from this claim, one at a time.
        while let start = claims[id], start.phase != .granted, let cycle = findCycle(from: .claim(id)) {
            breakCycle(cycle)
            brokeAny = true
        }
        if !brokeAny, let waiting = claims[id], waiting.phase != .granted {
            statistics.longWaits += 1
            let (holders, more) = boundedLines(edges(from: .claim(id)))
            let others = more > 0 ? "; and \(more) more claims it waits for" : ""
            log(
                .notice,
                "long wait, not a deadlock: "
                    + (holders.isEmpty ? "\(describe(waiting)) waits" : holders.joined(separator: "; ")) + others,
                ["claim.id": "\(id.rawValue)"]
            )
        }
        // A parked claim is not in the list armDeadlockChecks reads: it is armed again here.
        if let waiting = claims[id], waiting.parkedOn != nil { armDeadlockCheck(waiting) }
    }

    /// The edges leaving a node, at most `limit` of a claim's (a dump's bound, ``waitForEdges(limitPerNode:)``).
    func edges(from node: WaitNode, limit: Int = .max) -> [WaitEdge] {
        switch node {
        case .claim(let id):
            guard let claim = claims[id] else { return [] }
            switch claim.phase {
            case .granted:
                return []
            case .waiting:
                return startBlockers(claim, limit: limit).map { blocker in
                    WaitEdge(
                        from: node,
                        to: .claim(blocker.id),
                        line: "\(self.describe(claim)) \(self.waits(since: claim.arrivedAt)) for "
                            + "\(self.describe(blocker)), which is \(blocker.phase)\(self.held(blocker))"
                    )
                }
            case .preparing:
                var out: [WaitEdge] = []
                for (request, presenterID) in claim.outstanding.sorted(by: { $0.key < $1.key }).prefix(limit) {
                    let pending = requests[request]
                    let kind = pending.map { "\($0.kind)" } ?? "a request"
                    out.append(
                        WaitEdge(
                            from: node,
                            to: .presenter(presenterID),
                            line:
                                "\(self.describe(claim)) \(self.waits(since: pending?.sentAt)) for \(self.describe(presenterID)) to "
                                + "answer \(kind) [\(request)]"
                        )
                    )
                }
                if claim.outstanding.isEmpty {
                    forEachConflicting(
                        claim,
                        until: { other in
                            guard other.phase == .granted, !exempt(claim.request, other.request) else { return true }
                            out.append(
                                WaitEdge(
                                    from: node,
                                    to: .claim(other.id),
                                    line:
                                        "\(self.describe(claim)) \(self.waits(since: claim.arrivedAt)) for \(self.describe(other)), which is "
                                        + "granted\(self.held(other))"
                                )
                            )
                            return out.count < limit
                        }
                    )
                }
                return out
            }
        case .presenter(let presenterID):
            return edges(from: presenterID, holds: PresenterQueueHolds(self), limit: limit)
        }
    }

    /// The edges leaving a presenter: to the claims not granted that hold its queue, at most `limit`.
    func edges(from presenter: PresenterID, holds: PresenterQueueHolds, limit: Int = .max) -> [WaitEdge] {
        holds.claims(holding: presenter).prefix(limit).map { queueEdge(of: presenter, heldBy: $0) }
    }

    /// The edge from a presenter to `held`, a claim not granted yet that was made on its queue (or on a serial queue
    /// it shares).
    func queueEdge(of presenterID: PresenterID, heldBy held: ClaimRecord) -> WaitEdge {
        let holder = held.request.fromPresenterQueue ?? presenterID
        let shared = holder == presenterID ? "" : " (a serial queue it shares with \(holder))"
        return WaitEdge(
            from: .presenter(presenterID),
            to: .claim(held.id),
            line:
                "the queue of \(self.describe(presenterID))\(shared) is held by \(self.heldBy(held.request, queueOf: presenterID)), "
                + "which \(self.waits(since: held.arrivedAt)) in \(self.describe(held))"
        )
    }

    /// What holds a presenter's queue: the callback that made the call, when the client said which.
    /// "a coordinated call made in its presentedItemDidChange()" names the code to change.
    func heldBy(_ request: ClaimRequest, queueOf presenter: PresenterID) -> String {
        guard let callback = request.fromCallback, let holder = request.fromPresenterQueue else {
            return "a coordinated call made on it"
        }
        let own = holder == presenter
        guard let method = callback.methods.first else {
            return "a coordinated call made in the reacquirer \(own ? "it" : "\(holder)") handed back"
        }
        return "a coordinated call made in \(own ? "its" : "\(holder)'s") \(method)"
    }

    /// "has waited 1.204 s" since `start`, or "waits" when the host gives no time.
    func waits(since start: Duration?) -> String {
        guard let now, let start else { return "waits" }
        return "has waited \(seconds(now - start))"
    }

    /// " 3.100 s ago", or "" without a time.
    func since(_ start: Duration?) -> String {
        guard let now, let start else { return "" }
        return " \(seconds(now - start)) ago"
    }

    /// " (held for 3.100 s)" for a granted claim, or "".
    func held(_ claim: ClaimRecord) -> String {
        guard claim.phase == .granted, let now, let granted = claim.grantedAt else { return "" }
        return " (held for \(seconds(now - granted)))"
    }

    /// "1.204 s": milliseconds are what a person needs to read a report.
    func seconds(_ duration: Duration) -> String {
        let milliseconds = Int(max(0, duration / .milliseconds(1)))
        return "\(milliseconds / 1000).\(String(1000 + milliseconds % 1000).dropFirst()) s"
    }

    /// A cycle through the graph from `start`, as its edges, or `nil`.
    func findCycle(from start: WaitNode) -> [WaitEdge]? {
        var onPath: [WaitNode: Int] = [:]
        var path: [WaitEdge] = []
        // Nodes from which no cycle is reachable, known from an earlier search while nothing changed since (many
        // claims queued together have their checks due together: the first search pays, the others reuse it).
        var done: Set<WaitNode> = acyclicGeneration == graphGeneration ? acyclicNodes : []
        defer {
            acyclicNodes = done
            acyclicGeneration = graphGeneration
        }
        if done.contains(start) || noCycleGeneration == graphGeneration { return nil }
        // Which claims hold which presenter's queue, found once for the search (the graph does not change during
        // it): asked presenter by presenter, a search through n presenters read every claim n times.
        let holds = PresenterQueueHolds(self)
        func edges(from node: WaitNode) -> [WaitEdge] {
            guard case .presenter(let presenter) = node else { return self.edges(from: node) }
            return self.edges(from: presenter, holds: holds)
        }
        func visit(_ node: WaitNode) -> [WaitEdge]? {
            statistics.waitNodesExplored += 1
            onPath[node] = path.count
            for edge in edges(from: node) {
                if let index = onPath[edge.to] {
                    return Array(path[index...]) + [edge]
                }
                guard !done.contains(edge.to) else { continue }
                path.append(edge)
                if let cycle = visit(edge.to) { return cycle }
                path.removeLast()
            }
            onPath[node] = nil
            done.insert(node)
            return nil
        }
        // Every cycle passes a presenter whose queue a claim holds (a waiting claim waits only for active claims and
        // for waiting claims that arrived before it, a preparing claim for presenters and granted claims, a granted
        // claim for nothing), so every cycle is reachable from the claims that hold one. Searched from them first, a
        // graph with no cycle is known so for the generation without searching from `start`: the search of a queue
        // of n plain claims walked the queue from each of them, O(n²) in one loop pass (3,000 writers queued on one
        // file took 15 s in a debug build, until stop 71).
        var cycleFound = false
        for held in holds.holdingClaims where !done.contains(.claim(held.id)) {
            if visit(.claim(held.id)) != nil {
                cycleFound = true
                break
            }
        }
        guard cycleFound else {
            noCycleGeneration = graphGeneration
            return nil
        }
        // There is a cycle: the one reachable from `start`, if any (what the search above proved cycle-free is
        // skipped).
        onPath = [:]
        path = []
        return done.contains(start) ? nil : visit(start)
    }

    func breakCycle(_ cycle: [WaitEdge]) {
        graphGeneration &+= 1
        let members = cycle.compactMap { edge -> ClaimRecord? in
            if case .claim(let id) = edge.from { return claims[id] }
            return nil
        }
        let holding = members.filter { $0.request.fromPresenterQueue != nil }
        guard let victim = (holding.isEmpty ? members : holding).max(by: { $0.sequence < $1.sequence }) else { return }
        // Without the host's time, the detection delay is the one lower bound known for every wait.
        let delay =
            now == nil
            ? configuration.deadlockDetectionDelay.map { " after waiting at least \(seconds($0))" } ?? "" : ""
        let report =
            "deadlock found\(delay), one line per edge of the cycle:\n"
            + cycle.map { "  \($0.line)" }.joined(separator: "\n")
            + "\nBroken by failing \(describe(victim)). A synchronous coordinated call blocks the queue it is made "
            + "on, and the presenters on that queue cannot answer until it returns (inside a presenter's callback; "
            + "on the main thread when a presenter uses the main queue): make such calls from another queue, or "
            + "with coordinate(with:queue:byAccessor:) or the async methods, which block nothing."
        statistics.deadlocksBroken += 1
        deadlockReports.append(report)
        if deadlockReports.count > 16 { deadlockReports.removeFirst() }
        log(.warning, report, ["claim.id": "\(victim.id.rawValue)"])
        fail(victim, .deadlock(report))
    }

    /// "claim#12 (write /d/f.txt) of TextEdit (pid 4211)".
    func describe(_ claim: ClaimRecord) -> String {
        if let id = claim.id.lease, let lease = leases[id] {
            // "lease#3 on /d of sync (pid 42), recalled 30.000 s ago, not answered".
            let recall: String
            switch lease.state {
            case .held, .recallDue: recall = ""
            case .recalled: recall = ", recalled\(since(lease.recalledAt))"
            case .recallUnanswered: recall = ", recalled\(since(lease.recalledAt)), not answered"
            case .holderDisconnected: recall = ", its connection closed by filecoordd, kept a while"
            }
            return "\(id) on \(lease.subtree.escapedDescription) of \(describe(lease.client))\(recall)"
        }
        let items = zip(claim.entries, claim.request.items).map { "\($1.access) \($0.path.escapedDescription)" }.joined(
            separator: ", "
        )
        return "\(claim.id) (\(items)) of \(describe(claim.request.client))"
    }

    func describe(_ presenter: PresenterID) -> String {
        guard let record = presenters[presenter] else { return "\(presenter) (gone)" }
        let path = record.registration.path.map { " of \($0.escapedDescription)" } ?? ""
        return "\(presenter)\(path) in \(describe(record.registration.client))"
    }

    func describe(_ client: ClientID) -> String {
        if client == .hostGate { return "another host (this host does not hold the shared folder)" }
        guard let info = clients[client]?.info else { return "\(client)" }
        return "\(info.name) (pid \(info.pid))"
    }
}
