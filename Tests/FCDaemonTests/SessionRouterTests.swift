import FCCore
import FCDaemon
import FCProtocol
import FCSystem
import Testing

/// The daemon's id mapping: clients number their own presenters and claims, and cannot reach each other's.
@Suite struct SessionRouterTests {
    private static func path(_ string: String) -> ItemPath {
        do { return try ItemPath(absolute: string) } catch { preconditionFailure("\(error)") }
    }

    private func router(claims: Int = 100, presenters: Int = 100) -> SessionRouter {
        SessionRouter(
            configuration: ArbiterConfiguration(presenterTimeout: nil),
            maximumClaimsPerClient: claims,
            maximumPresentersPerClient: presenters
        )
    }

    /// A write claim in a client's own numbering. Purposes are global, so each client gets its own.
    private func write(_ local: UInt64, _ path: String, by client: ClientID, coordinator: UInt64 = 1) -> ArbiterEvent {
        .claimRequested(
            ClaimRequest(
                id: ClaimID(local),
                client: ClientID(0),
                coordinator: CoordinatorID(coordinator),
                purpose: PurposeID("client\(client.rawValue)-coordinator\(coordinator)"),
                items: [ClaimItem(path: Self.path(path), access: .write([]))]
            )
        )
    }

    private func effects(_ routed: SessionRouter.Routed, for client: ClientID) -> [ArbiterEffect] {
        routed.perClient.first { $0.0 == client }?.1 ?? []
    }

    @Test func twoClientsUsingTheSameLocalIDsDoNotCollide() throws {
        let router = router()
        let a = router.connect(pid: 10, name: "a")
        let b = router.connect(pid: 11, name: "b")
        let grantedA = try router.handle(write(1, "/x", by: a), from: a)
        #expect(effects(grantedA, for: a) == [.grant(ClaimID(1), client: a, paths: [Self.path("/x")])])
        // b's claim 1 on the same item waits for a's claim 1: they are two claims.
        let waitingB = try router.handle(write(1, "/x", by: b), from: b)
        #expect(waitingB.perClient.isEmpty)
        let released = try router.handle(.claimFinished(ClaimID(1), created: []), from: a)
        #expect(effects(released, for: b) == [.grant(ClaimID(1), client: b, paths: [Self.path("/x")])])
    }

    @Test func aClientCannotFinishOrCancelAnotherClientsClaim() throws {
        let router = router()
        let a = router.connect(pid: 10, name: "a")
        let b = router.connect(pid: 11, name: "b")
        _ = try router.handle(write(7, "/x", by: a), from: a)
        _ = try router.handle(write(8, "/x", by: b), from: b)
        // b names a's claim number: it has no claim 7, so nothing happens.
        #expect(try router.handle(.claimFinished(ClaimID(7), created: []), from: b).perClient.isEmpty)
        #expect(try router.handle(.claimCancelled(ClaimID(7)), from: b).perClient.isEmpty)
        #expect(router.arbiter.snapshot().claims.map(\.phase) == [.granted, .waiting])
    }

    /// A router with two clients, `a` presenting `/x` as its presenter 1, and `b`.
    private func routerWithAPresenterOfA() throws -> (SessionRouter, a: ClientID, b: ClientID) {
        let router = router()
        let a = router.connect(pid: 10, name: "a")
        let b = router.connect(pid: 11, name: "b")
        let registration = PresenterRegistration(id: PresenterID(1), client: ClientID(0), path: Self.path("/x"))
        _ = try router.handle(.presenterAdded(registration), from: a)
        return (router, a, b)
    }

    @Test func onlyThePresentersOwnClientMayAnswerItsRequest() throws {
        let (router, a, b) = try routerWithAPresenterOfA()
        let asked = try router.handle(write(1, "/x", by: b), from: b)
        guard case .message(let message)? = effects(asked, for: a).first, let request = message.request else {
            Issue.record("a's presenter was not asked: \(asked.perClient)")
            return
        }
        #expect(message.presenter == PresenterID(1))  // a's own number for its presenter
        #expect(message.kind == .relinquishToWriter)
        // b answers a's request: ignored; the write still waits.
        #expect(
            try router.handle(.presenterReplied(request, .relinquished(reacquirer: false)), from: b).perClient.isEmpty
        )
        #expect(router.arbiter.snapshot().claims.first?.phase == .preparing)
        let granted = try router.handle(.presenterReplied(request, .relinquished(reacquirer: false)), from: a)
        #expect(effects(granted, for: b) == [.grant(ClaimID(1), client: b, paths: [Self.path("/x")])])
    }

    /// A write's end in the future (a client's clock ahead, or a lie) is taken as now: otherwise every change to the
    /// item read before that moment was taken for the write's echo, and its record waited for the watcher that long.
    @Test func aWritesEndInTheFutureIsTakenAsNow() throws {
        var configuration = ArbiterConfiguration(presenterTimeout: nil)
        configuration.watchesFileSystem = true
        configuration.watcherSaysHowFarItRead = true
        let router = SessionRouter(
            configuration: configuration,
            maximumClaimsPerClient: 10,
            maximumPresentersPerClient: 10
        )
        let a = router.connect(pid: 10, name: "a")
        let b = router.connect(pid: 11, name: "b")
        let file = Self.path("/d/f")
        let registration = PresenterRegistration(id: PresenterID(1), client: ClientID(0), path: file)
        _ = try router.handle(.presenterAdded(registration), from: a)
        _ = try router.handle(write(1, "/d/f", by: b, coordinator: 2), from: b)
        // The presenter relinquishes (its default callbacks), and the write is granted.
        for (request, _) in router.arbiter.snapshot().outstandingRequests {
            _ = try router.handle(.presenterReplied(request, .relinquished(reacquirer: false)), from: a)
        }
        #expect(router.arbiter.snapshot().claims.first?.phase == .granted)
        let now = ChangeTimes.now
        let hour: Int64 = 3_600_000_000_000
        let written = ItemStamp.present(inode: 7, size: 1, changeTime: now - 1_000)
        _ = try router.handle(
            .claimFinished(ClaimID(1), created: [], outcome: WriteOutcome(endedAt: now + hour, items: [file: written])),
            from: b
        )
        // Another process appends a second later; the watcher reads it then.
        let later = now + 1_000_000_000
        let routed = router.fileSystemChanged(
            [.changed(file)],
            observed: [file: .present(inode: 7, size: 2, changeTime: later)],
            readAt: later,
            drainedAt: later
        )
        let told = effects(routed, for: a).contains {
            if case .message(let message) = $0 { message.kind == .presentedItemDidChange } else { false }
        }
        #expect(told, "the append after the write was taken for its echo")
    }

    @Test func limitsAndDuplicateIDsAreRefusedBeforeTheArbiterSeesThem() throws {
        let router = router(claims: 2, presenters: 1)
        let a = router.connect(pid: 10, name: "a")
        _ = try router.handle(write(1, "/x", by: a), from: a)
        #expect(throws: SessionRouter.Refusal.duplicateID("claim id 1")) {
            try router.handle(write(1, "/y", by: a), from: a)
        }
        _ = try router.handle(write(2, "/y", by: a), from: a)
        #expect(throws: SessionRouter.Refusal.tooManyClaims(limit: 2)) {
            try router.handle(write(3, "/z", by: a), from: a)
        }
        let registration = PresenterRegistration(id: PresenterID(1), client: ClientID(0), path: Self.path("/p"))
        _ = try router.handle(.presenterAdded(registration), from: a)
        var second = registration
        second.id = PresenterID(2)
        #expect(throws: SessionRouter.Refusal.tooManyPresenters(limit: 1)) {
            try router.handle(.presenterAdded(second), from: a)
        }
        #expect(router.arbiter.snapshot().claims.count == 2)
        #expect(router.arbiter.snapshot().presenters.count == 1)
    }

    @Test func aDisconnectReleasesEverythingAndTheWaiterGoesOn() throws {
        let router = router()
        let a = router.connect(pid: 10, name: "a")
        let b = router.connect(pid: 11, name: "b")
        let registration = PresenterRegistration(id: PresenterID(1), client: ClientID(0), path: Self.path("/x/p"))
        _ = try router.handle(.presenterAdded(registration), from: a)
        _ = try router.handle(write(1, "/x", by: a), from: a)
        _ = try router.handle(write(1, "/x", by: b), from: b)
        let routed = router.disconnect(a)
        #expect(effects(routed, for: b) == [.grant(ClaimID(1), client: b, paths: [Self.path("/x")])])
        #expect(router.clients.map(\.id) == [b])
        #expect(router.arbiter.snapshot().presenters.isEmpty)
        // A finished claim's local id may be used again.
        _ = try router.handle(.claimFinished(ClaimID(1), created: []), from: b)
        #expect(effects(try router.handle(write(1, "/x", by: b), from: b), for: b).count == 1)
    }

    /// Issue 10: the table of who owes which reply gained an entry per presenter request and lost it only on a
    /// reacquire or a disconnect, so a long-lived daemon grew without bound.
    @Test(arguments: [false, true])
    func answeredRequestsLeaveNothingBehind(handsBackReacquirer: Bool) throws {
        let router = router()
        let app = router.connect(pid: 10, name: "app")
        let tool = router.connect(pid: 11, name: "tool")
        let registration = PresenterRegistration(
            id: PresenterID(1),
            client: ClientID(0),
            path: Self.path("/x"),
            callbacks: [.relinquishToWriter]
        )
        _ = try router.handle(.presenterAdded(registration), from: app)
        for local in 1...10_000 as ClosedRange<UInt64> {
            let asked = try router.handle(write(local, "/x", by: tool), from: tool)
            guard case .message(let message) = effects(asked, for: app).first, let request = message.request else {
                Issue.record("write \(local): the presenter was not asked to relinquish")
                return
            }
            #expect(router.openRequestCount == 1)
            let reply = PresenterReply.relinquished(reacquirer: handsBackReacquirer)
            let granted = try router.handle(.presenterReplied(request, reply), from: app)
            #expect(effects(granted, for: tool) == [.grant(ClaimID(local), client: tool, paths: [Self.path("/x")])])
            _ = try router.handle(.claimFinished(ClaimID(local), created: []), from: tool)
        }
        #expect(router.openRequestCount == 0)
    }

    @Test func aRequestIsForgottenWhenItsClientDisconnects() throws {
        let router = router()
        let app = router.connect(pid: 10, name: "app")
        let tool = router.connect(pid: 11, name: "tool")
        let registration = PresenterRegistration(id: PresenterID(1), client: ClientID(0), path: Self.path("/x"))
        _ = try router.handle(.presenterAdded(registration), from: app)
        _ = try router.handle(write(1, "/x", by: tool), from: tool)
        #expect(router.openRequestCount == 1)
        _ = router.disconnect(app)
        #expect(router.openRequestCount == 0)
    }

    @Test func aPresenterErrorOfAnotherClientReachesTheClaimantWithoutAPresenterID() throws {
        let (router, a, b) = try routerWithAPresenterOfA()
        let error = PresenterError(domain: "D", code: 1, message: "refused")
        let deletion = ClaimRequest(
            id: ClaimID(1),
            client: ClientID(0),
            coordinator: CoordinatorID(1),
            purpose: PurposeID("client\(b.rawValue)-delete"),
            items: [ClaimItem(path: Self.path("/x"), access: .write(.forDeleting))]
        )
        var routed = try router.handle(.claimRequested(deletion), from: b)
        // a's presenter relinquishes, then fails what else it is asked (to accommodate the deletion): b's claim fails.
        for _ in 0..<5 {
            guard case .message(let message)? = effects(routed, for: a).first, let request = message.request else {
                break
            }
            let reply: PresenterReply =
                switch message.kind {
                case .relinquishToReader, .relinquishToWriter: .relinquished(reacquirer: false)
                default: .failed(error)
                }
            routed = try router.handle(.presenterReplied(request, reply), from: a)
        }
        guard case .fail(let claim, _, let failure)? = effects(routed, for: b).first else {
            Issue.record("b's write did not fail: \(routed.perClient)")
            return
        }
        #expect(claim == ClaimID(1))
        // a's presenter number means nothing to b: the failure names no presenter (docs/PROTOCOL.md, ClaimFailed).
        #expect(failure == .presenterError(error, presenter: nil))
        let frame = Filecoord_V1_Frame(ArbiterEffect.fail(claim, client: b, failure))
        guard case .claimFailed(let failed)? = frame?.payload else {
            Issue.record("no ClaimFailed frame: \(String(describing: frame))")
            return
        }
        #expect(!failed.hasPresenterID)
    }
}
