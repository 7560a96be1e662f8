import FCCore
import FCDumpModel
import FCProtocol
import FCSystem
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import FCDaemon

/// What a stopped daemon's holders held is let go (a holder declared it, or exited) by a task of the loop's own, not
/// an arbiter timer: it may grant what waited behind it, so a host past its cluster fence fences first. Until stop 67
/// nothing checked the fence there: a daemon stopped or suspended past its fence granted in a shared folder before it
/// fenced (found by a read-only review).
@Suite struct HandoverFenceTests {
    /// A cluster adapter whose fence has passed once the test says so: its check holds the folder back, as
    /// FCCluster's `ClusterHost` does at its fence.
    final class FencedAdapter: ClusterAdapter {
        let gates: ClusterGates
        let folder: ItemPath
        var pastFence = false
        private(set) var fenced = false

        init(gates: ClusterGates, folder: ItemPath) {
            self.gates = gates
            self.folder = folder
        }

        func start() {
            gates.command(folder, .close)
            gates.command(folder, .open(revision: 1))
        }
        func claimWaits(in folder: ItemPath) {}
        func drained(_ folder: ItemPath) {}
        func checkFence() {
            guard pastFence, !fenced else { return }
            fenced = true
            gates.command(folder, .close)
        }
        func stop(revoking: Bool) -> @Sendable () async -> Void { {} }
        func dump() -> DaemonDump.Cluster {
            DaemonDump.Cluster(
                host: "test",
                endpoints: [],
                session: "test",
                sessionLease: nil,
                ttlSeconds: nil,
                lastError: nil,
                folders: []
            )
        }
        func presentersChanged(_ changes: [SessionRouter.PresenterChange]) {}
        func deliver(_ effects: [ArbiterEffect], toRemote client: ClientID) {}
        func relayReplied(_ request: RequestID, _ reply: PresenterReply?) {}
    }

    static func path(_ string: String) -> ItemPath {
        do { return try ItemPath(absolute: string) } catch { preconditionFailure("\(error)") }
    }

    @Test func aHolderThatDeclaresPastTheFenceLetsNothingInBeforeTheHostFences() throws {
        let loop = EmbeddedEventLoop()
        let host = EmbeddedHost.make(loop)
        let adapter = FencedAdapter(gates: ClusterGates(host: host), folder: Self.path("/share"))
        host.cluster = adapter
        adapter.start()
        // This test's process held a write of /share/doc when the previous daemon stopped: a stand-in holds it.
        let me = try EmbeddedHost.handOnWrite(of: Self.path("/share/doc"), to: host)
        // Another process's read waits behind it.
        let channel = EmbeddedChannel(loop: loop)
        let reader = host.accept(channel, pid: 2, name: "reader")
        host.receive(
            .claimRequested(
                ClaimRequest(
                    id: ClaimID(1),
                    client: reader,
                    coordinator: CoordinatorID(1),
                    purpose: PurposeID("reader"),
                    items: [ClaimItem(path: Self.path("/share/doc"), access: .read([]))]
                )
            ),
            from: reader
        )
        loop.run()
        #expect(try EmbeddedHost.grants(channel).isEmpty)
        // The host's fence passes (stopped, suspended); the holder declares: the host fences before anything goes in.
        adapter.pastFence = true
        host.heldDeclared(by: me, from: reader)
        loop.run()
        #expect(adapter.fenced)
        #expect(try EmbeddedHost.grants(channel).isEmpty, "granted in a shared folder past the host's fence")
        _ = try channel.finish(acceptAlreadyClosed: true)
    }
}
