import FCCore
import FCTestSupport
import Testing

/// The access tree keeps the nodes of a path that comes to hold nothing for the next claim on it, instead of pruning
/// them and creating them again per claim (issue 12), and keeps at most `idleNodeRetention` such leaves, pruning the
/// oldest first. Counted through the snapshot (nodes created, idle nodes), never timed.
@Suite struct IdleNodeTests {
    static func harness(retention: Int) -> ArbiterHarness {
        var configuration = ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: nil)
        configuration.idleNodeRetention = retention
        return ArbiterHarness(configuration: configuration)
    }

    @Test func anUncontendedClaimReusesItsNodes() {
        let h = Self.harness(retention: 8)
        let client = h.connect("a")
        for _ in 0..<50 {
            let claim = h.read("/home/user/document.txt", client: client)
            #expect(h.isGranted(claim))
            h.finish(claim)
        }
        let snapshot = h.arbiter.snapshot()
        // Three nodes made once (before: made and pruned 50 times), kept idle after the last claim.
        #expect(snapshot.accessNodesCreated == 3)
        #expect(snapshot.nodeCount == 4)
        #expect(snapshot.idleNodeCount == 3)
        #expect(snapshot.idleLeafCount == 1)
    }

    @Test func withoutRetentionNodesArePrunedAndMadeAgain() {
        let h = Self.harness(retention: 0)
        let client = h.connect("a")
        for _ in 0..<5 {
            h.finish(h.read("/home/user/document.txt", client: client))
        }
        let snapshot = h.arbiter.snapshot()
        #expect(snapshot.accessNodesCreated == 15)
        #expect(snapshot.nodeCount == 1)
    }

    @Test func idleLeavesAreBoundedOldestPrunedFirst() {
        let h = Self.harness(retention: 4)
        let client = h.connect("a")
        for index in 0..<100 {
            h.finish(h.write("/many/item-\(index)", client: client))
            #expect(h.arbiter.snapshot().idleLeafCount <= 4)
        }
        var snapshot = h.arbiter.snapshot()
        // /many and the four newest leaves.
        #expect(snapshot.nodeCount == 1 + 1 + 4)
        #expect(snapshot.idleLeafCount == 4)
        // The newest are still there (reused: nothing created), the oldest were pruned (created again).
        let created = snapshot.accessNodesCreated
        h.finish(h.write("/many/item-99", client: client))
        #expect(h.arbiter.snapshot().accessNodesCreated == created)
        h.finish(h.write("/many/item-0", client: client))
        snapshot = h.arbiter.snapshot()
        #expect(snapshot.accessNodesCreated == created + 1)
        #expect(snapshot.idleLeafCount <= 4)
    }

    @Test func aReusedIdleNodeStillConflictsAndIsKeptWhileHeld() {
        let h = Self.harness(retention: 1)
        let a = h.connect("a")
        let b = h.connect("b")
        h.finish(h.write("/d/f", client: a))
        // The idle /d/f is reused by a held write; more idle leaves come and go meanwhile.
        let holder = h.write("/d/f", client: a)
        for index in 0..<10 { h.finish(h.read("/d/other-\(index)", client: b)) }
        let waiting = h.read("/d/f", client: b)
        #expect(h.isGranted(holder))
        #expect(!h.isGranted(waiting))
        h.finish(holder)
        #expect(h.isGranted(waiting))
        h.finish(waiting)
        let snapshot = h.arbiter.snapshot()
        #expect(snapshot.claims.isEmpty)
        #expect(snapshot.nodeCount == 1 + snapshot.idleNodeCount)
        #expect(snapshot.idleLeafCount <= 1)
    }

    @Test func presentersReuseIdleNodesToo() {
        let h = Self.harness(retention: 2)
        let client = h.connect("a")
        h.finish(h.write("/d/f", client: client))
        let created = h.arbiter.snapshot().accessNodesCreated
        let presenter = h.present("/d/f", client: client, callbacks: [])
        #expect(h.arbiter.snapshot().accessNodesCreated == created)
        _ = h.send(.presenterRemoved(presenter))
        let snapshot = h.arbiter.snapshot()
        #expect(snapshot.nodeCount == 1 + snapshot.idleNodeCount)
        #expect(snapshot.idleLeafCount == 1)
    }
}
