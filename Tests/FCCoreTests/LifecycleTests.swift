import FCCore
import FCTestSupport
import Testing

/// The effects of the last event that are not log records.
private func actions(_ h: ArbiterHarness) -> [ArbiterEffect] {
    h.lastEffects.filter {
        if case .log = $0 { return false }
        return true
    }
}

/// The log records of the last event.
private func logs(_ h: ArbiterHarness) -> [LogRecord] {
    h.lastEffects.compactMap {
        if case .log(let record) = $0 { return record }
        return nil
    }
}

/// Claims come and go: cancel (docs/SEMANTICS.md §5), disconnect (§7), presenter timeout (§6), and bad input.
@Suite("Lifecycle: cancel, disconnect, presenter timeout, bad input")
struct LifecycleTests {
    // MARK: Cancel (§5)

    /// A claim declared as held (after a daemon's crash, the client declares the claims whose accessors still run)
    /// runs already: a cancel of its coordinator that reached the arbiter first must not refuse it, or a conflicting
    /// write gets in while it runs (found by the leases work's simulator, issue 23).
    @Test func cancel_doesNotRefuseAClaimDeclaredAsHeld() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let other = h.connect("other")
        let coordinator = h.coordinator()
        h.send(.coordinatorCancelled(app, coordinator))
        var running = ClaimRequest(
            id: ClaimID(600),
            client: app,
            coordinator: coordinator,
            purpose: PurposeID("app"),
            items: [ArbiterHarness.read("/d/f")]
        )
        running.isHeld = true
        h.send(.claimRequested(running))
        #expect(h.failure(ClaimID(600)) == nil)
        let write = h.write("/d/f", client: other)
        #expect(!h.isGranted(write), "the write got in while the declared read ran")
        h.finish(ClaimID(600))
        #expect(h.isGranted(write))
    }

    /// A client's record keeps only its most recent cancelled coordinators (a long connection that cancels one per
    /// operation must not grow the daemon without bound): the oldest is forgotten once more are cancelled, the most
    /// recent still refuses a claim that crossed its cancel.
    @Test func cancel_remembersOnlyTheMostRecentCancelledCoordinators() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let first = h.coordinator()
        h.send(.coordinatorCancelled(app, first))
        var last = first
        for _ in 0..<1024 {
            last = h.coordinator()
            h.send(.coordinatorCancelled(app, last))
        }
        let crossing = h.read("/d/f", client: app, coordinator: last)
        #expect(h.failure(crossing) == .cancelled)
        let forgotten = h.read("/d/g", client: app, coordinator: first)
        #expect(h.isGranted(forgotten), "the oldest of 1,025 cancelled coordinators is still remembered")
    }

    @Test func cancel_failsWaitingClaimsOfThatCoordinatorOnly() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let holder = h.write("/d/f", client: b)
        let cancelled = h.coordinator()
        let kept = h.coordinator()
        let running = h.write("/other", client: a, coordinator: cancelled)
        let waitingWrite = h.write("/d/f", client: a, coordinator: cancelled)
        let waitingRead = h.read("/d/f", client: a, coordinator: cancelled)
        let otherCoordinator = h.write("/d/f", client: a, coordinator: kept)
        // The same coordinator number in another client is another coordinator.
        let otherClient = h.read("/d/f", client: b, coordinator: cancelled)
        #expect(h.isGranted(holder) && h.isGranted(running))

        h.send(.coordinatorCancelled(a, cancelled))
        #expect(
            actions(h) == [
                .fail(waitingWrite, client: a, .cancelled), .fail(waitingRead, client: a, .cancelled),
            ]
        )
        #expect(h.arbiter.phase(of: waitingWrite) == nil)
        #expect(h.arbiter.phase(of: waitingRead) == nil)
        // A running accessor finishes; other coordinators are untouched.
        #expect(h.arbiter.phase(of: running) == .granted)
        #expect(h.failure(running) == nil)
        #expect(h.arbiter.phase(of: otherCoordinator) == .waiting)
        #expect(h.arbiter.phase(of: otherClient) == .waiting)

        // Later calls on the cancelled coordinator fail at once.
        let later = h.read("/elsewhere", client: a, coordinator: cancelled)
        #expect(h.lastEffects == [.fail(later, client: a, .cancelled)])
        #expect(h.arbiter.phase(of: later) == nil)

        h.finish(holder)
        #expect(h.isGranted(otherCoordinator))
        #expect(!h.isGranted(waitingWrite) && !h.isGranted(waitingRead))
        h.finish(otherCoordinator)
        #expect(h.isGranted(otherClient))
        h.finish(running)
        #expect(h.failure(running) == nil)
    }

    @Test func cancel_preparingClaimReturnsReacquirersAndOrphansItsRequests() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let other = h.connect("other")
        let tool = h.connect("tool")
        let answered = h.present("/d/f", client: app)
        let slow = h.present("/d/f", client: other)
        let coordinator = h.coordinator()
        let write = h.write("/d/f", .forMerging, client: tool, coordinator: coordinator)
        let answeredRelinquish = try #require(soleRequest(h, of: answered))
        let slowRelinquish = try #require(soleRequest(h, of: slow))
        h.reply(answeredRelinquish.id, .relinquished(reacquirer: true))
        let save = try #require(soleRequest(h, of: answered))
        #expect(save.kind == .savePresentedItemChanges)

        h.send(.coordinatorCancelled(tool, coordinator))
        #expect(h.failure(write) == .cancelled)
        #expect(
            h.messages(to: answered) == [
                .relinquishToWriter, .savePresentedItemChanges, .reacquire(relinquish: answeredRelinquish.id),
            ]
        )
        // Late replies: the save changes nothing; a relinquish with a reacquirer gets it back at once.
        h.reply(save.id, .succeeded)
        #expect(actions(h).isEmpty)
        h.reply(slowRelinquish.id, .relinquished(reacquirer: true))
        #expect(h.messages(to: slow) == [.relinquishToWriter, .reacquire(relinquish: slowRelinquish.id)])
        #expect(!h.isGranted(write))
        #expect(h.arbiter.snapshot().outstandingRequests.isEmpty)
    }

    @Test func claimCancelled_failsOnlyThatClaimAndNeverAGrantedOne() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let coordinator = h.coordinator()
        let granted = h.write("/d/f", client: a)
        let waiting = h.read("/d/f", client: b, coordinator: coordinator)
        let sibling = h.read("/d/f", .withoutChanges, client: b, coordinator: coordinator)

        h.send(.claimCancelled(waiting))
        #expect(actions(h) == [.fail(waiting, client: b, .cancelled)])
        #expect(h.arbiter.phase(of: waiting) == nil)
        #expect(h.arbiter.phase(of: sibling) == .waiting)

        h.send(.claimCancelled(granted))
        #expect(actions(h).isEmpty)
        #expect(h.arbiter.phase(of: granted) == .granted)
        #expect(h.failure(granted) == nil)

        // The coordinator itself is not cancelled: its next claim queues normally.
        let next = h.read("/d/f", client: b, coordinator: coordinator)
        #expect(h.arbiter.phase(of: next) == .waiting)
        h.finish(granted)
        #expect(h.isGranted(sibling) && h.isGranted(next))
        #expect(!h.isGranted(waiting))
    }

    // MARK: Disconnect (§7)

    @Test func disconnect_releasesClaimsRemovesPresentersAndAnswersTheirRequests() throws {
        let h = ArbiterHarness()
        let editor = h.connect("editor")
        let sync = h.connect("sync")
        let editorPresenter = h.present("/d/f", client: editor)
        let syncDirectory = h.present("/d", client: sync)
        let editorWrite = h.write("/d/g", client: editor)
        let syncHolder = h.write("/d/h", client: sync)
        let editorWaiting = h.read("/d/h", client: editor)
        #expect(h.isGranted(editorWrite) && h.isGranted(syncHolder))

        let syncWrite = h.write("/d/f", client: sync)
        let syncRead = h.read("/d/g", client: sync)
        #expect(h.messages(to: editorPresenter) == [.relinquishToWriter])
        #expect(h.arbiter.phase(of: syncWrite) == .preparing)
        #expect(h.arbiter.blockers(of: syncRead) == [editorWrite])

        h.send(.clientDisconnected(editor))
        // The editor's open relinquish counts as answered; its granted write is released as if it had returned.
        #expect(h.isGranted(syncWrite))
        #expect(h.isGranted(syncRead))
        #expect(h.arbiter.phase(of: editorWaiting) == nil)
        #expect(h.failure(editorWaiting) == nil)  // Nobody to tell.
        #expect(h.failure(editorWrite) == nil)
        let snapshot = h.arbiter.snapshot()
        #expect(snapshot.presenters.keys.sorted() == [syncDirectory])
        #expect(snapshot.clients.keys.sorted() == [sync])
        #expect(snapshot.outstandingRequests.isEmpty)
        #expect(snapshot.claims.map(\.request.id) == [syncHolder, syncWrite, syncRead])
        #expect(h.messages(to: syncDirectory) == [.presentedSubitemDidChange(at: path("/d/g"))])
        #expect(h.messages(to: editorPresenter) == [.relinquishToWriter])

        for claim in [syncHolder, syncWrite, syncRead] {
            h.finish(claim)
        }
        #expect(
            h.messages(to: syncDirectory) == [
                .presentedSubitemDidChange(at: path("/d/g")), .presentedSubitemDidChange(at: path("/d/h")),
                .presentedSubitemDidChange(at: path("/d/f")),
            ]
        )
        #expect(h.messages(to: editorPresenter) == [.relinquishToWriter])  // Gone: told nothing more.
        h.send(.clientDisconnected(sync))
        let empty = h.arbiter.snapshot()
        #expect(empty.claims.isEmpty)
        #expect(empty.presenters.isEmpty)
        #expect(empty.clients.isEmpty)
        #expect(empty.nodeCount == 1 + empty.idleNodeCount)
    }

    @Test func disconnect_prunesTheTreeAfterMovesAndPackages() {
        // No idle node kept: every node that holds nothing must go (with retention, the tests below).
        var configuration = ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: nil)
        configuration.idleNodeRetention = 0
        let h = ArbiterHarness(configuration: configuration)
        let a = h.connect("a")
        let b = h.connect("b")
        h.present("/d/P.rtfd", client: a, callbacks: [])
        h.present("/d/x/deep/item", client: a, callbacks: [])
        h.present("/e/Doc", client: a, callbacks: [], isPackage: true)
        let move = h.claim(
            [ArbiterHarness.write("/d/x", .forMoving), ArbiterHarness.write("/d/y", .forReplacing)],
            client: a
        )
        let waiting = h.read("/d/x/deep/other", client: b)
        h.read("/e/Doc/inside", client: b)
        h.read("/d/P.rtfd/a/b", client: b)
        h.send(.itemMoved(move, from: path("/d/x"), to: path("/d/y")))
        #expect(h.arbiter.snapshot().nodeCount > 1)
        h.send(.clientDisconnected(a))
        #expect(h.grantedPaths(waiting) == [path("/d/y/deep/other")])
        h.send(.clientDisconnected(b))
        #expect(h.arbiter.snapshot().nodeCount == 1)
        #expect(h.arbiter.snapshot().claims.isEmpty)
    }

    @Test func presenterRemoved_itsOpenRequestsCountAsAnswered() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let leaving = h.present("/d/f", client: app)
        let staying = h.present("/d/f", client: app)
        let write = h.write("/d/f", client: tool)
        h.reply(try #require(soleRequest(h, of: leaving)).id, .relinquished(reacquirer: true))
        let stayingRelinquish = try #require(soleRequest(h, of: staying))
        h.reply(stayingRelinquish.id, .relinquished(reacquirer: true))
        #expect(h.isGranted(write))
        h.send(.presenterRemoved(leaving))
        #expect(actions(h).isEmpty)
        h.finish(write)
        // The removed presenter gets neither did change nor its reacquirer.
        #expect(h.messages(to: leaving) == [.relinquishToWriter])
        #expect(
            h.messages(to: staying) == [
                .relinquishToWriter, .presentedItemDidChange, .reacquire(relinquish: stayingRelinquish.id),
            ]
        )

        let next = h.write("/d/f", client: tool)
        let open = try #require(soleRequest(h, of: staying))
        h.send(.presenterRemoved(staying))
        #expect(h.isGranted(next))
        #expect(h.openRequests().isEmpty)
        h.reply(open.id, .relinquished(reacquirer: true))
        #expect(actions(h).isEmpty)
    }

    // MARK: Presenter timeout (§6)

    @Test func presenterTimeout_countsAsRelinquishedAndTheClaimProceeds() throws {
        let h = ArbiterHarness(
            configuration: ArbiterConfiguration(presenterTimeout: .seconds(30), deadlockDetectionDelay: nil)
        )
        let app = h.connect("app")
        let tool = h.connect("tool")
        let stuck = h.present("/d/f", client: app)
        let write = h.write("/d/f", client: tool)
        let request = try #require(soleRequest(h, of: stuck))
        #expect(
            h.lastEffects == [
                .message(
                    PresenterMessage(
                        presenter: stuck,
                        client: app,
                        request: request.id,
                        claim: write,
                        kind: .relinquishToWriter
                    )
                ),
                .startTimer(.presenterReply(request.id), after: .seconds(30)),
            ]
        )
        #expect(!h.isGranted(write))
        #expect(h.arbiter.statistics.presenterTimeouts == 0)

        h.send(.timerFired(.presenterReply(request.id)))
        #expect(h.isGranted(write))
        #expect(h.arbiter.statistics.presenterTimeouts == 1)
        #expect(actions(h).contains(.grant(write, client: tool, paths: [path("/d/f")])))
        #expect(logs(h).contains { $0.level == .warning && $0.metadata["request.id"] == "\(request.id.rawValue)" })

        // A late reply changes nothing now, but the reacquirer it hands back runs when the access ends.
        h.reply(request.id, .relinquished(reacquirer: true))
        #expect(actions(h).isEmpty)
        h.finish(write)
        #expect(
            h.messages(to: stuck) == [.relinquishToWriter, .presentedItemDidChange, .reacquire(relinquish: request.id)]
        )
        #expect(h.arbiter.statistics.presenterTimeouts == 1)
    }

    @Test func presenterTimeout_withoutALateReplyNoReacquirerRuns() throws {
        let h = ArbiterHarness(
            configuration: ArbiterConfiguration(presenterTimeout: .seconds(30), deadlockDetectionDelay: nil)
        )
        let app = h.connect("app")
        let tool = h.connect("tool")
        let stuck = h.present("/d/f", client: app)
        let write = h.write("/d/f", client: tool)
        let request = try #require(soleRequest(h, of: stuck))
        h.send(.timerFired(.presenterReply(request.id)))
        #expect(h.isGranted(write))
        h.finish(write)
        #expect(h.messages(to: stuck) == [.relinquishToWriter, .presentedItemDidChange])
        // Answering after the claim ended hands the reacquirer straight back.
        h.reply(request.id, .relinquished(reacquirer: true))
        #expect(
            h.messages(to: stuck) == [.relinquishToWriter, .presentedItemDidChange, .reacquire(relinquish: request.id)]
        )
    }

    @Test func presenterTimeout_ofASaveCountsAsSuccess() throws {
        let h = ArbiterHarness(
            configuration: ArbiterConfiguration(presenterTimeout: .seconds(30), deadlockDetectionDelay: nil)
        )
        let app = h.connect("app")
        let tool = h.connect("tool")
        let stuck = h.present("/d/f", client: app)
        let read = h.read("/d/f", client: tool)
        let relinquish = try #require(soleRequest(h, of: stuck))
        h.reply(relinquish.id, .relinquished(reacquirer: true))
        #expect(h.lastEffects.contains(.cancelTimer(.presenterReply(relinquish.id))))
        let save = try #require(soleRequest(h, of: stuck))
        #expect(h.lastEffects.contains(.startTimer(.presenterReply(save.id), after: .seconds(30))))
        h.send(.timerFired(.presenterReply(save.id)))
        #expect(h.isGranted(read))
        #expect(h.failure(read) == nil)
        #expect(h.arbiter.statistics.presenterTimeouts == 1)
        // A timer for a request already answered does nothing.
        h.send(.timerFired(.presenterReply(relinquish.id)))
        #expect(h.lastEffects.isEmpty)
        #expect(h.arbiter.statistics.presenterTimeouts == 1)
        h.finish(read)
        #expect(
            h.messages(to: stuck) == [
                .relinquishToReader, .savePresentedItemChanges, .reacquire(relinquish: relinquish.id),
            ]
        )
    }

    @Test func presenterTimeout_noTimersWithoutATimeout() {
        let h = ArbiterHarness(configuration: ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: nil))
        let app = h.connect("app")
        let tool = h.connect("tool")
        h.present("/d/f", client: app)
        h.write("/d/f", client: tool)
        h.answerAll()
        let timers = h.effects.filter {
            switch $0 {
            case .startTimer, .cancelTimer: true
            default: false
            }
        }
        #expect(timers.isEmpty)
    }

    // MARK: Bad input: logged and harmless

    @Test func badInput_unknownIdsAreLoggedAndIgnored() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let p = h.present("/d/f", client: a)
        let write = h.write("/d/f", client: b)
        let before = h.arbiter.snapshot()
        let events: [ArbiterEvent] = [
            .presenterReplied(RequestID(999), .relinquished(reacquirer: true)),
            .presenterReplied(RequestID(998), .failed(PresenterError(domain: "d", code: 1, message: "m"))),
            .claimFinished(ClaimID(999), created: [path("/d/x")]),
            .presenterRemoved(PresenterID(999)),
            .presenterURLChanged(PresenterID(999), to: path("/d/x")),
            .itemMoved(ClaimID(999), from: path("/d/f"), to: path("/d/g")),
            .versionChanged(ClaimID(999), path("/d/f"), .added(VersionID("v"))),
            .timerFired(.presenterReply(RequestID(999))),
            .presenterAdded(PresenterRegistration(id: p, client: b, path: path("/e"))),  // Id already taken.
        ]
        for event in events {
            h.send(event)
            #expect(actions(h).isEmpty, "\(event)")
            if case .timerFired = event { continue }  // A timer may fire after its request was answered.
            #expect(!logs(h).isEmpty, "\(event) was not logged")
        }
        #expect(h.arbiter.snapshot() == before)
        #expect(h.arbiter.snapshot().presenters[p]?.path == path("/d/f"))
        h.answerAll()
        #expect(h.isGranted(write))
    }

    @Test func badInput_moveOrVersionFromAClaimNotGrantedIsIgnored() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let observer = h.present("/d", client: a)
        let granted = h.write("/d/f", client: a)
        let waiting = h.write("/d/f", client: b)
        let reader = h.read("/d/g", client: b)
        h.send(.itemMoved(waiting, from: path("/d/f"), to: path("/d/x")))
        #expect(actions(h).isEmpty)
        h.send(.itemMoved(reader, from: path("/d/g"), to: path("/d/y")))  // A read cannot move anything.
        #expect(actions(h).isEmpty)
        h.send(.versionChanged(waiting, path("/d/f"), .added(VersionID("v"))))
        #expect(actions(h).isEmpty)
        #expect(h.messages(to: observer).isEmpty)
        #expect(h.arbiter.snapshot().claims.map(\.paths) == [[path("/d/f")], [path("/d/f")], [path("/d/g")]])
        h.finish(granted)
        #expect(h.grantedPaths(waiting) == [path("/d/f")])
    }

    @Test func badInput_finishOfAClaimNeverGrantedFailsItAndNothingElse() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let holder = h.write("/d/f", client: a)
        let waiting = h.write("/d/f", client: b)
        let behind = h.read("/d/f", client: b)
        h.finish(waiting)
        #expect(actions(h) == [.fail(waiting, client: b, .cancelled)])
        #expect(logs(h).map(\.level) == [.warning])
        #expect(h.arbiter.phase(of: holder) == .granted)
        #expect(h.arbiter.blockers(of: behind) == [holder])
        h.finish(holder)
        #expect(h.isGranted(behind))
        #expect(!h.isGranted(waiting))
        // A second finish of a finished claim is an unknown id.
        h.finish(holder)
        #expect(actions(h).isEmpty)
        #expect(!logs(h).isEmpty)
    }

    @Test func badInput_duplicateClaimIdIsRefusedAndTheLiveClaimIsUntouched() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let live = h.write("/d/f", client: a)
        let request = ClaimRequest(
            id: live,
            client: b,
            coordinator: CoordinatorID(77),
            purpose: PurposeID("dup"),
            items: [ArbiterHarness.write("/d/g")]
        )
        h.send(.claimRequested(request))
        #expect(actions(h) == [.fail(live, client: b, .invalidRequest("claim id already in use"))])
        #expect(!logs(h).isEmpty)
        let claims = h.arbiter.snapshot().claims
        #expect(claims.count == 1)
        #expect(claims.first?.request.client == a)
        #expect(claims.first?.paths == [path("/d/f")])
        #expect(h.arbiter.phase(of: live) == .granted)
        h.finish(live)
        #expect(h.arbiter.snapshot().claims.isEmpty)
        #expect(h.arbiter.snapshot().nodeCount == 1 + h.arbiter.snapshot().idleNodeCount)
    }

    @Test func badInput_emptyClaimFails() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let empty = h.claim([], client: a)
        #expect(actions(h) == [.fail(empty, client: a, .invalidRequest("a claim needs at least one item"))])
        #expect(h.arbiter.phase(of: empty) == nil)
        #expect(h.arbiter.snapshot().nodeCount == 1)
        #expect(h.arbiter.statistics.claimsFailed == 1)
    }

    // Bad input is logged as well as refused (the Arbiter's documentation promises it).
    @Test func badInput_emptyClaimIsLogged() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        h.claim([], client: a)
        #expect(!logs(h).isEmpty)
    }

    @Test func badInput_eventsForUnknownClientsOrClaimsAreHarmless() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let live = h.write("/d/f", client: a)
        let before = h.arbiter.snapshot()
        h.send(.clientDisconnected(ClientID(999)))
        #expect(actions(h).isEmpty)
        h.send(.claimCancelled(ClaimID(999)))
        #expect(actions(h).isEmpty)
        #expect(h.arbiter.snapshot() == before)
        #expect(h.arbiter.phase(of: live) == .granted)
    }
}
