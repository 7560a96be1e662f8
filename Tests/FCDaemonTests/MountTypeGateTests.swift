import FCCore
import FCFileSystemPolicy
import FCProtocol
import FCSystem
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import FCDaemon

/// A `fuseblk` mount's file system is read from its device (a boot sector), which a failing USB stick can take
/// seconds to give, or never: the daemon reads it off its loop while every client's events wait, in order, for at
/// most the configured time (``MountTypeGate``, ``ClientNameFolding``). Until stop 67 the loop read it itself.
@Suite struct MountTypeGateTests {
    typealias Mount = ClientNameFolding.FUSEMount

    /// A table with an ext4 root and, when `stick`, an exFAT stick through FUSE at /m.
    static func table(stick: Bool, second: Bool = false) -> MountTable {
        var text = "21 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
        if stick { text += "41 21 0:51 / /m rw - fuseblk /dev/loop0 rw\n" }
        if second { text += "42 21 0:52 / /n rw - fuseblk /dev/loop1 rw\n" }
        return MountTable(parsing: Array(text.utf8))
    }

    static func path(_ string: String) -> ItemPath {
        do { return try ItemPath(absolute: string) } catch { preconditionFailure("\(error)") }
    }

    /// What the test's mount table says, and whether the kernel would say it changed.
    final class Table: Sendable {
        private let state = Mutex((table: MountTypeGateTests.table(stick: false), changed: false))
        func set(_ table: MountTable) { state.withLock { $0 = (table, true) } }
        func read() -> MountTable? { state.withLock { $0.table } }
        func changed() -> Bool {
            state.withLock { state in
                defer { state.changed = false }
                return state.changed
            }
        }
    }

    @Test func theTableIsTakenOnceEveryFUSETypeIsReadAndTheRestWaitsForIt() throws {
        let table = Table()
        let folding = ClientNameFolding(table: { table.read() }, changed: { table.changed() })
        #expect(folding.refresh() == .changed([]))  // The first look: nothing to read, nothing folded.
        table.set(Self.table(stick: true))
        guard case .needsTypes(let mounts) = folding.refresh() else {
            Issue.record("a fuseblk mount of unknown type was taken")
            return
        }
        #expect(mounts.map(\.mountPoint) == ["/m"])
        #expect(folding.refresh() == .changed([]))  // Asked for: not again until recorded.
        #expect(folding.record([(mounts[0], "exfat")]) == .changed([Self.path("/m")]))
        let request = ArbiterEvent.claimRequested(
            ClaimRequest(
                id: ClaimID(1),
                client: ClientID(1),
                coordinator: CoordinatorID(1),
                purpose: PurposeID("p"),
                items: [ClaimItem(path: Self.path("/m/DOCS/A.TXT"), access: .write([]))]
            )
        )
        if case .claimRequested(let folded) = folding.inbound(request) {
            #expect(folded.items.map(\.path) == [Self.path("/m/docs/a.txt")])
        }
        // Kept by mount: another change of the table reads only the new mount's type.
        table.set(Self.table(stick: true, second: true))
        guard case .needsTypes(let more) = folding.refresh() else {
            Issue.record("the new mount was not asked for")
            return
        }
        #expect(more.map(\.mountPoint) == ["/n"])
        // Not answered in time: not folded, and not asked again while it stays mounted.
        #expect(folding.record([], unanswered: more) == .changed([Self.path("/n")]))
        table.set(Self.table(stick: true, second: true))
        #expect(folding.refresh() == .changed([]))
    }

    @Test func aTypeThatCouldNotBeToldIsAskedAgainOnceTheTableChanges() {
        let table = Table()
        let folding = ClientNameFolding(table: { table.read() }, changed: { table.changed() })
        #expect(folding.refresh() == .changed([]))
        table.set(Self.table(stick: true))
        guard case .needsTypes(let mounts) = folding.refresh() else {
            Issue.record("a fuseblk mount of unknown type was taken")
            return
        }
        #expect(folding.record([(mounts[0], nil)]) == .changed([Self.path("/m")]))
        #expect(folding.refresh() == .changed([]))
        // Another mount came or went (the one being let go that hid the device): asked again.
        table.set(Self.table(stick: true, second: true))
        guard case .needsTypes(let again) = folding.refresh() else {
            Issue.record("the untold mount was not asked again")
            return
        }
        #expect(Set(again.map(\.mountPoint)) == ["/m", "/n"])
    }

    /// The reads the gate asked for, run when the test says.
    final class Reads: Sendable {
        private let pending = Mutex<[@Sendable () -> Void]>([])
        var count: Int { pending.withLock { $0.count } }
        func ask(_ read: @escaping @Sendable () -> Void) { pending.withLock { $0.append(read) } }
        func runAll() {
            let reads = pending.withLock { pending in
                defer { pending = [] }
                return pending
            }
            for read in reads { read() }
        }
    }

    static func host(_ loop: EmbeddedEventLoop, table: Table, reads: Reads) -> ArbiterHost {
        EmbeddedHost.make(loop) { configuration in
            configuration.mountTable = { table.read() }
            configuration.mountTableChanged = { table.changed() }
            configuration.mountTypeReads = { reads.ask($0) }
            configuration.mountTypeReader = { $0.mountPoint == "/m" ? "exfat" : nil }
            configuration.mountTypeTimeout = .seconds(2)
        }
    }

    static func write(_ id: UInt64, _ path: String, by client: ClientID) -> ArbiterEvent {
        .claimRequested(
            ClaimRequest(
                id: ClaimID(id),
                client: client,
                coordinator: CoordinatorID(1),
                purpose: PurposeID("client \(client.rawValue)"),  // One purpose does not conflict with itself.
                items: [ClaimItem(path: Self.path(path), access: .write([]))]
            )
        )
    }

    @Test func everyClientsEventsWaitOffTheLoopForANewSticksTypeThenGoInOrder() throws {
        let loop = EmbeddedEventLoop()
        let (table, reads) = (Table(), Reads())
        let host = Self.host(loop, table: table, reads: reads)
        let (programChannel, swiftChannel) = (EmbeddedChannel(loop: loop), EmbeddedChannel(loop: loop))
        let program = host.accept(programChannel, pid: 1, name: "preload:tee", foldsNames: true)
        let swift = host.accept(swiftChannel, pid: 2, name: "swift")
        table.set(Self.table(stick: true))
        // The program's write of DOCS/A.TXT finds the stick: its type is asked for, not read on the loop.
        host.receive(Self.write(1, "/m/DOCS/A.TXT", by: program), from: program)
        // The Swift client's write of docs/a.txt (it folds itself) waits behind it, whatever it names.
        host.receive(Self.write(2, "/m/docs/a.txt", by: swift), from: swift)
        loop.run()
        #expect(reads.count == 1)
        #expect(try EmbeddedHost.grants(programChannel).isEmpty && EmbeddedHost.grants(swiftChannel).isEmpty)
        #expect(host.mountTypes.heldBack.count == 2)
        // The device answers (on the reads' thread; its answer goes to the loop).
        reads.runAll()
        loop.run()
        // The stick is exFAT: the program's write keys as docs/a.txt, granted first; the Swift client's waits for it.
        #expect(try EmbeddedHost.grants(programChannel) == [1])
        #expect(try EmbeddedHost.grants(swiftChannel).isEmpty)
        #expect(!host.mountTypes.isHolding)
        host.receive(.claimFinished(ClaimID(1), created: []), from: program)
        loop.run()
        #expect(try EmbeddedHost.grants(swiftChannel) == [2])
        _ = try programChannel.finish(acceptAlreadyClosed: true)
        _ = try swiftChannel.finish(acceptAlreadyClosed: true)
    }

    /// A host whose table gains a stick at /m, and a program under the preload whose write of `/m/DOCS/A.TXT`
    /// (claim 1) waits for the stick's type: the read is asked, nothing granted yet.
    static func programWaitingForAStick(
        _ loop: EmbeddedEventLoop
    ) -> (
        host: ArbiterHost, table: Table, reads: Reads, channel: EmbeddedChannel
    ) {
        let (table, reads) = (Table(), Reads())
        let host = Self.host(loop, table: table, reads: reads)
        let channel = EmbeddedChannel(loop: loop)
        let program = host.accept(channel, pid: 1, name: "preload:tee", foldsNames: true)
        table.set(Self.table(stick: true))
        host.receive(Self.write(1, "/m/DOCS/A.TXT", by: program), from: program)
        loop.run()
        return (host, table, reads, channel)
    }

    @Test func aDeviceThatDoesNotAnswerHoldsTheEventsForTheTimeoutOnly() throws {
        let loop = EmbeddedEventLoop()
        let (host, _, reads, programChannel) = Self.programWaitingForAStick(loop)
        let program = try #require(host.connections.all.keys.first)
        #expect(try EmbeddedHost.grants(programChannel).isEmpty)
        loop.advanceTime(by: .milliseconds(1_999))
        #expect(try EmbeddedHost.grants(programChannel).isEmpty)
        loop.advanceTime(by: .milliseconds(1))
        // Given up: the write goes in, its names not folded; the answer that comes late changes nothing.
        #expect(try EmbeddedHost.grants(programChannel) == [1])
        reads.runAll()
        loop.run()
        #expect(!host.mountTypes.isHolding)
        host.receive(Self.write(2, "/m/DOCS/B.TXT", by: program), from: program)
        loop.run()
        #expect(reads.count == 0)  // Not asked again while it stays mounted.
        #expect(try EmbeddedHost.grants(programChannel) == [2])
        _ = try programChannel.finish(acceptAlreadyClosed: true)
    }

    /// The daemon shuts down while claims wait for a stick's type: they fail as every waiting claim does, with the
    /// reason, instead of going with the connection.
    @Test func claimsHeldForATypeFailAtShutDown() throws {
        let loop = EmbeddedEventLoop()
        let (host, _, _, programChannel) = Self.programWaitingForAStick(loop)
        host.shutDown()
        loop.run()
        let failed = try EmbeddedHost.frames(programChannel).compactMap { frame -> UInt64? in
            if case .claimFailed(let failure)? = frame.payload, failure.kind == .shuttingDown { return failure.claimID }
            return nil
        }
        #expect(failed == [1])
        #expect(!host.mountTypes.isHolding)
    }

    /// A mount made while the events wait needs its own read: the hold still ends 2 s after it began. Until stop 67
    /// each read had its own 2 s, so a table that kept changing held every client for as long as it did (found by a
    /// read-only review).
    @Test func readsChainedInOneHoldShareItsTime() throws {
        let loop = EmbeddedEventLoop()
        let (_, table, reads, programChannel) = Self.programWaitingForAStick(loop)
        loop.advanceTime(by: .milliseconds(1_500))
        // A second stick comes before the first answers: its type is read next, in the same hold.
        table.set(Self.table(stick: true, second: true))
        reads.runAll()
        loop.run()
        #expect(reads.count == 1)
        #expect(try EmbeddedHost.grants(programChannel).isEmpty)
        loop.advanceTime(by: .milliseconds(500))
        #expect(try EmbeddedHost.grants(programChannel) == [1], "the hold outlived its 2 s")
        _ = try programChannel.finish(acceptAlreadyClosed: true)
    }

    /// A process the previous daemon handed on declares its held claims again, then pings `held_declared`: the ping
    /// is taken after the held claims, which wait for a new mount's type. Until stop 67 it overtook them: the
    /// stand-in went, and the write that waited behind it was granted before the held claim came back, beside it.
    @Test func aDeclarationWaitsForTheHeldClaimsSentBeforeIt() throws {
        let loop = EmbeddedEventLoop()
        let (table, reads) = (Table(), Reads())
        let host = Self.host(loop, table: table, reads: reads)
        let me = try EmbeddedHost.handOnWrite(of: Self.path("/m/doc"), to: host)
        let (programChannel, otherChannel) = (EmbeddedChannel(loop: loop), EmbeddedChannel(loop: loop))
        let program = host.accept(programChannel, pid: me, name: "preload:holder", foldsNames: true)
        let other = host.accept(otherChannel, pid: 2, name: "other")
        // Another process's write waits behind the stand-in (the table has no stick yet: nothing to read).
        host.receive(Self.write(1, "/m/doc", by: other), from: other)
        loop.run()
        #expect(try EmbeddedHost.grants(otherChannel).isEmpty)
        // A stick appears; the process declares its write again (held: it runs), and its ping says it declared all.
        table.set(Self.table(stick: true))
        var held = ClaimRequest(
            id: ClaimID(7),
            client: program,
            coordinator: CoordinatorID(1),
            purpose: PurposeID("client \(program.rawValue)"),
            items: [ClaimItem(path: Self.path("/m/doc"), access: .write([]))]
        )
        held.isHeld = true
        host.receive(.claimRequested(held), from: program)
        host.heldDeclared(by: me, from: program)
        loop.run()
        #expect(try EmbeddedHost.grants(otherChannel).isEmpty, "granted while the held claim waited to be taken")
        reads.runAll()
        loop.run()
        loop.advanceTime(by: .milliseconds(10))
        // The held claim is back; the stand-in went after it: the other write still waits, for the held one.
        #expect(!host.handover.holdsStandIns, "the declaration was never taken")
        #expect(try EmbeddedHost.grants(otherChannel).isEmpty, "granted beside the held claim")
        _ = try programChannel.finish(acceptAlreadyClosed: true)
        _ = try otherChannel.finish(acceptAlreadyClosed: true)
    }
}
