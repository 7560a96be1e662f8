import FCCore
import FCProtocol
import Logging
import Synchronization
import Testing

@testable import FileCoordination

/// The client's idle return of leases (docs/SEMANTICS.md §13.4): `LeaseTable.returnIdle` is what a connection's
/// listener calls once a period, called here by hand so that each period is a step, not a wait. A lease goes back once
/// it decided no claim for a whole period and runs none; a lease whose claim runs, or that decided one since the last
/// period, stays. Leases are known by their connection: a sweep or a loss of one connection touches its leases only.
@Suite struct LeaseIdleReturnTests {
    let subtree = try! ItemPath(absolute: "/work/tree")
    let lease = LeaseID(1)
    /// The connection whose daemon granted the lease (`DaemonTransport.serial`).
    let connection: UInt64 = 7

    func table(claims: ClaimTable = ClaimTable()) -> LeaseTable {
        let table = LeaseTable(enabled: true, idleReturn: .seconds(2), claims: claims) {
            Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        }
        table.grant(lease, subtree: subtree, connection: connection) { false }
        return table
    }

    /// `request` (one item) as the leased claim's straight path makes it.
    func straight(_ request: ClaimRequest) -> StraightClaim {
        StraightClaim(
            id: request.id,
            client: request.client,
            coordinator: request.coordinator,
            purpose: request.purpose,
            item: request.items[0]
        )
    }

    func read(_ id: UInt64) -> ClaimRequest {
        ClaimRequest(
            id: ClaimID(id),
            client: ClientID(1),
            coordinator: CoordinatorID(id),
            purpose: PurposeID("p\(id)"),
            items: [ClaimItem(path: subtree.appending(Array("f.txt".utf8)), access: .read([]))]
        )
    }

    /// The leases of `connection` that `returnIdle` returned this period.
    func sweep(_ table: LeaseTable, on connection: UInt64? = nil) -> [LeaseID] {
        table.returnIdle(on: connection ?? self.connection)
    }

    @Test func aLeaseUnusedForAWholePeriodIsReturnedAndDecidesNothingMore() throws {
        let table = table()
        #expect(sweep(table).isEmpty, "a lease just granted counts as used in its first period")
        #expect(sweep(table) == [lease])
        #expect(!table.holdsLeases(on: connection))
        #expect(table.submit(read(1)) == nil, "a returned lease decided a claim")
    }

    @Test func aLeaseWhoseClaimRunsIsKeptHoweverLong() throws {
        let table = table()
        let granted = try #require(table.submit(read(1)))
        #expect(granted.count == 1)
        for _ in 0..<5 { #expect(sweep(table).isEmpty, "a lease was returned while its claim ran") }
        _ = table.handle(.finishClaim(ClaimID(1), created: []))
        #expect(sweep(table).isEmpty, "the period of the claim's finish counts as used")
        #expect(sweep(table) == [lease])
    }

    @Test func aLeaseWhoseArbiterHoldsAWaitingClaimIsKept() throws {
        let table = table()
        _ = try #require(table.submit(read(1)))
        var write = read(2)
        write.items = [ClaimItem(path: write.items[0].path, access: .write([]))]
        // The write waits for the running read (both in the lease's arbiter), then runs once the read ends.
        #expect(try #require(table.submit(write)).isEmpty)
        for _ in 0..<3 { #expect(sweep(table).isEmpty, "a lease was returned while a claim waited in it") }
        let outcomes = try #require(table.handle(.finishClaim(ClaimID(1), created: [])))
        #expect(outcomes.map(\.0) == [ClaimID(2)])
        for _ in 0..<3 { #expect(sweep(table).isEmpty, "a lease was returned while its write ran") }
        _ = table.handle(.finishClaim(ClaimID(2), created: []))
        _ = sweep(table)
        #expect(sweep(table) == [lease])
    }

    /// A listener of a lost connection that sweeps late, and the loss of that connection, leave alone a lease that a
    /// newer connection's daemon granted meanwhile, even under the same id (each daemon numbers its leases from 1).
    @Test func aSweepOrALossOfOneConnectionLeavesAnotherConnectionsLeases() throws {
        let table = table()
        let newer: UInt64 = 8
        table.grant(lease, subtree: subtree, connection: newer) { false }
        for _ in 0..<3 { #expect(sweep(table, on: 9).isEmpty) }
        table.dropAll(of: connection)
        #expect(table.holds(LeaseTable.Key(connection: newer, lease: lease)))
        #expect(!table.holds(LeaseTable.Key(connection: connection, lease: lease)))
        #expect(sweep(table).isEmpty, "the lost connection's sweep returned the newer connection's lease")
        #expect(try #require(table.submit(read(1))).count == 1, "the newer connection's lease decides nothing")
    }

    /// A grant read after its connection was marked lost is not kept: the drop may already have run, and the lease
    /// would decide claims that no daemon knows of.
    @Test func aGrantOfALostConnectionIsNotKept() throws {
        let table = LeaseTable(enabled: true, idleReturn: .seconds(2), claims: ClaimTable()) {
            Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        }
        table.grant(lease, subtree: subtree, connection: connection) { true }
        #expect(!table.holdsLeases(on: connection))
        #expect(table.submit(read(1)) == nil, "a lease of a lost connection decided a claim")
    }

    // MARK: Claims granted at once (issue 39: NSFileCoordinator+LeasedClaim.swift)

    /// A claim granted through `grantAtOnce` is its lease's alone, not in the claim table; a lost connection moves it
    /// there as held, so that the client declares it to the next daemon, and its finish then goes the usual way.
    @Test func aClaimGrantedAtOnceIsHeldOnceItsConnectionIsLost() throws {
        let claims = ClaimTable()
        let table = table(claims: claims)
        let lease = try #require(table.grantAtOnce(straight(read(1))))
        #expect(claims.heldRequests.isEmpty)
        for _ in 0..<3 { #expect(sweep(table).isEmpty, "a lease was returned while its claim granted at once ran") }
        table.dropAll(of: connection)
        #expect(claims.heldRequests.map(\.id) == [ClaimID(1)], "the running claim would not be declared again")
        #expect(!table.finishAtOnce(ClaimID(1), in: lease), "a dropped lease ended a claim the next daemon knows")
    }

    /// A recall declares the claim granted at once as running, with the return, and the claim table holds it.
    @Test func aRecallDeclaresAClaimGrantedAtOnce() throws {
        let claims = ClaimTable()
        let table = table(claims: claims)
        let lease = try #require(table.grantAtOnce(straight(read(1))))
        var declared: [ClaimRequest] = []
        let waiting = table.recall(LeaseTable.Key(connection: connection, lease: self.lease)) { declared = $0 }
        #expect(waiting.isEmpty)
        #expect(declared.map(\.id) == [ClaimID(1)] && declared.allSatisfy(\.isHeld))
        #expect(claims.heldRequests.map(\.id) == [ClaimID(1)])
        #expect(!table.finishAtOnce(ClaimID(1), in: lease))
    }

    /// A second claim in the lease enters the first in the lease's arbiter: a write waits for the running read, the
    /// read's finish then goes to the arbiter and grants the write.
    @Test func aSecondClaimEntersTheClaimGrantedAtOnce() throws {
        let claims = ClaimTable()
        let table = table(claims: claims)
        let lease = try #require(table.grantAtOnce(straight(read(1))))
        var write = read(2)
        write.items = [ClaimItem(path: write.items[0].path, access: .write([]))]
        #expect(table.grantAtOnce(straight(write)) == nil, "a write was granted at once while a read ran")
        #expect(try #require(table.submit(write)).isEmpty, "the write did not wait for the running read")
        #expect(claims.heldRequests.map(\.id) == [ClaimID(1)])
        #expect(!table.finishAtOnce(ClaimID(1), in: lease))
        let outcomes = try #require(table.handle(.finishClaim(ClaimID(1), created: [])))
        #expect(outcomes.map(\.0) == [ClaimID(2)])
    }

    /// The usual way of a claim granted at once: its finish leaves nothing behind, and the next is granted at once.
    @Test func aClaimGrantedAtOnceEndsWithoutATrace() throws {
        let claims = ClaimTable()
        let table = table(claims: claims)
        for id in 1...3 {
            let lease = try #require(table.grantAtOnce(straight(read(UInt64(id)))))
            #expect(table.finishAtOnce(ClaimID(UInt64(id)), in: lease))
        }
        #expect(claims.heldRequests.isEmpty)
        #expect(table.decidedInProcess == 3)
        let outside = ClaimRequest(
            id: ClaimID(9),
            client: ClientID(1),
            coordinator: CoordinatorID(9),
            purpose: PurposeID("p9"),
            items: [ClaimItem(path: try ItemPath(absolute: "/work/other.txt"), access: .read([]))]
        )
        #expect(table.grantAtOnce(straight(outside)) == nil, "a claim outside the lease was granted in it")
    }

    /// The review's first finding: a claim granted at once the general way (`submit`, registered in the claim table)
    /// whose finish left the claim table just before its lease was dropped, or before a second claim entered it, was
    /// entered as held again and never left: every later daemon would have been told it still ran.
    @Test(arguments: [false, true])
    func aGeneralClaimFinishingAsItsLeaseChangesIsNotHeldAgain(secondClaim: Bool) throws {
        let claims = ClaimTable()
        let table = table(claims: claims)
        let request = read(1)
        _ = claims.register(ClaimWaiter(blocksThread: false), for: request)
        #expect(try #require(table.submit(request)).count == 1)
        _ = claims.granted(ClaimID(1))
        // The client's finish: the claim table first, then the lease; in between the lease changes.
        claims.finished(ClaimID(1))
        if secondClaim {
            var write = read(2)
            write.items = [ClaimItem(path: write.items[0].path, access: .write([]))]
            #expect(try #require(table.submit(write)).isEmpty)
        } else {
            table.dropAll(of: connection)
        }
        _ = table.handle(.finishClaim(ClaimID(1), created: []))
        #expect(claims.heldRequests.isEmpty, "a finished claim would be declared to every later daemon")
    }

    /// The review's second finding: a move reported inside the accessor of a claim of the straight path went to the
    /// daemon, which knows nothing of the claim and dropped it; in the lease the mover did not hold the new name, and a
    /// read of it was granted while the write ran. The move now enters the claim in its lease's arbiter first.
    @Test func aMoveReportedInsideAClaimOfTheStraightPathReachesItsLease() throws {
        let claims = ClaimTable()
        let table = table(claims: claims)
        var write = read(1)
        write.items = [ClaimItem(path: write.items[0].path, access: .write([]))]
        let lease = try #require(table.grantAtOnce(straight(write)))
        let moved = subtree.appending(Array("moved.txt".utf8))
        let outcomes = table.handle(.itemMoved(ClaimID(1), from: write.items[0].path, to: moved, fromName: nil))
        #expect(outcomes != nil, "the move went to the daemon, which knows nothing of the claim")
        var readMoved = read(2)
        readMoved.items = [ClaimItem(path: moved, access: .read([]))]
        #expect(try #require(table.submit(readMoved)).isEmpty, "a read of the moved item ran while the write did")
        #expect(!table.finishAtOnce(ClaimID(1), in: lease))
        #expect(claims.heldRequests.map(\.id) == [ClaimID(1)])
        let after = try #require(table.handle(.finishClaim(ClaimID(1), created: [])))
        #expect(after.map(\.0) == [ClaimID(2)])
    }

    /// A recall's return declares the claims still running in the lease; a finish of one of them that reads no lease
    /// held goes straight to the daemon without the table's lock (CoordinationClient.send). Until stop 69 the count
    /// fell before the return was written, so such a finish could reach the daemon first: dropped there as unknown,
    /// and the return then made the claim run for good (OppositeOrderEndToEndTests hung once under load).
    @Test func aRecallsReturnIsWrittenWhileTheLeaseStillCounts() throws {
        let table = table()
        var write = read(1)
        write.items = [ClaimItem(path: write.items[0].path, access: .write([]))]
        let granted = try #require(table.submit(write))
        #expect(granted.map(\.0) == [ClaimID(1)])
        var countWhileWriting = -1
        var declared: [ClaimID] = []
        _ = table.recall(LeaseTable.Key(connection: connection, lease: lease)) { running in
            declared = running.map(\.id)
            countWhileWriting = table.heldCount.load(ordering: .acquiring)
        }
        #expect(declared == [ClaimID(1)])
        #expect(countWhileWriting == 1, "a finish could go to the daemon before the return declaring its claim")
        #expect(table.heldCount.load(ordering: .acquiring) == 0)
        #expect(table.handle(.finishClaim(ClaimID(1), created: [])) == nil, "the finish must go to the daemon")
    }
}
