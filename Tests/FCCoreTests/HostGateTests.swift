import FCCore
import FCTestSupport
import Testing

/// Host gates (issue 40; docs/SEMANTICS.md §14): while this host does not hold a shared folder's host lease, no claim
/// inside it is granted; a drain lets the granted ones end (process leases recalled) and says when none is left.
@Suite struct HostGateTests {
    static func harness() -> ArbiterHarness {
        var configuration = ArbiterConfiguration(presenterTimeout: .seconds(30), deadlockDetectionDelay: nil)
        configuration.leases = LeasePolicy()
        return ArbiterHarness(configuration: configuration)
    }

    static func wanted(_ effects: [ArbiterEffect]) -> [ItemPath] {
        effects.compactMap { if case .hostGateWanted(let folder) = $0 { folder } else { nil } }
    }

    static func drained(_ effects: [ArbiterEffect]) -> [ItemPath] {
        effects.compactMap { if case .hostGateDrained(let folder) = $0 { folder } else { nil } }
    }

    @Test func aClaimInsideAClosedGateWaitsAndAsksForTheFolder() {
        let h = Self.harness()
        let app = h.connect("app")
        h.send(.hostGate(path("/share"), .close))
        let read = h.read("/share/doc", client: app)
        #expect(!h.isGranted(read))
        #expect(Self.wanted(h.lastEffects) == [path("/share")])
        // Outside the folder, and on a folder above it (a plain read or write), nothing waits.
        let outside = h.write("/home/doc", client: app)
        #expect(h.isGranted(outside))
        let above = h.write("/", client: app)
        #expect(h.isGranted(above))
        #expect(Self.wanted(h.lastEffects).isEmpty)
        h.send(.hostGate(path("/share"), .open(revision: 7)))
        #expect(h.isGranted(read))
    }

    @Test func aDeleteOfAFolderAroundTheShareWaitsAtTheGateToo() {
        let h = Self.harness()
        let app = h.connect("app")
        h.send(.hostGate(path("/mnt/share"), .close))
        let delete = h.write("/mnt", .forDeleting, client: app)
        #expect(!h.isGranted(delete))
        #expect(Self.wanted(h.lastEffects) == [path("/mnt/share")])
    }

    @Test func theGateAsksNoPresenterAndHoldsNoChangeBack() {
        let h = Self.harness()
        let app = h.connect("app")
        let presenter = h.present("/share/doc", client: app)
        h.send(.hostGate(path("/share"), .close))
        #expect(h.messages(to: presenter).isEmpty)
        // A change made without coordination inside is reported, not taken for the gate's echo.
        h.send(.fileSystemChanged([.changed(path("/share/doc"))], observed: [:]))
        h.send(.timerFired(.fileSystemWindow))
        #expect(h.messages(to: presenter).contains(.presentedItemDidChange))
    }

    @Test func noLeaseInsideAClosedGateAndADrainRecallsTheLeasesInside() throws {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        h.send(.hostGate(path("/share"), .close))
        h.send(.hostGate(path("/share"), .open(revision: 1)))
        // Held: a lease inside is granted as anywhere.
        let lease = try LeaseTests.lease(h, app, in: "/share/d")
        h.send(.hostGate(path("/share"), .drain))
        #expect(h.lastRecalls == [lease])
        #expect(Self.drained(h.lastEffects).isEmpty)
        // The holder returns it with a read still running: the drain waits for that read.
        var running = LeaseTests.runningRead(ClaimID(900), of: app, coordinator: CoordinatorID(900))
        running.items = [ArbiterHarness.read("/share/d/f")]
        h.send(.leaseReturned(lease, client: app, running: [running]))
        #expect(Self.drained(h.lastEffects).isEmpty)
        h.finish(ClaimID(900))
        #expect(Self.drained(h.lastEffects) == [path("/share")])
        // Closed: a claim ending inside earns no lease there.
        h.send(.hostGate(path("/share"), .open(revision: 2)))
        h.send(.hostGate(path("/share"), .close))
        let read = h.read("/share/e/f", client: app)
        h.send(.hostGate(path("/share"), .open(revision: 3)))
        #expect(h.isGranted(read))
        h.send(.hostGate(path("/share"), .close))
        h.finish(read)
        #expect(h.lastLeaseGrants.isEmpty)
    }

    @Test func aDrainWaitsForGrantedClaimsAndHoldsNewOnesBack() {
        let h = Self.harness()
        let app = h.connect("app")
        h.send(.hostGate(path("/share"), .close))
        h.send(.hostGate(path("/share"), .open(revision: 1)))
        let write = h.write("/share/doc", client: app)
        #expect(h.isGranted(write))
        let queued = h.read("/share/doc", client: app)  // Waits for the write, arrived before the drain.
        h.send(.hostGate(path("/share"), .drain))
        #expect(Self.wanted(h.lastEffects) == [path("/share")])
        #expect(Self.drained(h.lastEffects).isEmpty)
        let late = h.read("/share/other", client: app)
        #expect(!h.isGranted(late))
        h.finish(write)
        // The queued read now waits at the gate: not granted after the drain began.
        #expect(!h.isGranted(queued))
        #expect(Self.drained(h.lastEffects) == [path("/share")])
        h.send(.hostGate(path("/share"), .open(revision: 2)))
        #expect(h.isGranted(queued) && h.isGranted(late))
    }

    @Test func aDrainWithNothingGrantedEndsAtOnce() {
        let h = Self.harness()
        h.send(.hostGate(path("/share"), .drain))
        #expect(Self.drained(h.lastEffects) == [path("/share")])
    }

    @Test func failingTheWaitingClaimsGivesTheReasonAndLeavesOthersAlone() {
        let h = Self.harness()
        let app = h.connect("app")
        h.send(.hostGate(path("/share"), .close))
        let inside = h.write("/share/doc", client: app)
        let outside = h.write("/home/doc", client: app)
        h.send(.hostGate(path("/share"), .failWaiting("cluster unreachable: no session")))
        #expect(h.failure(inside) == .clusterUnreachable("cluster unreachable: no session"))
        #expect(h.isGranted(outside))
        #expect(h.arbiter.hostGateSnapshots().map(\.waiting) == [0])
    }

    @Test func lostClaimsAreLoggedWithTheirClient() {
        let h = Self.harness()
        let app = h.connect("app", pid: 42)
        h.send(.hostGate(path("/share"), .close))
        h.send(.hostGate(path("/share"), .open(revision: 1)))
        let write = h.write("/share/doc", client: app)
        #expect(h.isGranted(write))
        h.send(.hostGate(path("/share"), .close))
        let effects = h.send(.hostGate(path("/share"), .claimsLost("cluster unreachable: fenced")))
        let lost = effects.compactMap { effect -> LogRecord? in
            if case .log(let record) = effect, record.level == .error { return record }
            return nil
        }
        #expect(lost.count == 1)
        #expect(lost.first?.metadata["client.pid"] == "42")
        #expect(lost.first?.metadata["claim.id"] == "\(write.rawValue)")
    }

    @Test func noClientMayNameAGateClaim() {
        let h = Self.harness()
        let app = h.connect("app")
        h.send(.hostGate(path("/share"), .close))
        let gate = h.arbiter.hostGateSnapshots()[0].claim
        h.send(.claimFinished(gate, created: []))
        h.send(.claimCancelled(gate))
        let read = h.read("/share/doc", client: app)
        #expect(!h.isGranted(read))
        let forged = ClaimRequest(
            id: ClaimID(ClaimID.hostGateBit | 5),
            client: app,
            coordinator: CoordinatorID(1),
            purpose: PurposeID("p"),
            items: [ArbiterHarness.read("/home/x")]
        )
        h.send(.claimRequested(forged))
        #expect(h.failure(forged.id) != nil)
    }
}

extension HostGateTests {
    @Test func aNestedClaimOfAClaimGrantedInsidePassesADrainingGateAndNothingElseDoes() {
        let h = Self.harness()
        let app = h.connect("app")
        let other = h.connect("other")
        h.send(.hostGate(path("/share"), .close))
        h.send(.hostGate(path("/share"), .open(revision: 1)))
        let coordinator = h.coordinator()
        let outer = h.write("/share/doc", client: app, coordinator: coordinator)
        #expect(h.isGranted(outer))
        h.send(.hostGate(path("/share"), .drain))
        // The outer accessor coordinates again (same coordinator): holding it back would deadlock with the drain.
        let nested = h.read("/share/other", client: app, coordinator: coordinator)
        #expect(h.isGranted(nested))
        let stranger = h.read("/share/third", client: other)
        #expect(!h.isGranted(stranger))
        h.finish(nested)
        #expect(Self.drained(h.lastEffects).isEmpty)
        h.finish(outer)
        #expect(Self.drained(h.lastEffects) == [path("/share")])
        // Closed (not draining), nothing passes.
        let late = h.read("/share/fourth", client: app, coordinator: coordinator)
        #expect(!h.isGranted(late))
    }

    /// A fence while the folder drains holds it back (``HostLeaseTable``): from then on another host may hold it, so
    /// a nested claim of the claim still granted inside no longer passes. Until stop 67 the drain's exemption stayed.
    @Test func aGateClosedOverADrainLetsNoNestedClaimPass() {
        let h = Self.harness()
        let app = h.connect("app")
        h.send(.hostGate(path("/share"), .close))
        h.send(.hostGate(path("/share"), .open(revision: 1)))
        let coordinator = h.coordinator()
        let outer = h.write("/share/doc", client: app, coordinator: coordinator)
        h.send(.hostGate(path("/share"), .drain))
        h.send(.hostGate(path("/share"), .close))
        h.send(.hostGate(path("/share"), .claimsLost("cluster unreachable: test")))
        let nested = h.read("/share/other", client: app, coordinator: coordinator)
        #expect(!h.isGranted(nested))
        #expect(Self.wanted(h.lastEffects) == [path("/share")])
        h.finish(outer)
        #expect(Self.drained(h.lastEffects).isEmpty)  // No drain any more: the table asks for none.
    }

    @Test func closingTheGateRecallsTheLeasesInsideAtOnceMinimumHoldOrNot() throws {
        let h = Self.harness()
        let app = h.connect("app", answersRecalls: true)
        h.send(.hostGate(path("/share"), .close))
        h.send(.hostGate(path("/share"), .open(revision: 1)))
        let read = h.read("/share/d/f", client: app)
        h.finish(read)
        let lease = try #require(h.lastLeaseGrants.first?.0)
        // No minimum hold passed: a fence closes the gate, and the holder must stop deciding at once.
        h.send(.hostGate(path("/share"), .close))
        #expect(h.lastRecalls == [lease])
    }

    @Test func aClaimDeclaredRunningInsideAClosedGateIsLoggedAsNotExclusive() {
        let h = Self.harness()
        let app = h.connect("app", pid: 77)
        h.send(.hostGate(path("/share"), .close))
        var running = ClaimRequest(
            id: ClaimID(50),
            client: app,
            coordinator: CoordinatorID(1),
            purpose: PurposeID("p"),
            items: [ArbiterHarness.write("/share/doc")]
        )
        running.isHeld = true
        let effects = h.send(.claimRequested(running))
        let lost = effects.compactMap { effect -> LogRecord? in
            if case .log(let record) = effect, record.level == .error { return record }
            return nil
        }
        #expect(lost.count == 1)
        #expect(lost.first?.metadata["client.pid"] == "77")
    }
}
