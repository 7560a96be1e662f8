import FCCore
import FCTestSupport
import Testing

/// Claims that must not wait (`ClaimRequest.nonblocking`, issue 43, `fccoord -n`; docs/SEMANTICS.md §2 rule 9): one
/// that a conflicting claim would hold back is refused with `.wouldWait` instead of queued; presenters and lease
/// recalls are waited for.
@Suite struct NonblockingTests {
    /// Requests a claim that must not wait, of `items`, by `client` (a coordinator and purpose of its own).
    @discardableResult
    private func nonblocking(
        _ h: ArbiterHarness,
        _ id: UInt64,
        _ items: [ClaimItem],
        client: ClientID,
        purpose: PurposeID? = nil
    ) -> ClaimID {
        let claim = ClaimID(2_000 + id)
        let coordinator = h.coordinator()
        var request = ClaimRequest(
            id: claim,
            client: client,
            coordinator: coordinator,
            purpose: purpose ?? PurposeID("nonblocking \(id)"),
            items: items
        )
        request.nonblocking = true
        h.send(.claimRequested(request))
        return claim
    }

    private func isWouldWait(_ failure: ClaimFailure?) -> Bool {
        if case .wouldWait = failure { true } else { false }
    }

    @Test func aGrantedConflictingClaimRefusesItAtOnce() throws {
        let h = ArbiterHarness()
        let script = h.connect("fccoord", pid: 40)
        let editor = h.connect("editor", pid: 41)
        let holder = h.write("/d/doc", client: editor)
        #expect(h.isGranted(holder))
        let refused = nonblocking(h, 1, [ArbiterHarness.write("/d/doc")], client: script)
        let failure = try #require(h.failure(refused))
        #expect(isWouldWait(failure))
        #expect("\(failure)".contains("editor (pid 41)"), "\(failure)")
        #expect(!h.isGranted(refused))
        // Nothing of it is left: a later claim is decided as if it had never come.
        #expect(h.arbiter.blockers(of: refused).isEmpty)
        h.finish(holder)
        let granted = nonblocking(h, 2, [ArbiterHarness.write("/d/doc")], client: script)
        #expect(h.isGranted(granted))
    }

    @Test func aClaimQueuedAheadRefusesItToo() throws {
        let h = ArbiterHarness()
        let script = h.connect("fccoord")
        let app = h.connect("app")
        let reader = h.read("/d/doc", client: app)
        let queued = h.write("/d/doc", client: app)
        #expect(h.isGranted(reader) && !h.isGranted(queued))
        // A read shares with the granted read, but would pass the write queued ahead of it (rule 6): refused.
        let refused = nonblocking(h, 1, [ArbiterHarness.read("/d/doc")], client: script)
        #expect(isWouldWait(h.failure(refused)))
        // The queued write is unaffected.
        h.finish(reader)
        #expect(h.isGranted(queued))
    }

    @Test func nothingInTheWayOrAReaderAmongReadersIsGrantedAsUsual() throws {
        let h = ArbiterHarness()
        let script = h.connect("fccoord")
        let app = h.connect("app")
        let elsewhere = h.write("/d/other", client: app)
        let reader = h.read("/d/doc", client: app)
        let write = nonblocking(h, 1, [ArbiterHarness.write("/d/free")], client: script)
        let read = nonblocking(h, 2, [ArbiterHarness.read("/d/doc")], client: script)
        #expect(h.isGranted(elsewhere) && h.isGranted(reader))
        #expect(h.isGranted(write) && h.isGranted(read))
        #expect(h.failure(write) == nil && h.failure(read) == nil)
    }

    @Test func anExemptClaimIsNotWhatItWouldWaitFor() throws {
        let h = ArbiterHarness()
        let script = h.connect("fccoord")
        let app = h.connect("app")
        let holder = h.write("/d/doc", client: app, purpose: PurposeID("shared"))
        // The same purpose never blocks (rule 4): granted beside the holder.
        let inside = nonblocking(h, 1, [ArbiterHarness.write("/d/doc")], client: script, purpose: PurposeID("shared"))
        #expect(h.isGranted(holder) && h.isGranted(inside))
    }

    @Test func presentersAreAskedAndWaitedForNotRefused() throws {
        let h = ArbiterHarness()
        let script = h.connect("fccoord")
        let editor = h.connect("editor")
        let presenter = h.present("/d/doc", client: editor)
        let claim = nonblocking(h, 1, [ArbiterHarness.write("/d/doc")], client: script)
        #expect(!h.isGranted(claim))
        #expect(h.failure(claim) == nil)
        #expect(!h.openRequests(of: presenter).isEmpty)
        _ = h.answerAll()
        #expect(h.isGranted(claim))
    }

    @Test func aClaimThatComesWhileAnotherPreparesIsRefused() throws {
        let h = ArbiterHarness()
        let script = h.connect("fccoord")
        let editor = h.connect("editor")
        let app = h.connect("app")
        _ = h.present("/d/doc", client: editor)
        let preparing = h.write("/d/doc", client: app)
        #expect(!h.isGranted(preparing))
        let refused = nonblocking(h, 1, [ArbiterHarness.read("/d/doc")], client: script)
        #expect(isWouldWait(h.failure(refused)))
        _ = h.answerAll()
        #expect(h.isGranted(preparing))
    }

    @Test func aLeaseIsRecalledAndWaitedForAndItsRunningClaimsRefuse() throws {
        let h = LeaseTests.harness(presenterTimeout: .seconds(30))
        let app = h.connect("app", answersRecalls: true)
        let script = h.connect("fccoord")
        // Returned with nothing running: granted.
        let first = try LeaseTests.lease(h, app)
        let granted = nonblocking(h, 1, [ArbiterHarness.write("/d/f")], client: script)
        #expect(h.lastRecalls == [first])
        #expect(!h.isGranted(granted) && h.failure(granted) == nil)
        h.send(.leaseReturned(first, client: app, running: []))
        #expect(h.isGranted(granted))
        h.finish(granted)
        h.send(.timerFired(.leaseBackoff(app)))
        // Returned with a read of /d/f still running: that read is what it would wait for.
        let second = try LeaseTests.lease(h, app)
        let refused = nonblocking(h, 2, [ArbiterHarness.write("/d/f")], client: script)
        #expect(h.failure(refused) == nil)
        let running = LeaseTests.runningRead(ClaimID(500), of: app, coordinator: CoordinatorID(500))
        h.send(.leaseReturned(second, client: app, running: [running]))
        #expect(isWouldWait(h.failure(refused)))
    }

    @Test func anUnansweredRecallRefusesIt() throws {
        let h = LeaseTests.harness(presenterTimeout: .seconds(30))
        let app = h.connect("app", answersRecalls: true)
        let script = h.connect("fccoord")
        let lease = try LeaseTests.lease(h, app)
        let claim = nonblocking(h, 1, [ArbiterHarness.write("/d/f")], client: script)
        #expect(h.failure(claim) == nil)
        h.send(.timerFired(.leaseRecallReply(lease)))
        #expect(isWouldWait(h.failure(claim)))
    }

    @Test func anOverdueHolderRefusesItAndIsNotEnded() throws {
        // Rule 8 ends an overdue holder for a claim that waits; a claim that must not wait does not wait.
        let h = ArbiterHarness()
        let program = h.connect("preload:sh")
        let script = h.connect("fccoord")
        var request = ClaimRequest(
            id: ClaimID(800),
            client: program,
            coordinator: h.coordinator(),
            purpose: PurposeID("held open"),
            items: [ArbiterHarness.write("/d/log")]
        )
        request.maximumHold = .seconds(30)
        h.send(.claimRequested(request))
        h.send(.timerFired(.claimHoldLimit(ClaimID(800))))
        let refused = nonblocking(h, 1, [ArbiterHarness.write("/d/log")], client: script)
        #expect(isWouldWait(h.failure(refused)))
        #expect(h.isGranted(ClaimID(800)))
        #expect(h.arbiter.statistics.holdsEnded == 0)
    }

    @Test func aClaimDeclaredAsHeldIgnoresTheFlag() throws {
        let h = ArbiterHarness()
        let script = h.connect("fccoord")
        let app = h.connect("app")
        let holder = h.write("/d/doc", client: app)
        var request = ClaimRequest(
            id: ClaimID(900),
            client: script,
            coordinator: h.coordinator(),
            purpose: PurposeID("restarted"),
            items: [ArbiterHarness.write("/d/doc")]
        )
        request.isHeld = true
        request.nonblocking = true
        h.send(.claimRequested(request))
        #expect(h.isGranted(holder))
        #expect(h.failure(ClaimID(900)) == nil)
    }
}
