import FCCore
import FCProtocol
import Foundation
import SwiftProtobuf
import Testing

/// What the conversions from the wire refuse, and the raw values they carry.
@Suite struct ConversionTests {
    @Test func pathsAreNormalisedLexically() throws {
        #expect(try ItemPath(wire: Array("/a/./b//c/../d/".utf8)) == path("/a/b/d"))
        #expect(try ItemPath(wire: Array("/".utf8)) == .root)
        // Not UTF-8: names are bytes.
        let latin1: [UInt8] = [0x2F, 0x63, 0x61, 0x66, 0xE9]
        #expect(try ItemPath(wire: latin1).bytes == latin1)
    }

    @Test(arguments: [
        ([] as [UInt8], ProtocolError.Code.invalidPath),
        (Array("relative/path".utf8), .invalidPath),
        (Array("/a/b".utf8) + [0] + Array("c".utf8), .invalidPath),
    ])
    func invalidPathsAreRefused(_ bytes: [UInt8], _ code: ProtocolError.Code) {
        let error = #expect(throws: ProtocolError.self) { try ItemPath(wire: bytes) }
        #expect(error?.code == code)
    }

    @Test func pathLengthIsLimited() throws {
        let longest =
            [UInt8(ascii: "/")] + [UInt8](repeating: UInt8(ascii: "a"), count: 255)
            + Array(
                repeating: [UInt8(ascii: "/")] + [UInt8](repeating: UInt8(ascii: "b"), count: 255),
                count: 15
            ).flatMap { $0 }
        #expect(longest.count == ProtocolLimits.defaultMaximumPathLength)
        _ = try ItemPath(wire: longest)
        let error = #expect(throws: ProtocolError.self) { try ItemPath(wire: longest + [UInt8(ascii: "c")]) }
        #expect(error?.code == .pathTooLong)
        let small = ProtocolLimits(maximumPathLength: 8)
        #expect(throws: ProtocolError.self) { try ItemPath(wire: Array("/123456789".utf8), limits: small) }
    }

    @Test func aRelativePathInAClaimNamesItsField() {
        var request = Filecoord_V1_RequestClaim()
        request.items = [
            .with { $0.path = bytes("/ok") },
            .with { $0.path = bytes("not/absolute") },
        ]
        let error = #expect(throws: ProtocolError.self) {
            try ArbiterEvent(wire: Filecoord_V1_Frame(.requestClaim(request)), client: Samples.client)
        }
        #expect(error?.code == .invalidPath)
        #expect(error?.reason.contains("RequestClaim.items[1].path") == true)
    }

    @Test func itemsPerClaimAreLimited() throws {
        let limits = ProtocolLimits(maximumItemsPerClaim: 3)
        var request = Filecoord_V1_RequestClaim()
        request.items = Array(repeating: .with { $0.path = bytes("/a") }, count: 3)
        _ = try ClaimRequest(wire: request, client: Samples.client, limits: limits)
        request.items.append(.with { $0.path = bytes("/b") })
        let error = #expect(throws: ProtocolError.self) {
            try ClaimRequest(wire: request, client: Samples.client, limits: limits)
        }
        #expect(error?.code == .limitExceeded)
    }

    @Test func optionsAndCallbacksKeepTheirRawValues() throws {
        let write = try Access(wireWrite: true, options: 0b1_1111)
        #expect(
            write == .write([.forDeleting, .forMoving, .forMerging, .forReplacing, .contentIndependentMetadataOnly])
        )
        #expect(write.wireOptions == 0b1_1111)
        let read = try Access(wireWrite: false, options: 1 << 3 | 1 << 40)
        #expect(read == .read(ReadingOptions(rawValue: 1 << 3 | 1 << 40)))
        #expect(read.wireOptions == 1 << 3 | 1 << 40)

        var register = Filecoord_V1_RegisterPresenter()
        register.callbacks = PresenterCallbacks.subitemNotifications.rawValue | 1 << 20
        let registration = try PresenterRegistration(wire: register, client: Samples.client)
        #expect(registration.callbacks.rawValue == PresenterCallbacks.subitemNotifications.rawValue | 1 << 20)
        #expect(registration.path == nil)
    }

    @Test func everyMessageKindMapsToItsOwnWireKind() {
        let kinds = Samples.messageKinds.map(Filecoord_V1_PresenterMessage.Kind.init)
        #expect(!kinds.contains(.unspecified))
        // 13 kinds in FCCore and on the wire; the version kinds appear three times each in the samples.
        #expect(Set(kinds.map(\.rawValue)) == Set(1...13))
    }

    @Test func aPresenterMessageNeedsARequestIDExactlyWhenItNeedsAReply() throws {
        for kind in Samples.messageKinds {
            let message = PresenterMessage(
                presenter: PresenterID(1),
                client: Samples.client,
                request: kind.needsReply ? RequestID(9) : nil,
                claim: nil,
                kind: kind
            )
            var wire = Filecoord_V1_PresenterMessage(message)
            #expect(try PresenterMessage(wire: wire, client: Samples.client) == message)
            if kind.needsReply {
                wire.clearRequestID()
            } else {
                wire.requestID = 9
            }
            let error = #expect(throws: ProtocolError.self) { try PresenterMessage(wire: wire, client: Samples.client) }
            #expect(error?.code == .invalidValue)
        }
    }

    /// Issue 14: the mover's spelling of a rename in place's old name crosses the wire both ways, and anything but
    /// one path component is refused with a clear error.
    @Test func theSpelledOldNameOfARenameInPlaceIsOneComponent() throws {
        let message = PresenterMessage(
            presenter: PresenterID(1),
            client: Samples.client,
            request: nil,
            claim: nil,
            kind: .presentedSubitemDidMove(from: path("/d/a"), to: path("/d/a")),
            movedFromName: Array("A".utf8)
        )
        var wire = Filecoord_V1_PresenterMessage(message)
        #expect(try PresenterMessage(wire: wire, client: Samples.client) == message)
        var moved = Filecoord_V1_ItemMoved(claim: ClaimID(1), from: path("/d/a"), to: path("/d/a"))
        for bad in ["", ".", "..", "a/b", "a\u{0}b", String(repeating: "x", count: 256)] {
            wire.movedFromName = Data(bad.utf8)
            let error = #expect(throws: ProtocolError.self) { try PresenterMessage(wire: wire, client: Samples.client) }
            #expect(error?.code == .invalidValue)
            moved.fromName = Data(bad.utf8)
            let refused = #expect(throws: ProtocolError.self) {
                try ArbiterEvent(wire: Filecoord_V1_Frame(.itemMoved(moved)), client: Samples.client)
            }
            #expect(refused?.description.contains("ItemMoved.from_name") == true)
        }
    }

    @Test func unspecifiedAndUnknownEnumValuesAreRefused() {
        var message = Filecoord_V1_PresenterMessage()
        #expect(throws: ProtocolError.self) { try PresenterMessageKind(wire: message) }
        message.kind = .UNRECOGNIZED(99)
        #expect(throws: ProtocolError.self) { try PresenterMessageKind(wire: message) }

        var failed = Filecoord_V1_ClaimFailed()
        #expect(throws: ProtocolError.self) { try ClaimFailedReason(wire: failed) }
        failed.kind = .UNRECOGNIZED(42)
        #expect(throws: ProtocolError.self) { try ClaimFailedReason(wire: failed) }

        #expect(throws: ProtocolError.self) { try VersionChange(wireKind: .unspecified, versionID: "v") }
        #expect(throws: ProtocolError.self) { try VersionChange(wireKind: .UNRECOGNIZED(7), versionID: "v") }
        #expect(throws: ProtocolError.self) { try VersionChange(wireKind: .added, versionID: "") }
    }

    @Test func aPresenterReplyNeedsAResult() {
        var reply = Filecoord_V1_PresenterReply()
        reply.requestID = 4
        let error = #expect(throws: ProtocolError.self) { try PresenterReply(wire: reply) }
        #expect(error?.code == .invalidValue)
    }

    @Test func aPresenterErrorOfAnotherClientHasNoPresenterID() throws {
        let failure = ClaimFailure.presenterError(
            PresenterError(domain: "D", code: 1, message: "m"),
            presenter: PresenterID(5)
        )
        var wire = Filecoord_V1_ClaimFailed(claim: ClaimID(1), failure: failure)
        #expect(wire.hasPresenterID)
        #expect(try ClaimFailedReason(wire: wire).claimFailure == failure)
        wire.clearPresenterID()
        let reason = try ClaimFailedReason(wire: wire)
        #expect(reason == .presenterError(PresenterError(domain: "D", code: 1, message: "m"), presenter: nil))
        #expect(reason.claimFailure == nil)
    }

    @Test func theDaemonsOwnFailuresAreNoArbiterFailures() {
        // A deadlock is the arbiter's own failure (its detector lives in FCCore); shutdown and limits are the daemon's.
        #expect(ClaimFailedReason.deadlock("cycle").claimFailure == .deadlock("cycle"))
        #expect(ClaimFailedReason(.deadlock("cycle")) == .deadlock("cycle"))
        #expect(ClaimFailedReason.shuttingDown("SIGTERM").claimFailure == nil)
        #expect(ClaimFailedReason.limitExceeded("too many").claimFailure == nil)
        let wire = Filecoord_V1_ClaimFailed(claim: ClaimID(1), reason: .deadlock("claim#1 waits for claim#2"))
        #expect(wire.kind == .deadlock)
        #expect(wire.message == "claim#1 waits for claim#2")
    }

    @Test func aTimeoutTravelsInWholeMillisecondsRoundedUpAndCapped() throws {
        func wire(_ timeout: Duration) -> Filecoord_V1_RequestClaim {
            Filecoord_V1_RequestClaim(
                ClaimRequest(
                    id: ClaimID(1),
                    client: Samples.client,
                    coordinator: CoordinatorID(1),
                    purpose: PurposeID("p"),
                    items: [ClaimItem(path: path("/d/a"), access: .read([]))],
                    timeout: timeout
                )
            )
        }
        #expect(wire(.milliseconds(1_500)).timeoutMilliseconds == 1_500)
        #expect(wire(.microseconds(1)).timeoutMilliseconds == 1)  // Never ends early.
        #expect(wire(.zero).timeoutMilliseconds == 0 && wire(.zero).hasTimeoutMilliseconds)
        #expect(wire(.seconds(-3)).timeoutMilliseconds == 0)
        #expect(wire(.seconds(Int64.max)).timeoutMilliseconds == 1_000_000_000_000)
        var huge = wire(.seconds(1))
        huge.timeoutMilliseconds = .max
        let decoded = try ClaimRequest(wire: huge, client: Samples.client)
        #expect(decoded.timeout == .milliseconds(1_000_000_000_000))
        var none = wire(.seconds(1))
        none.clearTimeoutMilliseconds()
        #expect(try ClaimRequest(wire: none, client: Samples.client).timeout == nil)
    }

    @Test func theCallbackACallWasMadeInTravelsAsOneBitAndUnknownBitsAreIgnored() throws {
        func request(_ callback: PresenterCallbacks?) -> ClaimRequest {
            ClaimRequest(
                id: ClaimID(1),
                client: Samples.client,
                coordinator: CoordinatorID(1),
                purpose: PurposeID("p"),
                fromPresenterQueue: PresenterID(4),
                fromCallback: callback,
                items: [ClaimItem(path: path("/d/a"), access: .read([]))]
            )
        }
        let didChange = Filecoord_V1_RequestClaim(request(.presentedItemDidChange))
        #expect(didChange.fromCallback == PresenterCallbacks.presentedItemDidChange.rawValue)
        #expect(try ClaimRequest(wire: didChange, client: Samples.client).fromCallback == .presentedItemDidChange)
        // The reacquirer is the empty set, which is not the same as not saying.
        let reacquirer = Filecoord_V1_RequestClaim(request([]))
        #expect(reacquirer.hasFromCallback)
        #expect(try ClaimRequest(wire: reacquirer, client: Samples.client).fromCallback == [])
        let silent = Filecoord_V1_RequestClaim(request(nil))
        #expect(!silent.hasFromCallback)
        #expect(try ClaimRequest(wire: silent, client: Samples.client).fromCallback == nil)
        var future = didChange
        future.fromCallback |= 1 << 31
        #expect(try ClaimRequest(wire: future, client: Samples.client).fromCallback == .presentedItemDidChange)
    }

    @Test func aProtocolErrorFrameCarriesTheCodeAndReason() {
        let frame = Filecoord_V1_Frame(ProtocolError(.frameTooLarge, "a frame's length is 5000000 bytes"))
        #expect(frame.protocolError.reason == "frame too large: a frame's length is 5000000 bytes")
    }
}
