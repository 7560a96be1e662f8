import FCCore
import FCProtocol
import Foundation
import SwiftProtobuf
import Testing

/// The hello handshake's version rule.
@Suite struct ProtocolVersionTests {
    @Test func theCurrentVersionIsAccepted() {
        let hello = Filecoord_V1_Hello(clientName: "TextEdit", pid: 10)
        #expect(hello.protocolVersion == ProtocolVersion.current)
        #expect(ProtocolVersion.current == 1)
        #expect(ProtocolVersion.check(hello) == .accept(version: 1))
    }

    @Test(arguments: [UInt32(2), 7, UInt32.max])
    func aNewerClientIsRefusedNamingBothVersions(_ version: UInt32) throws {
        var hello = Filecoord_V1_Hello(clientName: "TextEdit", pid: 10)
        hello.protocolVersion = version
        guard case .refuse(let refused) = ProtocolVersion.check(hello) else {
            Issue.record("version \(version) accepted")
            return
        }
        #expect(refused.daemonProtocolVersion == 1)
        #expect(refused.reason.contains("client \"TextEdit\" (pid 10) speaks protocol version \(version)"))
        #expect(refused.reason.contains("filecoordd speaks protocol version 1"))
        #expect(refused.reason.contains("newer"))
    }

    @Test func anOlderClientIsRefusedByANewerDaemon() throws {
        let hello = Filecoord_V1_Hello(clientName: "old", pid: 1)
        let verdict = ProtocolVersion.check(hello, supported: 2...3, daemonVersion: 3)
        guard case .refuse(let refused) = verdict else {
            Issue.record("accepted: \(verdict)")
            return
        }
        #expect(refused.daemonProtocolVersion == 3)
        #expect(refused.reason.contains("speaks protocol version 1"))
        #expect(refused.reason.contains("filecoordd speaks protocol version 3 (accepts versions 2 to 3)"))
        #expect(refused.reason.contains("older"))
    }

    @Test func aHelloWithoutAVersionIsRefused() {
        var hello = Filecoord_V1_Hello()
        hello.clientName = "nc"
        guard case .refuse(let refused) = ProtocolVersion.check(hello) else {
            Issue.record("version 0 accepted")
            return
        }
        #expect(refused.reason.contains("speaks protocol version 0"))
        #expect(refused.reason.contains("no protocol version"))
    }

    @Test func aClientOfOtherPathRulesIsRefusedAndOneThatStatesNoneIsAccepted() throws {
        var hello = Filecoord_V1_Hello(clientName: "TextEdit", pid: 10)
        #expect(ProtocolVersion.check(hello, pathRules: 3) == .accept(version: 1))  // None stated.
        hello.pathRules = 3
        #expect(ProtocolVersion.check(hello, pathRules: 3) == .accept(version: 1))
        #expect(ProtocolVersion.check(hello) == .accept(version: 1))  // Not checked.
        for (rules, advice) in [(UInt32(2), "older"), (4, "newer")] {
            hello.pathRules = rules
            guard case .refuse(let refused) = ProtocolVersion.check(hello, pathRules: 3) else {
                Issue.record("path rules \(rules) accepted by a daemon of 3")
                continue
            }
            #expect(refused.daemonProtocolVersion == 1)
            let client = "client \"TextEdit\" (pid 10) makes canonical paths by rules revision \(rules)"
            #expect(refused.reason.contains(client))
            #expect(refused.reason.contains("filecoordd by revision 3"))
            #expect(refused.reason.contains(advice))
        }
    }

    @Test func aDaemonThatSupportsARangeAcceptsEveryVersionInIt() {
        for version: UInt32 in 2...4 {
            var hello = Filecoord_V1_Hello()
            hello.protocolVersion = version
            #expect(ProtocolVersion.check(hello, supported: 2...4, daemonVersion: 4) == .accept(version: version))
        }
    }
}

/// Issue 23: leases are revision 3, and a client says in `Hello` whether it answers recalls.
@Suite struct LeaseProtocolTests {
    @Test func leasesAreRevisionThreeAndAHelloSaysWhetherTheClientAnswersRecalls() throws {
        #expect(ProtocolVersion.leasesRevision == 3)
        #expect(ProtocolVersion.revision >= ProtocolVersion.leasesRevision)
        #expect(!Filecoord_V1_Hello(clientName: "c", pid: 1).answersRecalls)
        let hello = Filecoord_V1_Hello(clientName: "c", pid: 1, answersRecalls: true)
        let decoded = try Filecoord_V1_Hello(serializedBytes: try hello.serializedBytes() as Data)
        #expect(decoded.answersRecalls)
    }

    @Test func aLeaseGrantAndRecallBecomeFramesAndTheDaemonsOwnEffectsDoNot() throws {
        let grant = try #require(
            Filecoord_V1_Frame(ArbiterEffect.grantLease(LeaseID(9), client: ClientID(1), subtree: path("/d")))
        )
        guard case .leaseGranted(let message)? = grant.payload else {
            Issue.record("not a LeaseGranted: \(grant)")
            return
        }
        #expect(message.leaseID == 9 && message.subtree == bytes("/d"))
        let recall = try #require(Filecoord_V1_Frame(ArbiterEffect.recallLease(LeaseID(9), client: ClientID(1))))
        #expect(recall.payload == .leaseRecalled(.with { $0.leaseID = 9 }))
        #expect(Filecoord_V1_Frame(ArbiterEffect.leaseDropped(LeaseID(9), client: ClientID(1))) == nil)
    }

    @Test func aReturnDeclaringMoreClaimsThanTheLimitIsRefused() {
        var message = Filecoord_V1_LeaseReturned()
        message.leaseID = 1
        message.running = Array(repeating: Filecoord_V1_RequestClaim(), count: 3)
        let limits = ProtocolLimits(maximumClaimsPerClient: 2)
        let error = #expect(throws: ProtocolError.self) {
            try ArbiterEvent(wire: Filecoord_V1_Frame(.leaseReturned(message)), client: ClientID(1), limits: limits)
        }
        #expect(error?.code == .limitExceeded)
    }
}
