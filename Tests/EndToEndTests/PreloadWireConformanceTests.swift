import FCCore
import FCProtocol
import Foundation
import Testing

// Issue 42: the preload library (C, protobuf-c) and the Swift code agree on the wire by test, not by hand. The
// library's own client code (Languages/preload/conformance/preload-wire.c runs it against a socket of its own) reads
// replies the Swift code encoded, and what it sends is decoded by the Swift code and compared, byte for byte, with
// the Swift encoding of the same messages: Hello, RequestClaim (one and two items, write options, a read of a
// non-ASCII name, the purpose and the timeout from the environment, a longest hold), ItemMoved and FinishClaim; and a
// lease kept with counters (LeaseGranted and ClaimInsideLease read, LeaseCounterIdle sent once the recalled count is 0
// again: docs/PROTOCOL.md section 10.1).

@Suite struct PreloadWireConformanceTests {
    static func item(_ path: String, _ access: Access) throws -> ClaimItem {
        ClaimItem(path: try ItemPath(absolute: path), access: access)
    }

    /// The Swift encoding of a claim the library asks for.
    static func claim(_ id: UInt64, _ items: [ClaimItem], maximumHold: Duration? = nil) -> Filecoord_V1_Frame {
        var request = ClaimRequest(
            id: ClaimID(id),
            client: ClientID(1),
            coordinator: CoordinatorID(1),
            purpose: PurposeID("conformance purpose"),
            items: items,
            timeout: .milliseconds(1_234)
        )
        request.maximumHold = maximumHold
        return Filecoord_V1_Frame(claim: request)
    }

    /// The Swift encoding of the library's word that a recalled lease's count is 0 again.
    static func leaseCounterIdle(slot: UInt32) -> Filecoord_V1_Frame {
        var idle = Filecoord_V1_LeaseCounterIdle()
        idle.slot = slot
        return Filecoord_V1_Frame(.leaseCounterIdle(idle))
    }

    @Test("The preload's frames are the Swift code's, byte for byte, and it reads the Swift code's replies as meant")
    func preloadAndSwiftAgreeOnTheWire() async throws {
        try await TestEnvironment.run { env in
            let program = env.path("preload-wire")
            let preload = PreloadLibrary.repositoryRoot + "/Languages/preload"
            let sources = ["claims", "client", "connection", "descriptors", "frames", "leases", "paths", "real"].map {
                "\(preload)/src/\($0).c"
            }
            let flags = try await env.runProgram(["pkg-config", "--cflags", "libprotobuf-c"], preloaded: false)
            try await env.setUp(
                ["cc", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-pthread", "-o", program]
                    + flags.output.split(whereSeparator: \.isWhitespace).map(String.init)
                    + ["\(preload)/conformance/preload-wire.c"] + sources
                    + ["\(preload)/generated/filecoord.pb-c.c", "-lprotobuf-c", "-ldl"]
            )
            // The daemon's replies, encoded by the Swift code, with fields the library does not read (paths,
            // limits, a failure's message).
            var replies: [UInt8] = []
            let encoder = FrameEncoder()
            try encoder.encode(
                Filecoord_V1_Frame(
                    .helloReply(Filecoord_V1_HelloReply(version: 1, daemonPID: 99, limits: ProtocolLimits.default))
                ),
                into: &replies
            )
            var first = Filecoord_V1_Granted()
            first.claimID = 1
            first.paths = [Data("/d/a.txt".utf8)]
            var timedOut = Filecoord_V1_ClaimFailed()
            timedOut.claimID = 2
            timedOut.kind = .timedOut
            timedOut.message = "claim#2 was not granted within its timeout of 1.234 s"
            var third = Filecoord_V1_Granted()
            third.claimID = 3
            // The fourth claim is answered with a lease on /d (its counter: word 3 of a file in the daemon's folder,
            // generation 5) and the claim handed back into it (docs/PROTOCOL.md section 10.1).
            let folder = env.path("wire")
            try FileManager.default.createDirectory(
                atPath: folder + "/lease-counters",
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
            let counters = URL(fileURLWithPath: folder).resolvingSymlinksInPath().path + "/lease-counters/1-1"
            try Data(count: 4096).write(to: URL(fileURLWithPath: counters))
            var lease = Filecoord_V1_LeaseGranted()
            lease.leaseID = 1
            lease.subtree = Data("/d".utf8)
            lease.countersFile = Data(counters.utf8)
            lease.counterSlot = 3
            lease.counterGeneration = 5
            var handedBack = Filecoord_V1_ClaimInsideLease()
            handedBack.claimID = 4
            handedBack.leaseID = 1
            for reply in [
                Filecoord_V1_Frame(.granted(first)), .init(.claimFailed(timedOut)), .init(.granted(third)),
                .init(.leaseGranted(lease)), .init(.claimInsideLease(handedBack)),
            ] {
                try encoder.encode(reply, into: &replies)
            }
            let repliesPath = env.path("replies.bin")
            try Data(replies).write(to: URL(fileURLWithPath: repliesPath))
            let sentPath = env.path("sent.bin")
            let running = try env.startProgram(
                [program, repliesPath, sentPath, counters],
                preloaded: false,
                environment: [
                    "FILECOORDD_SOCKET": folder + "/socket", "FILECOORD_PURPOSE": "conformance purpose",
                    "FILECOORD_PRELOAD_TIMEOUT_MS": "1234",
                ]
            )
            #expect(try await running.waitForExit() == 0, "\(running.error)")
            // The library read each reply as the Swift code meant it: granted, timed out, granted.
            #expect(running.output == "claims 1 0 3\nleased 1 1 idle 1\n", "\(running.output) \(running.error)")

            let sent = try [UInt8](Data(contentsOf: URL(fileURLWithPath: sentPath)))
            var decoder = FrameDecoder()
            let frames = try decoder.feed(sent)
            #expect(decoder.bufferedByteCount == 0)
            let pid = running.process.processIdentifier
            // The library keeps lease counters (docs/PROTOCOL.md section 10.1), held at most its own timeout, and
            // leaves the case folding of its names to the daemon (section 2).
            var hello = Filecoord_V1_Hello(clientName: "preload:preload-wire", pid: pid)
            hello.leaseCounters.maximumHoldMilliseconds = 1_234
            hello.daemonFoldsNames = true
            let expected: [Filecoord_V1_Frame] = [
                Filecoord_V1_Frame(.hello(hello)),
                Self.claim(1, [try Self.item("/d/a.txt", .write([.forMerging]))], maximumHold: .seconds(5)),
                Self.claim(
                    2,
                    [try Self.item("/d/b.txt", .write([.forMoving])), try Self.item("/d/c.txt", .write([]))]
                ),
                Filecoord_V1_Frame(
                    ClientMessage.itemMoved(
                        ClaimID(1),
                        from: try ItemPath(absolute: "/d/a.txt"),
                        to: try ItemPath(absolute: "/d/e.txt"),
                        fromName: nil
                    )
                ),
                Filecoord_V1_Frame(ClientMessage.finishClaim(ClaimID(1), created: [])),
                Self.claim(3, [try Self.item("/d/\u{E9}t\u{E9}.txt", .read([]))]),
                Filecoord_V1_Frame(ClientMessage.finishClaim(ClaimID(3), created: [])),
                Self.claim(4, [try Self.item("/d/f.txt", .write([]))]),
                Self.leaseCounterIdle(slot: 3),
            ]
            #expect(frames.map { $0.payload?.messageName } == expected.map { $0.payload?.messageName })
            for (got, want) in zip(frames, expected) {
                #expect(got == want, "the preload sent \(got), the Swift code encodes \(want)")
            }
            var expectedBytes: [UInt8] = []
            for frame in expected { try encoder.encode(frame, into: &expectedBytes) }
            #expect(sent == expectedBytes, "the same messages, encoded differently")
            // And the daemon takes each claim as the Swift client's: the same request, item for item.
            for frame in frames {
                guard case .requestClaim(let wire) = frame.payload else { continue }
                let request = try ClaimRequest(wire: wire, client: ClientID(1))
                #expect(request.purpose == PurposeID("conformance purpose"))
                #expect(request.timeout == .milliseconds(1_234))
            }
        }
    }
}
