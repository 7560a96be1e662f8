import FCCore
import FCProtocol
import SwiftProtobuf
import Testing

/// Issue 26: a claim item's and a presenter's file identity cross the wire unchanged, and a frame without one (an
/// older client) decodes to no identity.
@Suite struct IdentityConversionTests {
    static let identity = ItemIdentity(device: 0xFD00, inode: UInt64.max - 1)

    @Test func aClaimItemsIdentityRoundTrips() throws {
        let item = ClaimItem(
            path: try ItemPath(absolute: "/d/a.txt"),
            access: .write(.forMerging),
            identity: Self.identity
        )
        let wire = Filecoord_V1_ClaimItem(item)
        let decoded = try ClaimItem(
            wire: try Filecoord_V1_ClaimItem(serializedBytes: try wire.serializedBytes() as [UInt8])
        )
        #expect(decoded == item)
        var plain = wire
        plain.clearIdentity()
        #expect(try ClaimItem(wire: plain).identity == nil)
    }

    @Test func aPresentersIdentityRoundTrips() throws {
        let registration = PresenterRegistration(
            id: PresenterID(3),
            client: ClientID(1),
            path: try ItemPath(absolute: "/d/a.txt"),
            identity: Self.identity
        )
        let wire = Filecoord_V1_RegisterPresenter(registration)
        #expect(wire.identity.device == 0xFD00)
        #expect(try PresenterRegistration(wire: wire, client: ClientID(1)) == registration)
        var plain = wire
        plain.clearIdentity()
        #expect(try PresenterRegistration(wire: plain, client: ClientID(1)).identity == nil)
    }
}
