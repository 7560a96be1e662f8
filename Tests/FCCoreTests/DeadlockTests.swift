import FCCore
import FCTestSupport
import Testing

/// The deadlock detector (SEMANTICS.md §6), on hydrixos/DeadlockExample's scenario: two presenters of one file on
/// serial queues, each making a coordinated read inside `presentedItemDidChange`.
@Suite struct DeadlockTests {
    private func harness() -> ArbiterHarness {
        ArbiterHarness(configuration: ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: .seconds(1)))
    }

    @Test func twoPresentersReadingInsideTheirCallbacksAreACycleThatIsBroken() throws {
        let h = harness()
        let app = h.connect("DeadlockExample", pid: 4211)
        let writer = h.connect("writer", pid: 4388)
        let a = h.present("/d/test.txt", client: app)
        let b = h.present("/d/test.txt", client: app)
        // A third party writes: both presenters relinquish, then hear did change on their queues.
        let write = h.write("/d/test.txt", client: writer)
        h.answerAll(reacquirer: false)
        h.finish(write)
        // Inside presentedItemDidChange, each presenter reads with a coordinator created with itself.
        let readA = h.claim(
            [ArbiterHarness.read("/d/test.txt", .withoutChanges)],
            client: app,
            filePresenter: a,
            fromPresenterQueue: a
        )
        let readB = h.claim(
            [ArbiterHarness.read("/d/test.txt", .withoutChanges)],
            client: app,
            filePresenter: b,
            fromPresenterQueue: b
        )
        // Each asks the other to relinquish; neither can answer, its queue being blocked in its own read.
        #expect(h.openRequests(of: b).map(\.1) == [.relinquishToReader])
        #expect(h.openRequests(of: a).map(\.1) == [.relinquishToReader])
        #expect(h.effects.contains(.startTimer(.deadlockCheck(readA), after: .seconds(1))))
        h.send(.timerFired(.deadlockCheck(readA)))
        // The youngest claim that holds a queue fails, with a report that closes the cycle.
        guard case .deadlock(let report)? = h.failure(readB) else {
            Issue.record("readB did not fail with a deadlock: \(String(describing: h.failure(readB)))")
            return
        }
        #expect(h.failure(readA) == nil)
        for fragment in ["\(readA)", "\(readB)", "\(a)", "\(b)", "DeadlockExample (pid 4211)", "queue is held"] {
            #expect(report.contains(fragment), "report lacks \(fragment): \(report)")
        }
        #expect(h.arbiter.statistics.deadlocksBroken == 1)
        #expect(h.arbiter.recentDeadlockReports == [report])
        // B's queue is free again: B answers A's request and A's read goes on.
        let (request, _) = try #require(h.openRequests(of: b).first)
        h.reply(request, .relinquished(reacquirer: false))
        #expect(h.isGranted(readA))
    }

    @Test func aLongWaitThatIsNoCycleIsReportedAndLookedAtAgainLater() throws {
        let h = harness()
        let app = h.connect("editor", pid: 10)
        let other = h.connect("sync", pid: 11)
        let p = h.present("/d/f.txt", client: app)
        let write = h.write("/d/f.txt", client: other)
        #expect(h.openRequests(of: p).count == 1)  // The presenter never answers.
        h.send(.timerFired(.deadlockCheck(write)))
        #expect(h.failure(write) == nil)
        #expect(h.arbiter.statistics.longWaits == 1)
        let logs = h.lastEffects.compactMap { effect -> String? in
            if case .log(let record) = effect { return record.message }
            return nil
        }
        #expect(logs.contains { $0.contains("long wait, not a deadlock") && $0.contains("\(p)") })
        // Looked at again after twice the delay.
        #expect(h.lastEffects.contains(.startTimer(.deadlockCheck(write), after: .seconds(2))))
    }

    @Test func anUncontendedClaimArmsNoTimer() {
        let h = harness()
        let app = h.connect("app")
        let claim = h.write("/d/f.txt", client: app)
        #expect(h.isGranted(claim))
        #expect(!h.effects.contains { if case .startTimer = $0 { return true } else { return false } })
    }
}
