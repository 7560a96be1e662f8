import FCCore
import FCDaemon
import FCProtocol
import Testing

/// The daemon's side of leases (issue 23): grants and recalls reach only the holder, a return's running claims join
/// the holder's numbering, and a lease goes with its holder's connection.
@Suite struct LeaseRoutingTests {
    private static func path(_ string: String) -> ItemPath {
        do { return try ItemPath(absolute: string) } catch { preconditionFailure("\(error)") }
    }

    private func router(leases: Bool = true) -> SessionRouter {
        var configuration = ArbiterConfiguration(presenterTimeout: .seconds(30))
        configuration.leases = leases ? LeasePolicy() : nil
        return SessionRouter(configuration: configuration, maximumClaimsPerClient: 10, maximumPresentersPerClient: 10)
    }

    private func claim(_ local: UInt64, _ path: String, write: Bool = false, purpose: String) -> ClaimRequest {
        ClaimRequest(
            id: ClaimID(local),
            client: ClientID(0),
            coordinator: CoordinatorID(1),
            purpose: PurposeID(purpose),
            items: [ClaimItem(path: Self.path(path), access: write ? .write([]) : .read([]))]
        )
    }

    private func effects(_ routed: SessionRouter.Routed, for client: ClientID) -> [ArbiterEffect] {
        routed.perClient.first { $0.0 == client }?.1 ?? []
    }

    /// Connects a client that answers recalls and gets it a lease on /d past its minimum hold.
    private func leased(_ router: SessionRouter) throws -> (ClientID, LeaseID) {
        let app = router.connect(pid: 10, name: "app", answersRecalls: true)
        _ = try router.handle(.claimRequested(claim(1, "/d/f", purpose: "app")), from: app)
        let finished = try router.handle(.claimFinished(ClaimID(1), created: []), from: app)
        guard case .grantLease(let lease, let holder, let subtree)? = effects(finished, for: app).first else {
            Issue.record("no lease granted: \(finished.perClient)")
            throw CancellationError()
        }
        #expect(holder == app && subtree == Self.path("/d"))
        #expect(Filecoord_V1_Frame(ArbiterEffect.grantLease(lease, client: app, subtree: subtree)) != nil)
        _ = router.timerFired(.leaseMinimumHold(lease))
        return (app, lease)
    }

    @Test func aLeaseIsGrantedOnlyToAClientThatAnswersRecallsAndOnlyWithLeasesOn() throws {
        _ = try leased(router())
        let off = router(leases: false)
        let app = off.connect(pid: 10, name: "app", answersRecalls: true)
        _ = try off.handle(.claimRequested(claim(1, "/d/f", purpose: "app")), from: app)
        #expect(try off.handle(.claimFinished(ClaimID(1), created: []), from: app).perClient.isEmpty)
        let on = router()
        let preload = on.connect(pid: 11, name: "preload:cat")
        _ = try on.handle(.claimRequested(claim(1, "/d/f", purpose: "cat")), from: preload)
        #expect(try on.handle(.claimFinished(ClaimID(1), created: []), from: preload).perClient.isEmpty)
    }

    @Test func anotherClientsWriteRecallsTheLeaseAndWaitsForTheRunningClaimsReturned() throws {
        let router = router()
        let (app, lease) = try leased(router)
        let other = router.connect(pid: 11, name: "other")
        let asked = try router.handle(.claimRequested(claim(1, "/d/f", write: true, purpose: "other")), from: other)
        #expect(effects(asked, for: app) == [.recallLease(lease, client: app)])
        #expect(effects(asked, for: other).isEmpty)
        // The holder still runs a read it granted itself: it declares it, numbered 5 by the holder.
        var running = claim(5, "/d/f", purpose: "app")
        running.isHeld = true
        let returned = try router.handle(.leaseReturned(lease, client: app, running: [running]), from: app)
        #expect(returned.perClient.isEmpty, "the write waits for the declared read")
        #expect(router.arbiter.leaseSnapshots().isEmpty)
        let finished = try router.handle(.claimFinished(ClaimID(5), created: []), from: app)
        #expect(effects(finished, for: other) == [.grant(ClaimID(1), client: other, paths: [Self.path("/d/f")])])
    }

    @Test func aReturnDeclaringALiveClaimIdIsRefused() throws {
        let router = router()
        let (app, lease) = try leased(router)
        _ = try router.handle(.claimRequested(claim(2, "/e", purpose: "app")), from: app)
        var running = claim(2, "/d/f", purpose: "app")
        running.isHeld = true
        #expect(throws: SessionRouter.Refusal.self) {
            try router.handle(.leaseReturned(lease, client: app, running: [running]), from: app)
        }
    }

    @Test func aClientCannotReturnAnotherClientsLease() throws {
        let router = router()
        let (_, lease) = try leased(router)
        let other = router.connect(pid: 11, name: "other")
        _ = try router.handle(.leaseReturned(lease, client: other, running: []), from: other)
        #expect(router.arbiter.leaseSnapshots().map(\.id) == [lease])
    }

    @Test func theHoldersDisconnectDropsItsLeaseAndLetsTheWaiterIn() throws {
        let router = router()
        let (app, _) = try leased(router)
        let other = router.connect(pid: 11, name: "other")
        _ = try router.handle(.claimRequested(claim(1, "/d/f", write: true, purpose: "other")), from: other)
        let gone = router.disconnect(app)
        #expect(effects(gone, for: other) == [.grant(ClaimID(1), client: other, paths: [Self.path("/d/f")])])
        #expect(router.arbiter.leaseSnapshots().isEmpty)
    }
}
