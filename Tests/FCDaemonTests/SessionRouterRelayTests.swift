import FCCore
import FCDaemon
import Testing

/// Messages another host asks this daemon to relay to its presenters (issue 41): delivered like the arbiter's own,
/// answered back to the relay, never to the arbiter; presenters' comings and goings reported for publishing.
@Suite struct SessionRouterRelayTests {
    private static func path(_ string: String) -> ItemPath {
        do { return try ItemPath(absolute: string) } catch { preconditionFailure("\(error)") }
    }

    private func router() -> SessionRouter {
        SessionRouter(
            configuration: ArbiterConfiguration(presenterTimeout: nil),
            maximumClaimsPerClient: 100,
            maximumPresentersPerClient: 100
        )
    }

    /// Registers presenter 5 of `client` at `/share/doc`; returns its global id (from the change reported).
    private func present(_ router: SessionRouter, _ client: ClientID) throws -> PresenterID {
        let routed = try router.handle(
            .presenterAdded(PresenterRegistration(id: PresenterID(5), client: client, path: Self.path("/share/doc"))),
            from: client
        )
        guard case .added(let registration)? = routed.presenterChanges.first else {
            Issue.record("no presenter change reported: \(routed.presenterChanges)")
            return PresenterID(0)
        }
        #expect(registration.client == client && registration.path == Self.path("/share/doc"))
        return registration.id
    }

    @Test func aRelayedRequestReachesThePresenterAndItsReplyComesBackToTheRelay() throws {
        let router = router()
        let client = router.connect(pid: 10, name: "editor")
        let global = try present(router, client)
        let message = PresenterMessage(
            presenter: global,
            client: ClientID(0),
            request: nil,
            claim: ClaimID(99),
            kind: .relinquishToWriter
        )
        let (routed, request) = try #require(router.relay(message))
        let relay = try #require(request)
        #expect(relay.rawValue & RequestID.relayBit != 0)
        guard case .message(let delivered)? = routed.perClient.first(where: { $0.0 == client })?.1.first else {
            Issue.record("nothing delivered: \(routed.perClient)")
            return
        }
        // In the client's ids, for no claim of its own.
        #expect(delivered.presenter == PresenterID(5) && delivered.claim == nil && delivered.request == relay)
        // Another client cannot answer it; its own answer goes back to the relay, not to the arbiter.
        let other = router.connect(pid: 11, name: "other")
        #expect(
            try router.handle(.presenterReplied(relay, .relinquished(reacquirer: true)), from: other)
                .relayReplies.isEmpty
        )
        let replied = try router.handle(.presenterReplied(relay, .relinquished(reacquirer: true)), from: client)
        #expect(replied.relayReplies.map(\.0) == [relay])
        #expect(replied.perClient.isEmpty && router.openRelayCount == 0 && router.openRequestCount == 0)
        // A reacquire names the relay's request, and needs no reply.
        let reacquire = PresenterMessage(
            presenter: global,
            client: ClientID(0),
            request: nil,
            claim: nil,
            kind: .reacquire(relinquish: relay)
        )
        #expect(try #require(router.relay(reacquire)).request == nil)
    }

    @Test func aRelayToAPresenterThatIsGoneSaysSoAndADisconnectForgetsOpenRelays() throws {
        let router = router()
        let client = router.connect(pid: 10, name: "editor")
        let global = try present(router, client)
        let save = PresenterMessage(
            presenter: global,
            client: ClientID(0),
            request: nil,
            claim: nil,
            kind: .savePresentedItemChanges
        )
        _ = try #require(router.relay(save))
        #expect(router.openRelayCount == 1)
        let gone = router.disconnect(client)
        #expect(router.openRelayCount == 0)
        guard case .removed(let removed, let owner)? = gone.presenterChanges.first else {
            Issue.record("the disconnect reported no presenter gone")
            return
        }
        #expect(removed == global && owner == client)
        #expect(router.relay(save) == nil)
    }

    @Test func aURLChangeIsReported() throws {
        let router = router()
        let client = router.connect(pid: 10, name: "editor")
        let global = try present(router, client)
        let moved = try router.handle(.presenterURLChanged(PresenterID(5), to: Self.path("/share/new")), from: client)
        guard case .moved(let id, _, let to)? = moved.presenterChanges.first else {
            Issue.record("no move reported")
            return
        }
        #expect(id == global && to == Self.path("/share/new"))
    }

    /// Found by review: a relayed request whose presenter went away unanswered stayed in the router and in the
    /// adapter for ever, and the asking host was never answered.
    @Test func aRelayedRequestWhosePresenterGoesIsReportedDropped() throws {
        let router = router()
        let client = router.connect(pid: 10, name: "editor")
        let global = try present(router, client)
        let relinquish = PresenterMessage(
            presenter: global,
            client: ClientID(0),
            request: nil,
            claim: nil,
            kind: .relinquishToWriter
        )
        let first = router.relay(relinquish)?.request
        #expect(first != nil)
        let removed = try router.handle(.presenterRemoved(PresenterID(5)), from: client)
        #expect(removed.relayDropped == [first].compactMap { $0 })
        #expect(router.openRelayCount == 0 && router.openRequestCount == 0)

        let again = try present(router, client)
        let save = PresenterMessage(
            presenter: again,
            client: ClientID(0),
            request: nil,
            claim: nil,
            kind: .savePresentedItemChanges
        )
        let second = router.relay(save)?.request
        #expect(second != nil)
        #expect(router.disconnect(client).relayDropped == [second].compactMap { $0 })
        #expect(router.openRelayCount == 0)
    }
}
