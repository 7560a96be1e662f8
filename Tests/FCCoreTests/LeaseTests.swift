import FCCore
import FCTestSupport
import Testing

/// The lease rules of docs/SEMANTICS.md §13, one by one (issue 23). The simulator checks them at random too.
@Suite struct LeaseTests {
    static func harness(presenterTimeout: Duration? = nil) -> ArbiterHarness {
        var configuration = ArbiterConfiguration(presenterTimeout: presenterTimeout, deadlockDetectionDelay: nil)
        configuration.leases = LeasePolicy()
        return ArbiterHarness(configuration: configuration)
    }

    /// Gets `client` a lease on `directory` (a read of `directory/f` that ends), with its minimum hold passed.
    static func lease(_ h: ArbiterHarness, _ client: ClientID, in directory: String = "/d") throws -> LeaseID {
        let read = h.read(directory + "/f", client: client)
        #expect(h.isGranted(read))
        h.finish(read)
        let grant = try #require(h.lastLeaseGrants.first)
        #expect(grant.1 == client && grant.2 == path(directory))
        h.send(.timerFired(.leaseMinimumHold(grant.0)))
        return grant.0
    }

    /// A read of `/d/f` the holder granted itself in its lease, declared as held with the lease's return.
    static func runningRead(_ id: ClaimID, of client: ClientID, coordinator: CoordinatorID) -> ClaimRequest {
        var running = ClaimRequest(
            id: id,
            client: client,
            coordinator: coordinator,
            purpose: PurposeID("app"),
            items: [ArbiterHarness.read("/d/f")]
        )
        running.isHeld = true
        return running
    }

    @Test func aClientAloneThatAnswersRecallsGetsALeaseOnTheDirectory() throws {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        _ = try Self.lease(h, app)
        #expect(h.arbiter.leaseSnapshots().map(\.subtree) == [path("/d")])
    }

    @Test func noLeaseForAClientThatDoesNotAnswerRecallsNorWithLeasesOff() {
        let h = Self.harness()
        let old = h.connect("libfilecoord")
        h.finish(h.read("/d/f", client: old))
        #expect(h.lastLeaseGrants.isEmpty)
        let off = ArbiterHarness()
        let app = off.connect("app", answersRecalls: true)
        off.finish(off.read("/d/f", client: app))
        #expect(off.lastLeaseGrants.isEmpty)
    }

    @Test(arguments: ["/", "/d", "/d/f", "/d/e/g"])
    func noLeaseWhileAnotherPresenterIsAtUnderOrAbove(presented: String) {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        h.present(presented, client: other)
        h.finish(h.read("/d/f", client: app))
        #expect(h.lastLeaseGrants.isEmpty)
    }

    @Test func noLeaseWhileAnyClaimIsInsideOrAbove() {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        let inside = h.read("/d/g", client: other)
        h.finish(h.read("/d/f", client: app))
        #expect(h.lastLeaseGrants.isEmpty)
        h.finish(inside)
        // The holder's own claim counts too: its in-process arbiter would not know it.
        _ = h.read("/d/g", client: app)
        h.finish(h.read("/d/f", client: app))
        #expect(h.lastLeaseGrants.isEmpty)
        let fresh = Self.harness()
        let holder = fresh.connect("app", answersRecalls: true)
        let another = fresh.connect("other")
        #expect(fresh.isGranted(fresh.read("/", client: another)))
        fresh.finish(fresh.read("/x/f", client: holder))
        #expect(fresh.lastLeaseGrants.isEmpty, "a claim above, even a read, keeps leases away (when unsure, none)")
    }

    @Test func anotherClientsClaimRecallsTheLeaseAndWaitsForTheDeclaredRunningClaims() throws {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        let lease = try Self.lease(h, app)
        let write = h.write("/d/f", client: other)
        #expect(h.lastRecalls == [lease])
        #expect(!h.isGranted(write))
        // The holder still runs a read of /d/f it granted itself: it declares it with the lease.
        let running = Self.runningRead(ClaimID(500), of: app, coordinator: CoordinatorID(500))
        h.send(.leaseReturned(lease, client: app, running: [running]))
        #expect(!h.isGranted(write), "the write waits for the declared read")
        #expect(h.arbiter.leaseSnapshots().isEmpty)
        h.finish(ClaimID(500))
        #expect(h.isGranted(write))
    }

    @Test func aRecallWaitsForTheMinimumHold() throws {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        h.finish(h.read("/d/f", client: app))
        let lease = try #require(h.lastLeaseGrants.first).0
        h.read("/d/g", client: other)
        #expect(h.lastRecalls.isEmpty)
        #expect(h.arbiter.leaseSnapshots().first?.state == .recallDue)
        h.send(.timerFired(.leaseMinimumHold(lease)))
        #expect(h.lastRecalls == [lease])
    }

    @Test func aPresenterOfAnyClientInsideRecallsTheLease() throws {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        let lease = try Self.lease(h, app)
        h.present("/d/f", client: app)
        #expect(h.lastRecalls == [lease])
    }

    @Test func aRecalledClientBacksOffBeforeItsNextLease() throws {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        let lease = try Self.lease(h, app)
        h.finish(h.read("/d/g", client: other))
        h.send(.leaseReturned(lease, client: app, running: []))
        h.finish(h.read("/d/f", client: app))
        #expect(h.lastLeaseGrants.isEmpty, "in back-off")
        h.send(.timerFired(.leaseBackoff(app)))
        h.finish(h.read("/d/f", client: app))
        #expect(h.lastLeaseGrants.count == 1)
    }

    @Test func aHolderThatDisconnectsLosesItsLeasesAtOnce() throws {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        _ = try Self.lease(h, app)
        let write = h.write("/d/f", client: other)
        #expect(!h.isGranted(write))
        h.send(.clientDisconnected(app))
        #expect(h.isGranted(write))
        #expect(h.arbiter.leaseSnapshots().isEmpty)
    }

    /// §13 rule 5: the host closed the holder's connection itself while its process may live on. Its lease stays,
    /// recalled by nothing, holding back conflicting claims; the holder's running read, declared when it reconnects,
    /// is taken beside it; when the lease's time passes, the declared read still holds the write back.
    @Test func aHolderWhoseConnectionTheHostClosedKeepsItsLeaseUntilItsTimePasses() throws {
        let h = Self.harness(presenterTimeout: .seconds(30))
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        let lease = try Self.lease(h, app)
        let recallsBefore = h.arbiter.statistics.leaseRecalls
        h.send(.clientClosed(app, keepingLeasesFor: .seconds(2)))
        #expect(h.lastEffects.contains(.startTimer(.leaseOrphaned(lease), after: .seconds(2))))
        #expect(h.arbiter.leaseSnapshots().map(\.state) == [.holderDisconnected])
        let write = h.write("/d/f", client: other)
        #expect(!h.isGranted(write))
        #expect(h.arbiter.blockers(of: write) == [lease.claim])
        #expect(h.arbiter.statistics.leaseRecalls == recallsBefore, "nobody to recall it from")
        // The holder reconnects and declares the read it granted itself in the lease.
        let again = h.connect("app", answersRecalls: true)
        h.send(.claimRequested(Self.runningRead(ClaimID(900), of: again, coordinator: CoordinatorID(901))))
        #expect(h.arbiter.snapshot().claims.contains { $0.request.id == ClaimID(900) && $0.phase == .granted })
        h.send(.timerFired(.leaseOrphaned(lease)))
        #expect(h.arbiter.leaseSnapshots().isEmpty)
        #expect(!h.isGranted(write), "the declared read holds it back")
        h.finish(ClaimID(900))
        #expect(h.isGranted(write))
    }

    @Test func aHolderThatDisconnectsNormallyOrAnotherLeaseTimerDoesNotEndAKeptLease() throws {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        let lease = try Self.lease(h, app)
        // The timer of a lease still held is ignored.
        h.send(.timerFired(.leaseOrphaned(lease)))
        #expect(h.arbiter.leaseSnapshots().map(\.state) == [.held])
        h.send(.clientClosed(app, keepingLeasesFor: .seconds(2)))
        for timer: TimerID in [.leaseMinimumHold(lease), .leaseRecallReply(lease), .leaseBackoff(app)] {
            h.send(.timerFired(timer))
            #expect(h.arbiter.leaseSnapshots().map(\.state) == [.holderDisconnected])
        }
        h.send(.leaseReturned(lease, client: app, running: []))
        #expect(h.arbiter.leaseSnapshots().map(\.state) == [.holderDisconnected], "a return from a gone client")
    }

    @Test func anUnansweredRecallIsReportedAndStillHoldsBackConflictingClaims() throws {
        let h = Self.harness(presenterTimeout: .seconds(30))
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        let lease = try Self.lease(h, app)
        let write = h.write("/d/f", client: other)
        h.send(.timerFired(.leaseRecallReply(lease)))
        #expect(h.arbiter.leaseSnapshots().first?.state == .recallUnanswered)
        #expect(h.arbiter.statistics.leaseRecallTimeouts == 1)
        #expect(!h.isGranted(write))
        #expect(h.arbiter.blockers(of: write) == [lease.claim])
    }

    @Test func nothingIsExemptFromALeaseNorCanAClientNameItsClaim() throws {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        let lease = try Self.lease(h, app)
        let write = h.write("/d/f", client: other, purpose: PurposeID("\(lease)"))
        #expect(!h.isGranted(write))
        h.send(.claimFinished(lease.claim, created: []))
        h.send(.claimCancelled(lease.claim))
        #expect(h.arbiter.leaseSnapshots().count == 1)
        h.send(
            .claimRequested(
                ClaimRequest(
                    id: ClaimID(ClaimID.leaseBit | 77),
                    client: other,
                    coordinator: CoordinatorID(9),
                    purpose: PurposeID("x"),
                    items: [ArbiterHarness.read("/e")]
                )
            )
        )
        #expect(h.failure(ClaimID(ClaimID.leaseBit | 77)) != nil)
    }
}

/// A policy without minimum hold or back-off (what the recall benchmark uses) recalls at once and grants again.
@Suite struct ZeroLeasePolicyTests {
    @Test func aZeroMinimumHoldRecallsAtOnceAndAZeroBackoffGrantsAgain() throws {
        var configuration = ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: nil)
        var policy = LeasePolicy()
        policy.minimumHold = .zero
        policy.initialBackoff = .zero
        policy.maximumBackoff = .zero
        configuration.leases = policy
        let h = ArbiterHarness(configuration: configuration)
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        h.finish(h.read("/d/f", client: app))
        let lease = try #require(h.lastLeaseGrants.first).0
        h.read("/d/g", client: other)
        #expect(h.lastRecalls == [lease])
        h.send(.leaseReturned(lease, client: app, running: []))
        h.finish(try #require(h.arbiter.snapshot().claims.first).request.id)
        h.finish(h.read("/e/f", client: app))
        #expect(h.lastLeaseGrants.count == 1, "no back-off")
    }
}

/// A holder's own claim sent before its lease's grant reached it is handed back, not a reason for a recall.
@Suite struct HandedBackClaimTests {
    @Test func aHoldersOwnClaimInsideItsHeldLeaseIsHandedBackAndOneReachingOutsideRecallsIt() throws {
        let h = LeaseTests.harness()
        let app = h.connect("app", answersRecalls: true)
        let lease = try LeaseTests.lease(h, app)
        let inside = h.read("/d/g", client: app)
        #expect(h.lastEffects.contains(.claimInsideLease(inside, client: app, lease: lease)))
        #expect(h.lastRecalls.isEmpty)
        #expect(h.arbiter.phase(of: inside) == nil, "forgotten by the arbiter")
        #expect(h.arbiter.statistics.claimsHandedToLeases == 1)
        // A claim reaching outside the lease is the daemon's: the lease is recalled.
        let across = h.claim([ArbiterHarness.read("/d/g"), ArbiterHarness.read("/e")], client: app)
        #expect(h.lastRecalls == [lease])
        #expect(!h.isGranted(across))
    }

    /// Issue 23 with 26: two holders each deciding in process a claim on one file through two of its names (a hard
    /// link from one leased folder into the other) would both hold it. A file with other names is the daemon's.
    @Test func aHoldersOwnClaimOnAFileWithOtherNamesIsNotHandedBackButRecallsItsLease() throws {
        let h = LeaseTests.harness()
        let app = h.connect("app", answersRecalls: true)
        let lease = try LeaseTests.lease(h, app)
        var linked = ArbiterHarness.write("/d/g")
        linked.identity = ItemIdentity(device: 1, inode: 9)
        linked.hasOtherNames = true
        let request = ClaimRequest(
            id: ClaimID(1),
            client: app,
            coordinator: CoordinatorID(1),
            purpose: PurposeID("app"),
            items: [linked]
        )
        #expect(!request.mayBeDecided(inLeaseOn: path("/d")))
        let claim = h.claim([linked], client: app)
        #expect(!h.lastEffects.contains { if case .claimInsideLease = $0 { true } else { false } })
        #expect(h.lastRecalls == [lease])
        #expect(!h.isGranted(claim), "granted before the lease came back")
        h.send(.leaseReturned(lease, client: app, running: []))
        #expect(h.isGranted(claim))
    }
}

/// Found by the simulator: a running claim declared with a lease's return, made by a coordinator cancelled since, was
/// refused as "cancelled", and a conflicting write got in while it ran.
@Suite struct DeclaredClaimOfACancelledCoordinatorTests {
    @Test func aRunningClaimOfACancelledCoordinatorStillHoldsBackConflictingClaims() throws {
        let h = LeaseTests.harness()
        let app = h.connect("app", answersRecalls: true)
        let other = h.connect("other")
        let lease = try LeaseTests.lease(h, app)
        h.send(.coordinatorCancelled(app, CoordinatorID(700)))
        let write = h.write("/d/f", client: other)
        let running = LeaseTests.runningRead(ClaimID(600), of: app, coordinator: CoordinatorID(700))
        h.send(.leaseReturned(lease, client: app, running: [running]))
        #expect(h.failure(ClaimID(600)) == nil)
        #expect(!h.isGranted(write), "the write got in while the declared read ran")
        h.finish(ClaimID(600))
        #expect(h.isGranted(write))
    }
}

/// The holder's fast path (issue 23's profile): `Arbiter.grantsAtOnce(_:)` says yes only when a claim would be
/// granted at once by `handle` and nothing else would change.
@Suite struct GrantsAtOnceTests {
    static func request(_ id: UInt64, _ item: ClaimItem, client: ClientID, coordinator: UInt64 = 1) -> ClaimRequest {
        ClaimRequest(
            id: ClaimID(id),
            client: client,
            coordinator: CoordinatorID(coordinator),
            purpose: PurposeID("p\(coordinator)"),
            items: [item]
        )
    }

    @Test func anIdleArbiterGrantsAtOnceWhatItWouldGrantAtOnce() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let first = Self.request(1, ArbiterHarness.write("/d/f"), client: app)
        #expect(h.arbiter.grantsAtOnce(first))
        h.send(.claimRequested(first))
        #expect(h.lastEffects == [.grant(first.id, client: app, paths: [path("/d/f")])])
        // A live claim: the arbiter must decide the next one (it may conflict).
        #expect(!h.arbiter.grantsAtOnce(Self.request(2, ArbiterHarness.read("/e"), client: app, coordinator: 2)))
        h.finish(first.id)
        #expect(h.arbiter.grantsAtOnce(Self.request(3, ArbiterHarness.read("/d/f"), client: app, coordinator: 3)))
    }

    @Test func notWithAPresenterACancelledCoordinatorOrABadRequest() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        h.send(.coordinatorCancelled(app, CoordinatorID(9)))
        let cancelled = Self.request(1, ArbiterHarness.read("/d/f"), client: app, coordinator: 9)
        #expect(!h.arbiter.grantsAtOnce(cancelled))
        h.send(.claimRequested(cancelled))
        #expect(h.failure(cancelled.id) != nil)
        var empty = Self.request(2, ArbiterHarness.read("/d/f"), client: app)
        empty.items = []
        #expect(!h.arbiter.grantsAtOnce(empty))
        let presenter = PresenterID(7)
        h.send(.presenterAdded(PresenterRegistration(id: presenter, client: app, path: path("/x"))))
        #expect(!h.arbiter.grantsAtOnce(Self.request(3, ArbiterHarness.read("/d/f"), client: app)))
    }
}
