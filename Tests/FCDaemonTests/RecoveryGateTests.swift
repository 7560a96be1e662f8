import FCCore
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import FCDaemon

/// ``RecoveryGate``'s rule, on an `EmbeddedEventLoop` whose clock the test moves: until the grace ends, only claims
/// still held and leases given back pass; every other event is held back, and handed back in order when the grace
/// ends, after the marker that started it is removed.
@Suite struct RecoveryGateTests {
    private static func path(_ string: String) -> ItemPath {
        do { return try ItemPath(absolute: string) } catch { preconditionFailure("\(error)") }
    }

    private static func claim(_ id: UInt64, held: Bool) -> ArbiterEvent {
        var request = ClaimRequest(
            id: ClaimID(id),
            client: ClientID(1),
            coordinator: CoordinatorID(1),
            purpose: PurposeID("test"),
            items: [ClaimItem(path: path("/d/f"), access: .write([]))]
        )
        request.isHeld = held
        return .claimRequested(request)
    }

    private static func claimIDs(_ events: [(ClientID, ArbiterEvent)]) -> [UInt64] {
        events.compactMap { _, event in
            if case .claimRequested(let request) = event { return request.id.rawValue }
            return nil
        }
    }

    @Test func claimsAreHeldBackUntilTheGraceEndsThenHandedBackInOrder() {
        let loop = EmbeddedEventLoop()
        let gate = RecoveryGate(loop: loop, logger: Logger(label: "test"))
        #expect(!gate.holdsBack(Self.claim(1, held: false), from: ClientID(1)))  // No grace: nothing waits.

        var handedBack: [(ClientID, ArbiterEvent)]?
        gate.start(for: .seconds(10), because: "test", marker: nil) { handedBack = $0 }
        #expect(gate.isRecovering)
        #expect(gate.holdsBack(Self.claim(2, held: false), from: ClientID(1)))
        #expect(!gate.holdsBack(Self.claim(3, held: true), from: ClientID(1)))  // What recovery waits for.
        #expect(!gate.holdsBack(.leaseReturned(LeaseID(1), client: ClientID(1), running: []), from: ClientID(1)))
        #expect(gate.holdsBack(.presenterRemoved(PresenterID(1)), from: ClientID(2)))
        #expect(gate.holdsBack(Self.claim(4, held: false), from: ClientID(2)))

        loop.advanceTime(by: .seconds(9))
        #expect(handedBack == nil)
        #expect(gate.isRecovering)

        loop.advanceTime(by: .seconds(1))
        #expect(!gate.isRecovering)
        #expect(handedBack.map(Self.claimIDs) == [2, 4])
        #expect(handedBack?.map(\.0) == [ClientID(1), ClientID(2), ClientID(2)])
        #expect(!gate.holdsBack(Self.claim(5, held: false), from: ClientID(1)))
    }

    /// Stop 70: every event a client sent during the grace was kept, without bound. The gate counts about what each
    /// client's take (their paths' bytes), and forgets a client's when the host closes it.
    @Test func whatEachClientSentIsCountedAndForgottenWhenItIsClosed() {
        let loop = EmbeddedEventLoop()
        let gate = RecoveryGate(loop: loop, logger: Logger(label: "test"))
        var handedBack: [(ClientID, ArbiterEvent)]?
        gate.start(for: .seconds(10), because: "test", marker: nil) { handedBack = $0 }
        let component = String(repeating: "n", count: 200)
        let long = Self.path("/" + Array(repeating: component, count: 20).joined(separator: "/"))
        var sent = 0
        while gate.heldBackBytes(of: ClientID(1)) <= RecoveryGate.maximumHeldBackBytesPerClient {
            var request = ClaimRequest(
                id: ClaimID(UInt64(sent + 10)),
                client: ClientID(1),
                coordinator: CoordinatorID(1),
                purpose: PurposeID("test"),
                items: [ClaimItem(path: long, access: .write([]))]
            )
            request.isHeld = false
            #expect(gate.holdsBack(.claimRequested(request), from: ClientID(1)))
            sent += 1
        }
        // About the limit over a path's 4 KiB: each claim counted with its path, none for nothing.
        #expect(sent > RecoveryGate.maximumHeldBackBytesPerClient / 8_192)
        #expect(sent <= RecoveryGate.maximumHeldBackBytesPerClient / long.bytes.count + 1)
        #expect(gate.holdsBack(Self.claim(2, held: false), from: ClientID(2)))
        gate.forget(ClientID(1))
        #expect(gate.heldBackBytes(of: ClientID(1)) == 0)
        loop.advanceTime(by: .seconds(10))
        #expect(handedBack.map(Self.claimIDs) == [2])
    }

    @Test func theMarkerIsRemovedWhenTheGraceEnds() throws {
        let loop = EmbeddedEventLoop()
        let gate = RecoveryGate(loop: loop, logger: Logger(label: "test"))
        let marker = NSTemporaryDirectory() + "fc-recovery-marker-\(UUID().uuidString)"
        #expect(FileManager.default.createFile(atPath: marker, contents: Data()))
        var ended = false
        gate.start(for: .seconds(1), because: "test", marker: marker) { _ in ended = true }
        loop.advanceTime(by: .milliseconds(999))
        #expect(FileManager.default.fileExists(atPath: marker))  // A crash now leaves it to the next daemon.
        loop.advanceTime(by: .milliseconds(1))
        #expect(ended)
        #expect(!FileManager.default.fileExists(atPath: marker))
    }
}
