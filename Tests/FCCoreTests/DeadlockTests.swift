import FCCore
import FCTestSupport
import Testing

/// An arbiter with the deadlock detector on (1 s) and no presenter timeout.
private func detectorHarness() -> ArbiterHarness {
    ArbiterHarness(configuration: ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: .seconds(1)))
}

/// The deadlock detector (docs/SEMANTICS.md §6), on hydrixos/DeadlockExample's scenario: two presenters of one file on
/// serial queues, each making a coordinated read inside `presentedItemDidChange`.
@Suite struct DeadlockTests {

    @Test func twoPresentersReadingInsideTheirCallbacksAreACycleThatIsBroken() throws {
        let h = detectorHarness()
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
            fromPresenterQueue: a,
            fromCallback: .presentedItemDidChange
        )
        let readB = h.claim(
            [ArbiterHarness.read("/d/test.txt", .withoutChanges)],
            client: app,
            filePresenter: b,
            fromPresenterQueue: b,
            fromCallback: .presentedItemDidChange
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
        for fragment in [
            "\(readA)", "\(readB)", "\(a)", "\(b)", "DeadlockExample (pid 4211)",
            "is held by a coordinated call made in its presentedItemDidChange()",
        ] {
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
        let h = detectorHarness()
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
        let h = detectorHarness()
        let app = h.connect("app")
        let claim = h.write("/d/f.txt", client: app)
        #expect(h.isGranted(claim))
        #expect(!h.effects.contains { if case .startTimer = $0 { return true } else { return false } })
    }
}

/// Queues shared by presenters (`PresenterRegistration.serialQueue`): a call made on a serial queue holds it for
/// every presenter on it, as on the main thread when presenters use `OperationQueue.main`.
@Suite struct SharedQueueDeadlockTests {

    /// A write made on the main thread of an app whose presenter of that file runs on the main queue: the presenter
    /// cannot relinquish while the main thread waits for it.
    @Test func aWriteOnTheQueueOfThePresenterItWaitsForIsBroken() throws {
        let h = detectorHarness()
        let app = h.connect("editor", pid: 77)
        let main: UInt64 = 0xAA
        let doc = h.present("/d/doc.txt", client: app, serialQueue: main)
        let write = h.claim([ArbiterHarness.write("/d/doc.txt")], client: app, fromPresenterQueue: doc)
        #expect(h.openRequests(of: doc).map(\.1) == [.relinquishToWriter])
        h.send(.timerFired(.deadlockCheck(write)))
        guard case .deadlock(let report)? = h.failure(write) else {
            Issue.record("the write did not fail with a deadlock: \(String(describing: h.failure(write)))")
            return
        }
        #expect(report.contains("the queue of \(doc)") && report.contains("editor (pid 77)"), "\(report)")
        #expect(h.arbiter.statistics.deadlocksBroken == 1)
    }

    /// The queue edge names the code that holds the queue, when the library says which callback made the call.
    @Test(arguments: [
        (PresenterCallbacks.presentedItemDidChange, false, "made in its presentedItemDidChange(), which"),
        (PresenterCallbacks(), false, "made in the reacquirer it handed back, which"),
        (nil, false, "is held by a coordinated call made on it, which"),
        (PresenterCallbacks.presentedSubitemDidAppear, true, "made in presenter#1's presentedSubitemDidAppear(at:)"),
    ])
    func theReportNamesTheCallbackThatHoldsTheQueue(
        callback: PresenterCallbacks?,
        shared: Bool,
        phrase: String
    ) throws {
        let h = detectorHarness()
        let app = h.connect("editor", pid: 77)
        let folder = h.present("/d", client: app, serialQueue: 1)
        let doc = h.present("/d/doc.txt", client: app, serialQueue: 1)
        #expect(folder == PresenterID(1))
        let write = h.claim(
            [ArbiterHarness.write("/d/doc.txt")],
            client: app,
            fromPresenterQueue: shared ? folder : doc,
            fromCallback: callback
        )
        h.send(.timerFired(.deadlockCheck(write)))
        guard case .deadlock(let report)? = h.failure(write) else {
            Issue.record("the write did not fail with a deadlock: \(String(describing: h.failure(write)))")
            return
        }
        #expect(report.contains(phrase), "\(report)")
    }

    /// The call holds the queue of another presenter of the same queue: the cycle goes through the queue they share.
    @Test func aCallOnAQueueSharedWithTheAskedPresenterIsACycle() throws {
        let h = detectorHarness()
        let app = h.connect("editor", pid: 77)
        let main: UInt64 = 0xAA
        let sidebar = h.present("/d/other.txt", client: app, serialQueue: main)
        let doc = h.present("/d/doc.txt", client: app, serialQueue: main)
        // Made on the main thread; the library names the first presenter on the main queue.
        let write = h.claim([ArbiterHarness.write("/d/doc.txt")], client: app, fromPresenterQueue: sidebar)
        h.send(.timerFired(.deadlockCheck(write)))
        guard case .deadlock(let report)? = h.failure(write) else {
            Issue.record("the write did not fail with a deadlock: \(String(describing: h.failure(write)))")
            return
        }
        #expect(
            report.contains("\(doc) of /d/doc.txt in editor (pid 77) (a serial queue it shares with \(sidebar))"),
            "\(report)"
        )
    }

    /// The same queue id in two processes names two queues: no cycle, only a long wait.
    @Test func equalQueueIDsOfTwoClientsAreTwoQueues() throws {
        let h = detectorHarness()
        let app = h.connect("editor", pid: 77)
        let other = h.connect("viewer", pid: 78)
        let sidebar = h.present("/d/other.txt", client: other, serialQueue: 0xAA)
        let doc = h.present("/d/doc.txt", client: app, serialQueue: 0xAA)
        let write = h.claim([ArbiterHarness.write("/d/doc.txt")], client: other, fromPresenterQueue: sidebar)
        #expect(h.openRequests(of: doc).count == 1)
        h.send(.timerFired(.deadlockCheck(write)))
        #expect(h.failure(write) == nil)
        #expect(h.arbiter.statistics.longWaits == 1)
        #expect(h.arbiter.statistics.deadlocksBroken == 0)
    }

    /// The wait-for graph a dump shows (made from one pass over the claims since stop 70, where each presenter read
    /// every claim): an edge from each presenter of a serial queue a waiting call holds, none from a queue of the
    /// same id in another process, and one from a presenter without a serial queue to the call made on its own.
    @Test func theGraphHasAnEdgeFromEveryPresenterOfAHeldQueue() throws {
        let h = detectorHarness()
        let app = h.connect("editor", pid: 77)
        let other = h.connect("viewer", pid: 78)
        let sidebar = h.present("/d/other.txt", client: app, serialQueue: 0xAA)
        let doc = h.present("/d/doc.txt", client: app, serialQueue: 0xAA)
        _ = h.present("/d/third.txt", client: other, serialQueue: 0xAA)
        let alone = h.present("/e/alone.txt", client: other)
        let write = h.claim([ArbiterHarness.write("/d/doc.txt")], client: app, fromPresenterQueue: sidebar)
        _ = h.write("/e/x.txt", client: h.connect("holder"))
        let queued = h.claim([ArbiterHarness.write("/e/x.txt")], client: other, fromPresenterQueue: alone)
        let edges = h.arbiter.waitForEdges().filter { $0.from.hasPrefix("presenter") }
        #expect(
            Set(edges.map { "\($0.from) -> \($0.to)" })
                == ["\(sidebar) -> \(write)", "\(doc) -> \(write)", "\(alone) -> \(queued)"]
        )
    }

    /// Presenters on two different serial queues of one process: no cycle.
    @Test func twoSerialQueuesOfOneClientAreNotShared() throws {
        let h = detectorHarness()
        let app = h.connect("editor", pid: 77)
        let sidebar = h.present("/d/other.txt", client: app, serialQueue: 0xAA)
        _ = h.present("/d/doc.txt", client: app, serialQueue: 0xBB)
        let write = h.claim([ArbiterHarness.write("/d/doc.txt")], client: app, fromPresenterQueue: sidebar)
        h.send(.timerFired(.deadlockCheck(write)))
        #expect(h.failure(write) == nil)
        #expect(h.arbiter.statistics.deadlocksBroken == 0)
    }

    /// A check that breaks a cycle changes the graph after its search: the failed claim's end starts the claims it
    /// held back, and a claim that starts may close a new cycle. What that search found cycle-free was reused by the
    /// next check all the same (the generation was bumped only by other events), so the new cycle was logged as a
    /// long wait, check after check, until some other event came (until stop 71).
    @Test func aCycleClosedByBreakingAnotherIsFoundByTheNextCheck() throws {
        let h = detectorHarness()
        let (editor, sync) = (h.connect("editor", pid: 1), h.connect("sync", pid: 2))
        let first = h.present("/a", client: editor)
        let second = h.present("/b", client: sync)
        let held = h.write("/a", client: h.connect("holder"))
        h.answerAll(reacquirer: false)
        #expect(h.isGranted(held))
        let queued = h.write("/a", client: h.connect("queued"))
        // Made on the first presenter's queue: it waits for the held write and the queued one.
        let onFirst = h.claim(
            [ArbiterHarness.write("/a"), ArbiterHarness.write("/c")],
            client: editor,
            fromPresenterQueue: first
        )
        let later = h.claim([ArbiterHarness.write("/c"), ArbiterHarness.write("/b")], client: h.connect("later"))
        // Made on the second presenter's queue: it waits for both claims on /c.
        let onSecond = h.claim([ArbiterHarness.write("/c")], client: sync, fromPresenterQueue: second)
        // The queued write starts and asks the first presenter, whose queue is held: a cycle.
        h.finish(held)
        #expect(h.openRequests(of: first).count == 1)
        h.send(.timerFired(.deadlockCheck(later)))
        guard case .deadlock? = h.failure(onFirst) else {
            Issue.record("the claim on the first queue did not fail: \(String(describing: h.failure(onFirst)))")
            return
        }
        // Its end starts `later`, which asks the second presenter, whose queue is held by a claim waiting for it.
        #expect(h.openRequests(of: second).count == 1)
        h.send(.timerFired(.deadlockCheck(onSecond)))
        guard case .deadlock? = h.failure(onSecond) else {
            Issue.record("the new cycle was not found: \(String(describing: h.failure(onSecond)))")
            return
        }
        #expect(h.arbiter.statistics.deadlocksBroken == 2)
        #expect(h.failure(later) == nil && h.failure(queued) == nil)
    }
}

/// Wait times in reports, from the host's timestamps (`Arbiter.handle(_:at:)`).
@Suite struct DeadlockReportTimeTests {
    @Test func everyEdgeSaysHowLongItsWaitHasLasted() throws {
        let h = detectorHarness()
        h.now = .zero
        let app = h.connect("DeadlockExample", pid: 4211)
        let writer = h.connect("writer", pid: 4388)
        let a = h.present("/d/test.txt", client: app)
        let b = h.present("/d/test.txt", client: app)
        let write = h.write("/d/test.txt", client: writer)
        h.answerAll(reacquirer: false)
        h.finish(write)
        h.now = .milliseconds(100)
        let readA = h.claim(
            [ArbiterHarness.read("/d/test.txt", .withoutChanges)],
            client: app,
            filePresenter: a,
            fromPresenterQueue: a
        )
        h.now = .milliseconds(350)
        _ = h.claim(
            [ArbiterHarness.read("/d/test.txt", .withoutChanges)],
            client: app,
            filePresenter: b,
            fromPresenterQueue: b
        )
        h.now = .milliseconds(1_100)
        h.send(.timerFired(.deadlockCheck(readA)))
        let report = try #require(h.arbiter.recentDeadlockReports.last)
        // A's read and the request it sent B are 1 s old; B's read and its request to A 0.75 s.
        #expect(report.contains("has waited 1.000 s for \(b)"), "\(report)")
        #expect(report.contains("has waited 0.750 s for \(a)"), "\(report)")
        #expect(report.contains("which has waited 1.000 s in \(readA)"), "\(report)")
        #expect(!report.contains("at least"), "\(report)")
    }

    @Test func withoutTimeTheDelayIsTheLowerBound() throws {
        let h = ArbiterHarness(
            configuration: ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: .milliseconds(1_500))
        )
        let app = h.connect("app", pid: 9)
        let p = h.present("/d/f.txt", client: app, serialQueue: 1)
        let write = h.claim([ArbiterHarness.write("/d/f.txt")], client: app, fromPresenterQueue: p)
        h.send(.timerFired(.deadlockCheck(write)))
        let report = try #require(h.arbiter.recentDeadlockReports.last)
        #expect(report.contains("after waiting at least 1.500 s"), "\(report)")
    }

    @Test func aGrantedBlockerSaysHowLongItHasBeenHeld() throws {
        let h = detectorHarness()
        h.now = .seconds(10)
        let app = h.connect("app", pid: 9)
        let other = h.connect("sync", pid: 10)
        let held = h.write("/d/f.txt", client: other)
        h.now = .seconds(12)
        let waiting = h.write("/d/f.txt", client: app)
        h.now = .milliseconds(13_250)
        h.send(.timerFired(.deadlockCheck(waiting)))
        let logs = h.lastEffects.compactMap { effect -> String? in
            if case .log(let record) = effect { return record.message }
            return nil
        }
        let line = try #require(logs.first { $0.contains("long wait") })
        #expect(line.contains("\(waiting)") && line.contains("has waited 1.250 s for \(held)"), "\(line)")
        #expect(line.contains("held for 3.250 s"), "\(line)")
    }
}
