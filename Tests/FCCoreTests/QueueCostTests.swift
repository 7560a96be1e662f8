import FCCore
import FCTestSupport
import Testing

/// What one event costs when many claims queue on one item (issue 11.2): with 250 writers queued behind a held
/// write the daemon answered nothing for minutes, because every event re-examined every waiter against every other
/// waiter, and every deadlock check searched the whole queue again. Costs are counted (the arbiter's statistics),
/// never timed.
@Suite struct QueueCostTests {
    static let queued = 200

    /// A held write on /busy and `queued` writers waiting behind it, each from its own client.
    static func busyItem(_ h: ArbiterHarness) -> (holder: ClaimID, waiters: [ClaimID]) {
        let holder = h.write("/busy", client: h.connect("holder"))
        let waiters = (0..<queued).map { index in h.write("/busy", client: h.connect("waiter-\(index)")) }
        return (holder, waiters)
    }

    @Test func anUnrelatedClaimDoesNotWalkTheQueue() {
        let h = ArbiterHarness()
        let (holder, waiters) = Self.busyItem(h)
        #expect(h.isGranted(holder))
        #expect(!waiters.contains { h.isGranted($0) })
        let before = h.arbiter.statistics.conflictVisits
        let unrelated = h.write("/elsewhere", client: h.connect("unrelated"))
        #expect(h.isGranted(unrelated))
        h.finish(unrelated)
        let cost = h.arbiter.statistics.conflictVisits - before
        // Before: about queued² visits for each of the two events. Now the waiters are parked on the holder and
        // not read at all: what the events read does not depend on the queue.
        #expect(cost < 20, "\(cost) conflict visits for two events on an unrelated item")
        #expect(h.arbiter.snapshot().claims.count == Self.queued + 1)
    }

    /// A dump (`fcdump`: the blockers of each waiting claim, and the wait-for graph) of a queue costs O(queue): until
    /// stop 70 each waiting claim listed every claim ahead of it, about queued²/2 blockers and as many edges, each a
    /// sentence, all on the daemon's loop.
    @Test func aDumpOfAQueueListsAFewBlockersOfEachClaim() {
        let h = ArbiterHarness()
        let (holder, waiters) = Self.busyItem(h)
        let limit = Arbiter.dumpedEdgesPerNode
        let before = h.arbiter.statistics.conflictVisits
        let blockers = waiters.map { h.arbiter.blockers(of: $0, limit: limit) }
        let edges = h.arbiter.waitForEdges()
        let cost = h.arbiter.statistics.conflictVisits - before
        #expect(blockers.first == [holder])
        // The holder first, then the claims queued first.
        #expect(blockers.last == [holder] + waiters.prefix(limit - 1))
        #expect(edges.count <= limit * waiters.count, "\(edges.count) edges")
        #expect(cost < 4 * (limit + 1) * Self.queued, "\(cost) conflict visits for one dump")
    }

    /// The first deadlock check of a plain queue (no claim in it made on a presenter's queue, so it can be on no
    /// cycle) costs O(queue), whether or not a claim elsewhere holds a presenter's queue: until stop 71 its search
    /// walked the queue from every claim in it, O(queue²) in one loop pass.
    @Test(arguments: [false, true]) func aCheckOfAQueueWithNoPresenterQueueHeldDoesNotSearchIt(heldElsewhere: Bool) {
        let h = ArbiterHarness(
            configuration: ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: .seconds(1))
        )
        let (_, waiters) = Self.busyItem(h)
        if heldElsewhere {
            let app = h.connect("app")
            _ = h.write("/other", client: h.connect("other"))
            h.claim([ArbiterHarness.write("/other")], client: app, fromPresenterQueue: h.present("/p", client: app))
        }
        let before = h.arbiter.statistics
        h.send(.timerFired(.deadlockCheck(waiters[waiters.count - 1])))
        let visits = h.arbiter.statistics.conflictVisits - before.conflictVisits
        #expect(h.arbiter.statistics.longWaits == before.longWaits + 1)
        // The long-wait line's blockers: one walk of the queue.
        #expect(visits <= 2 * (Self.queued + 1), "\(visits) conflict visits for one check")
    }

    /// A deadlock search that reaches many presenters reads the claims once: until stop 71 each presenter it reached
    /// read every claim to find those made on its queue, O(presenters × claims) in one loop pass.
    @Test func aSearchThroughManyPresentersReadsTheClaimsOnce() {
        let h = ArbiterHarness(
            configuration: ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: .seconds(1))
        )
        _ = h.write("/busy", client: h.connect("holder"))
        // Each presenter's queue is held by a write made on it, queued behind the holder: no cycle.
        let presenters = (0..<Self.queued).map { index in
            let client = h.connect("app-\(index)")
            let presenter = h.present("/d/f.txt", client: client)
            h.claim([ArbiterHarness.write("/busy")], client: client, fromPresenterQueue: presenter)
            return presenter
        }
        // A write of the presented file asks every presenter, none of which can answer.
        let write = h.write("/d/f.txt", client: h.connect("writer"))
        #expect(h.openRequests().count == presenters.count)
        // A claim on another presenter's queue waits for the write: the search from it goes through every presenter.
        let app = h.connect("app")
        h.claim([ArbiterHarness.write("/d/f.txt")], client: app, fromPresenterQueue: h.present("/q", client: app))
        let before = h.arbiter.statistics
        h.send(.timerFired(.deadlockCheck(write)))
        let read = h.arbiter.statistics.queueHoldClaimsRead - before.queueHoldClaimsRead
        let explored = h.arbiter.statistics.waitNodesExplored - before.waitNodesExplored
        #expect(h.failure(write) == nil)
        #expect(h.arbiter.statistics.longWaits == before.longWaits + 1)
        // The claim on the other queue, the write, every presenter and the write on its queue, and the holder.
        #expect(explored == 2 * Self.queued + 3, "\(explored) wait-for nodes explored")
        #expect(read <= 2 * (Self.queued + 3), "\(read) claims read for one search through \(Self.queued) presenters")
    }

    @Test func theQueueDrainsInOrderAtLinearCostPerGrant() {
        let h = ArbiterHarness()
        let (holder, waiters) = Self.busyItem(h)
        let before = h.arbiter.statistics.conflictVisits
        h.finish(holder)
        #expect(h.isGranted(waiters[0]))
        #expect(!h.isGranted(waiters[1]))
        let cost = h.arbiter.statistics.conflictVisits - before
        #expect(cost < 10 * Self.queued, "\(cost) conflict visits to hand the item on")
    }

    @Test func deadlockChecksOfAQueueShareOneSearchAndReportsAreBounded() {
        let h = ArbiterHarness(
            configuration: ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: .seconds(1))
        )
        let (_, waiters) = Self.busyItem(h)
        // A cycle elsewhere (a write made on the queue of the presenter it asks), so that each check searches from
        // the claim it looks at: the first walks the queue, the others reuse what it found cycle-free.
        let app = h.connect("app")
        h.claim([ArbiterHarness.write("/cycle")], client: app, fromPresenterQueue: h.present("/cycle", client: app))
        h.clearEffects()
        let before = h.arbiter.statistics.waitNodesExplored
        for waiter in waiters { _ = h.send(.timerFired(.deadlockCheck(waiter))) }
        let explored = h.arbiter.statistics.waitNodesExplored - before
        // One search explores the queue once; the other checks reuse it (before: a search per check), and each
        // walks the cycle's two nodes again.
        #expect(explored <= 4 * (Self.queued + 1), "\(explored) wait-for nodes explored by \(Self.queued) checks")
        #expect(h.arbiter.statistics.longWaits == Self.queued)
        // Each long-wait line names a few edges and counts the rest (before: one line per earlier waiter).
        let lines = h.effects.compactMap { effect -> String? in
            if case .log(let record) = effect { return record.message }
            return nil
        }
        #expect(lines.count == Self.queued)
        let longest = lines.map(\.utf8.count).max() ?? 0
        #expect(longest < 2_000, "a long-wait line of \(longest) bytes")
        #expect(lines.last?.contains("and \(Self.queued - 3) more claims it waits for") == true, "\(lines.last ?? "")")
    }
}
