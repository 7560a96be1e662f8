// The rules by which clients make canonical paths travel in `Hello.path_rules` (docs/PROTOCOL.md section 2): a daemon
// refuses a client whose keys could name one item otherwise than its other clients' (their claims would not meet),
// and accepts one that states none (the preload library, older clients).

import FCFileSystemPolicy
import FCProtocol
import FCSystem
import Foundation
import Testing

@Suite struct PathRulesTests {
    @Test("A client that states other path rules is refused, naming both; one that states none is accepted")
    func aClientOfOtherPathRulesIsRefused() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let other = try RawClient(socket: env.socket)
            var hello = Filecoord_V1_Hello(clientName: "other-rules", pid: ProcessIdentity.processID)
            hello.pathRules = PathRules.revision + 1
            try other.send(Filecoord_V1_Frame(.hello(hello)))
            let answer = try await other.nextFrame()?.payload
            guard case .refused(let refused)? = answer else {
                Issue.record("expected Refused, got \(String(describing: answer))")
                return
            }
            #expect(refused.reason.hasPrefix("path rules mismatch"), "\(refused.reason)")
            #expect(refused.reason.contains("revision \(PathRules.revision + 1)"), "\(refused.reason)")
            #expect(refused.reason.contains("newer"), "\(refused.reason)")
            #expect(try await other.waitForClose(timeout: .seconds(5)))

            // Stating none (the preload library) or the daemon's own: accepted.
            let unstated = try RawClient(socket: env.socket)
            try await unstated.handshake(name: "no-rules")
            let same = try RawClient(socket: env.socket)
            hello.pathRules = PathRules.revision
            try same.send(Filecoord_V1_Frame(.hello(hello)))
            let reply = try await same.nextFrame()?.payload
            guard case .helloReply? = reply else {
                Issue.record("expected HelloReply, got \(String(describing: reply))")
                return
            }
        }
    }

    @Test("The library states its path rules in its Hello")
    func theLibraryStatesItsPathRules() async throws {
        try await TestEnvironment.run { env in
            let file = try env.file("doc.txt", "hello")
            try env.makeSocketFolder()
            let daemon = try ScriptedDaemon(path: env.socket)
            defer { daemon.stop() }
            let host = try await env.host("A", mayStartDaemon: false)
            try host.send("read \(file)")
            guard case .requestClaim? = try await daemon.next().payload else {
                Issue.record("expected the read's RequestClaim; the client sent \(daemon.received)")
                return
            }
            let hellos = daemon.hellos
            #expect(!hellos.isEmpty && hellos.allSatisfy { $0.pathRules == PathRules.revision }, "\(hellos)")
        }
    }
}
