import FCCore
import FCProtocol
import Testing

@testable import FileCoordination

/// ``ClaimTable/moved(_:from:to:)``: a held claim holds the places its reported moves took its items to, for a
/// declaration to come (a lease's return, a new daemon), and stays a request the daemon takes (docs/PROTOCOL.md §5:
/// at most 1,000 items, paths of at most 4,096 bytes). Until stop 69's review a folder of 600 items moved made a
/// claim of 1,200, which a daemon refused as a whole (the connection closed, the claim protected nothing).
@Suite struct ClaimTableMoveTests {
    func path(_ text: String) -> ItemPath { try! ItemPath(absolute: text) }

    func request(_ items: [ClaimItem]) -> ClaimRequest {
        ClaimRequest(
            id: ClaimID(1),
            client: ClientID(1),
            coordinator: CoordinatorID(1),
            purpose: PurposeID("p"),
            items: items
        )
    }

    @Test func aMovedFolderIsHeldAtItsNewPlaceWithoutACopyOfEachItemInside() throws {
        let claims = ClaimTable()
        let inside = (0..<600).map { ClaimItem(path: path("/d/f\($0)"), access: .write([])) }
        claims.hold(request([ClaimItem(path: path("/d"), access: .write(.forMoving))] + inside))
        claims.moved(ClaimID(1), from: path("/d"), to: path("/e"))
        let held = try #require(claims.heldRequest(of: ClaimID(1)))
        #expect(held.items.count == 602, "\(held.items.count) items")
        #expect(held.items.last?.path == path("/e") && held.items.last?.access == .write(.forMoving))
    }

    @Test func aClaimMovedAgainAndAgainStaysWithinTheItemLimit() throws {
        let claims = ClaimTable()
        claims.hold(request([ClaimItem(path: path("/d/n0"), access: .write([]))]))
        for step in 0..<1_500 {
            claims.moved(ClaimID(1), from: path("/d/n\(step)"), to: path("/d/n\(step + 1)"))
        }
        let held = try #require(claims.heldRequest(of: ClaimID(1)))
        #expect(held.items.count == ProtocolLimits.defaultMaximumItemsPerClaim)
    }

    @Test func aPlaceTooLongToDeclareIsNotAdded() throws {
        let claims = ClaimTable()
        let deep = "/d/" + String(repeating: "x", count: 200) + "/" + String(repeating: "y", count: 200)
        claims.hold(request([ClaimItem(path: path(deep), access: .write([]))]))
        let long = "/" + (0..<20).map { _ in String(repeating: "z", count: 200) }.joined(separator: "/")
        claims.moved(ClaimID(1), from: path("/d"), to: path(long))
        let held = try #require(claims.heldRequest(of: ClaimID(1)))
        #expect(held.items.map(\.path) == [path(deep)])
    }
}
