import FCCore
import FCTestSupport
import Testing

/// A claim's longest hold (`ClaimRequest.maximumHold`, issue 42; docs/SEMANTICS.md §2 rule 8): past it, a claim
/// that waits for the holder ends it, as if its client had finished it.
@Suite struct HoldLimitTests {
    /// Requests a write of `path` by `client` with a longest hold.
    private func limitedWrite(_ h: ArbiterHarness, _ id: UInt64, _ path: String, client: ClientID) -> ClaimID {
        let claim = ClaimID(1_000 + id)
        var request = ClaimRequest(
            id: claim,
            client: client,
            coordinator: h.coordinator(),
            purpose: PurposeID("held open \(id)"),
            items: [ArbiterHarness.write(path)]
        )
        request.maximumHold = .seconds(30)
        h.send(.claimRequested(request))
        return claim
    }

    /// A claim declared as held (after a restart: a stopped daemon's stand-in for a preloaded program's claim) keeps
    /// its longest hold, counted from its declaration. Before, a held claim never armed it, and held a writer back
    /// until the program exited.
    @Test func aHeldClaimKeepsItsLongestHold() throws {
        let h = ArbiterHarness()
        let program = h.connect("stand-in", pid: 30)
        let editor = h.connect("editor", pid: 31)
        var request = ClaimRequest(
            id: ClaimID(1_001),
            client: program,
            coordinator: h.coordinator(),
            purpose: PurposeID("held open"),
            items: [ArbiterHarness.write("/d/log.txt")]
        )
        request.isHeld = true
        request.maximumHold = .seconds(30)
        h.send(.claimRequested(request))
        #expect(h.effects.contains(.startTimer(.claimHoldLimit(request.id), after: .seconds(30))))
        let waiting = h.write("/d/log.txt", client: editor)
        #expect(!h.isGranted(waiting))
        h.send(.timerFired(.claimHoldLimit(request.id)))
        _ = h.answerAll()
        #expect(h.isGranted(waiting))
    }

    @Test func aClaimThatWaitsWhenTheHoldPassesEndsTheHolder() throws {
        let h = ArbiterHarness()
        let program = h.connect("preload:sh", pid: 30)
        let editor = h.connect("editor", pid: 31)
        let presenter = h.present("/d/log.txt", client: editor)
        _ = h.answerAll()
        let held = limitedWrite(h, 1, "/d/log.txt", client: program)
        _ = h.answerAll()
        #expect(h.isGranted(held))
        #expect(h.effects.contains(.startTimer(.claimHoldLimit(held), after: .seconds(30))))
        let waiting = h.write("/d/log.txt", client: editor)
        #expect(!h.isGranted(waiting))
        h.send(.timerFired(.claimHoldLimit(held)))
        _ = h.answerAll()
        // The holder ended as if its client had finished it: the presenter heard of the write and reacquired, and
        // the waiting claim went on.
        #expect(h.isGranted(waiting))
        #expect(h.arbiter.statistics.holdsEnded == 1)
        let messages = h.messages(to: presenter)
        #expect(messages.contains(.presentedItemDidChange), "\(messages)")
        #expect(messages.contains { if case .reacquire = $0 { true } else { false } }, "\(messages)")
        // Its client's finish, later, is a finish of an unknown claim: ignored.
        h.finish(held)
        #expect(h.isGranted(waiting))
        #expect(h.failure(waiting) == nil)
    }

    @Test func anOverdueHolderNobodyWaitsForStaysUntilAClaimComes() throws {
        let h = ArbiterHarness()
        let program = h.connect("preload:sqlite3")
        let app = h.connect("app")
        let held = limitedWrite(h, 1, "/d/db", client: program)
        h.send(.timerFired(.claimHoldLimit(held)))
        #expect(h.isGranted(held))
        #expect(h.arbiter.statistics.holdsEnded == 0)
        // A claim elsewhere changes nothing; one that conflicts ends it at once.
        let elsewhere = h.write("/d/other", client: app)
        #expect(h.isGranted(elsewhere))
        #expect(h.arbiter.statistics.holdsEnded == 0)
        let reader = h.read("/d/db", client: app)
        #expect(h.isGranted(reader))
        #expect(h.arbiter.statistics.holdsEnded == 1)
    }

    @Test func beforeTheHoldPassesAndWithoutALimitTheHolderStays() throws {
        let h = ArbiterHarness()
        let program = h.connect("preload:tail")
        let app = h.connect("app")
        let limited = limitedWrite(h, 1, "/d/a", client: program)
        let unlimited = h.write("/d/b", client: program)
        let waitingA = h.write("/d/a", client: app)
        let waitingB = h.write("/d/b", client: app)
        #expect(!h.isGranted(waitingA) && !h.isGranted(waitingB))
        // No timer for a claim without a limit; a timer that fires for one changes nothing.
        #expect(!h.effects.contains(.startTimer(.claimHoldLimit(unlimited), after: .seconds(30))))
        h.send(.timerFired(.claimHoldLimit(unlimited)))
        #expect(!h.isGranted(waitingB))
        // Finished before its limit: the timer is cancelled, and a late one changes nothing.
        h.finish(limited)
        #expect(h.lastEffects.contains(.cancelTimer(.claimHoldLimit(limited))))
        #expect(h.isGranted(waitingA))
        h.send(.timerFired(.claimHoldLimit(limited)))
        #expect(h.lastEffects.isEmpty)
        #expect(h.arbiter.statistics.holdsEnded == 0)
    }

    @Test func anExemptClaimDoesNotEndTheHolder() throws {
        let h = ArbiterHarness()
        let program = h.connect("preload:sh")
        let held = limitedWrite(h, 1, "/d/a", client: program)
        h.send(.timerFired(.claimHoldLimit(held)))
        // The same purpose (the program's child, inside its claims) never waits for it, so never ends it.
        let child = h.connect("preload:date")
        let inside = h.write("/d/a", client: child, purpose: PurposeID("held open 1"))
        #expect(h.isGranted(inside))
        #expect(h.isGranted(held))
        #expect(h.arbiter.statistics.holdsEnded == 0)
    }

    /// A host gate that drains waits for every claim granted in its folder (another host waits for it, §14): an
    /// overdue one ends, whether the drain begins after its limit passed or before.
    @Test func aDrainingHostGateEndsAnOverdueHolder() throws {
        let h = ArbiterHarness(configuration: ArbiterConfiguration(presenterTimeout: .seconds(30)))
        let drained = { (effects: [ArbiterEffect]) -> Bool in
            effects.contains { if case .hostGateDrained = $0 { true } else { false } }
        }
        let program = h.connect("preload:sh")
        for drainFirst in [false, true] {
            h.send(.hostGate(ArbiterHarness.path("/share"), .close))
            h.send(.hostGate(ArbiterHarness.path("/share"), .open(revision: 1)))
            let held = limitedWrite(h, drainFirst ? 2 : 1, "/share/log", client: program)
            #expect(h.isGranted(held))
            if drainFirst {
                h.send(.hostGate(ArbiterHarness.path("/share"), .drain))
                #expect(!drained(h.lastEffects))
                h.send(.timerFired(.claimHoldLimit(held)))
            } else {
                h.send(.timerFired(.claimHoldLimit(held)))
                h.send(.hostGate(ArbiterHarness.path("/share"), .drain))
            }
            #expect(drained(h.lastEffects), "the drain still waits for the overdue \(held)")
        }
        #expect(h.arbiter.statistics.holdsEnded == 2)
    }
}
