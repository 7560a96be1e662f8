import FCCore
import Logging
import Testing

@testable import FileCoordination

/// The client's idle return of leases (docs/SEMANTICS.md §13.4): `LeaseTable.returnIdle` is what the listener calls
/// once a period, called here by hand so that each period is a step, not a wait. A lease goes back once it decided no
/// claim for a whole period and runs none; a lease whose claim runs, or that decided one since the last period, stays.
@Suite struct LeaseIdleReturnTests {
    let subtree = try! ItemPath(absolute: "/work/tree")
    let lease = LeaseID(1)

    func table() -> LeaseTable {
        let table = LeaseTable(enabled: true, idleReturn: .seconds(2)) {
            Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        }
        table.grant(lease, subtree: subtree)
        return table
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

    /// The leases `returnIdle` returned this period.
    func sweep(_ table: LeaseTable) -> [LeaseID] {
        var returned: [LeaseID] = []
        table.returnIdle { returned.append($0) }
        return returned
    }

    @Test func aLeaseUnusedForAWholePeriodIsReturnedAndDecidesNothingMore() throws {
        let table = table()
        #expect(sweep(table).isEmpty, "a lease just granted counts as used in its first period")
        #expect(sweep(table) == [lease])
        #expect(!table.holdsLeases)
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
        for _ in 0..<3 { _ = sweep(table) }
        let outcomes = try #require(table.handle(.finishClaim(ClaimID(1), created: [])))
        #expect(outcomes.map(\.0) == [ClaimID(2)])
        for _ in 0..<3 { #expect(sweep(table).isEmpty, "a lease was returned while its write ran") }
        _ = table.handle(.finishClaim(ClaimID(2), created: []))
        _ = sweep(table)
        #expect(sweep(table) == [lease])
    }
}
