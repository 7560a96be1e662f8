import FCCore
import FCTestSupport
import Testing

/// No lease at, under or above an excluded subtree (issue 26: the daemon's document-portal mount, whose paths the
/// daemon keys as the host files they export, so a holder could not decide claims on them in its own process).
@Suite struct LeaseExclusionTests {
    @Test(arguments: ["/d", "/d/portal", "/"])
    func noLeaseAtUnderOrAboveAnExcludedSubtree(excluded: String) {
        let h = LeaseTests.harness()
        let app = h.connect("app", answersRecalls: true)
        #expect(h.arbiter.excludeLeases(around: path(excluded)).isEmpty)
        h.finish(h.read("/d/f", client: app))
        #expect(h.lastLeaseGrants.isEmpty)
        // Elsewhere leases go on (unless the root is excluded).
        h.finish(h.read("/e/f", client: app))
        #expect(h.lastLeaseGrants.map(\.2) == (excluded == "/" ? [] : [path("/e")]))
    }

    @Test func aLeaseThereIsRecalledWhenTheSubtreeIsExcluded() throws {
        let h = LeaseTests.harness()
        let app = h.connect("app", answersRecalls: true)
        let lease = try LeaseTests.lease(h, app)
        let other = try LeaseTests.lease(h, app, in: "/e")
        let effects = h.arbiter.excludeLeases(around: path("/d/doc"))
        let recalled = effects.compactMap { effect -> LeaseID? in
            if case .recallLease(let id, _) = effect { return id }
            return nil
        }
        #expect(recalled == [lease])
        #expect(!recalled.contains(other))
    }

    @Test func theExclusionsAreBounded() {
        let h = LeaseTests.harness()
        let app = h.connect("app", answersRecalls: true)
        for index in 0...Arbiter.maximumLeaseExclusions { _ = h.arbiter.excludeLeases(around: path("/x\(index)")) }
        #expect(h.arbiter.leaseExclusions.count <= Arbiter.maximumLeaseExclusions)
        // Past the bound the root is excluded: no lease anywhere, never a lease over an excluded subtree.
        h.finish(h.read("/e/f", client: app))
        #expect(h.lastLeaseGrants.isEmpty)
    }

    /// Keys that changed above a lease's folder (a FAT volume mounted at `/d`, over a lease on `/d/DOCS`): the holder
    /// may have decided claims whose paths key otherwise now, outside the folder as keyed, so the lease's claim holds
    /// `/d` too until it is returned; a claim granted there before stays granted.
    @Test func aLeaseBelowKeysThatChangedHoldsTheirPointUntilReturned() throws {
        let h = LeaseTests.harness()
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        let lease = try LeaseTests.lease(h, app, in: "/d/DOCS")
        let before = h.read("/d/e", client: other)
        #expect(h.isGranted(before))
        let effects = h.arbiter.recallLeasesAtOnce(around: path("/d"))
        #expect(effects.contains { if case .recallLease(lease, app) = $0 { true } else { false } })
        #expect(h.isGranted(before))
        let write = h.write("/d/docs/late.txt", client: other)
        #expect(!h.isGranted(write))
        // Told twice (another event before the return): one entry.
        _ = h.arbiter.recallLeasesAtOnce(around: path("/d"))
        #expect(
            h.arbiter.snapshot().claims.first { $0.request.id == lease.claim }?.paths == [path("/d/DOCS"), path("/d")]
        )
        h.send(.leaseReturned(lease, client: app, running: []))
        #expect(h.isGranted(write))
    }
}
