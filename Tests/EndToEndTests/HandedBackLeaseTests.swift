// A claim the daemon hands back into a lease the client does not hold (issue 23; docs/ARCHITECTURE.md §14). No real
// daemon can be brought to that disagreement now that leases are known by connection and id, so a daemon played by
// the test (`ScriptedDaemon`) makes it: the client must return the lease the daemon thinks it holds before it sends
// the claim again, or a daemon that still counts the lease as held would hand the claim back for ever.

import FCProtocol
import Foundation
import Testing

@Suite struct HandedBackLeaseTests {
    @Test("A claim handed back into a lease the client does not hold: the lease is returned, then the claim is sent")
    func aClaimHandedBackIntoAnUnknownLeaseReturnsTheLeaseFirst() async throws {
        try await TestEnvironment.run { env in
            let file = try env.file("doc.txt", "hello")
            try env.makeSocketFolder()
            let daemon = try ScriptedDaemon(path: env.socket)
            defer { daemon.stop() }
            let host = try await env.host("A", mayStartDaemon: false, environment: ["FILECOORD_LEASES": "1"])
            try host.send("read \(file)")

            guard case .requestClaim(let request)? = try await daemon.next().payload else {
                Issue.record("expected the read's RequestClaim; the client sent \(daemon.received)")
                return
            }
            // The client said it answers recalls (a daemon grants leases only then).
            let hellos = daemon.hellos
            #expect(hellos.last?.answersRecalls == true)
            var handBack = Filecoord_V1_ClaimInsideLease()
            handBack.claimID = request.claimID
            handBack.leaseID = 7
            try daemon.send(Filecoord_V1_Frame(.claimInsideLease(handBack)))

            // First the lease, with nothing running in it; then the same claim again.
            let returned = try await daemon.next()
            guard case .leaseReturned(let lease)? = returned.payload else {
                Issue.record("expected LeaseReturned before anything else, got \(String(describing: returned.payload))")
                return
            }
            #expect(lease.leaseID == 7)
            #expect(lease.running.isEmpty)
            guard case .requestClaim(let again)? = try await daemon.next().payload else {
                Issue.record("expected the claim sent again; the client sent \(daemon.received)")
                return
            }
            let paths: [Data] = request.items.map { $0.path }
            let pathsAgain: [Data] = again.items.map { $0.path }
            #expect(again.claimID == request.claimID)
            #expect(pathsAgain == paths)

            var granted = Filecoord_V1_Granted()
            granted.claimID = again.claimID
            granted.paths = pathsAgain
            try daemon.send(Filecoord_V1_Frame(.granted(granted)))
            _ = try await host.waitFor("done read \(file) hello")
            guard case .finishClaim(let finish)? = try await daemon.next().payload else {
                Issue.record("expected the read's FinishClaim; the client sent \(daemon.received)")
                return
            }
            #expect(finish.claimID == request.claimID)
        }
    }
}
