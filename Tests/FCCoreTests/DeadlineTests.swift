import FCCore
import FCTestSupport
import Testing

/// A caller's own deadline (`ClaimRequest.timeout`, docs/SEMANTICS.md §6: a waiting caller can always get out).
@Suite struct DeadlineTests {
    private func request(
        _ h: ArbiterHarness,
        _ id: UInt64,
        _ path: String,
        client: ClientID,
        timeout: Duration?
    ) -> ClaimID {
        let claim = ClaimID(1_000 + id)
        h.send(
            .claimRequested(
                ClaimRequest(
                    id: claim,
                    client: client,
                    coordinator: h.coordinator(),
                    purpose: PurposeID("p\(id)"),
                    items: [ArbiterHarness.write(path)],
                    timeout: timeout
                )
            )
        )
        return claim
    }

    @Test func aClaimStillWaitingAtItsDeadlineFailsSayingWhatItWaitsFor() throws {
        let h = ArbiterHarness()
        h.now = .seconds(1)
        let holder = h.connect("sync", pid: 20)
        let app = h.connect("editor", pid: 21)
        let held = h.write("/d/f.txt", client: holder)
        h.now = .seconds(2)
        let waiting = request(h, 1, "/d/f.txt", client: app, timeout: .milliseconds(250))
        #expect(h.lastEffects == [.startTimer(.claimDeadline(waiting), after: .milliseconds(250))])
        h.now = .milliseconds(2_250)
        h.send(.timerFired(.claimDeadline(waiting)))
        guard case .timedOut(let report)? = h.failure(waiting) else {
            Issue.record("no timeout: \(String(describing: h.failure(waiting)))")
            return
        }
        for fragment in [
            "\(waiting)", "editor (pid 21)", "within its timeout of 0.250 s", "has waited 0.250 s for \(held)",
            "sync (pid 20)", "held for 1.250 s",
        ] {
            #expect(report.contains(fragment), "report lacks \(fragment): \(report)")
        }
        #expect(h.arbiter.statistics.claimsFailed == 1)
        // The holder is untouched, and the item is free for the next claim once it ends.
        h.finish(held)
        let next = h.write("/d/f.txt", client: app)
        #expect(h.isGranted(next))
    }

    @Test func aGrantBeforeTheDeadlineCancelsItsTimer() {
        let h = ArbiterHarness()
        let app = h.connect("editor")
        let claim = request(h, 1, "/d/f.txt", client: app, timeout: .seconds(5))
        #expect(h.isGranted(claim))
        #expect(h.lastEffects.contains(.cancelTimer(.claimDeadline(claim))))
        // A timer that fires anyway (it raced with the cancel) changes nothing.
        h.send(.timerFired(.claimDeadline(claim)))
        #expect(h.failure(claim) == nil)
        #expect(h.lastEffects.isEmpty)
    }

    @Test func aClaimWithoutTimeoutArmsNoDeadline() {
        let h = ArbiterHarness()
        let app = h.connect("editor")
        let other = h.connect("sync")
        _ = h.write("/d/f.txt", client: other)
        let claim = request(h, 1, "/d/f.txt", client: app, timeout: nil)
        #expect(h.lastEffects.isEmpty)
        #expect(!h.isGranted(claim))
    }

    @Test func aDeadlineWhileAPresenterOwesAReplyOrphansTheRequest() throws {
        let h = ArbiterHarness()
        let viewer = h.connect("viewer", pid: 30)
        let app = h.connect("editor", pid: 31)
        let presenter = h.present("/d/f.txt", client: viewer)
        let claim = request(h, 1, "/d/f.txt", client: app, timeout: .seconds(1))
        let (asked, kind) = try #require(h.openRequests(of: presenter).first)
        #expect(kind == .relinquishToWriter)
        h.send(.timerFired(.claimDeadline(claim)))
        guard case .timedOut(let report)? = h.failure(claim) else {
            Issue.record("no timeout: \(String(describing: h.failure(claim)))")
            return
        }
        #expect(report.contains("for \(presenter)") && report.contains("to answer relinquishPresentedItem(toWriter:)"))
        // The late answer, with a reacquirer, is taken and the reacquirer sent back at once.
        h.reply(asked, .relinquished(reacquirer: true))
        #expect(h.messages(to: presenter).last == .reacquire(relinquish: asked))
    }

    @Test func aCancelledClaimStopsItsDeadline() {
        let h = ArbiterHarness()
        let app = h.connect("editor")
        let other = h.connect("sync")
        _ = h.write("/d/f.txt", client: other)
        let claim = request(h, 1, "/d/f.txt", client: app, timeout: .seconds(1))
        h.send(.claimCancelled(claim))
        #expect(h.lastEffects.contains(.cancelTimer(.claimDeadline(claim))))
        #expect(h.failure(claim) == .cancelled)
    }
}
