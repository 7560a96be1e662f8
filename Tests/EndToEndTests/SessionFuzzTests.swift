import FCCore
import FCProtocol
import FCTestSupport
import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// Whole sessions against a real daemon (issue 11): each session says hello, then sends a seeded mix of valid
/// frames (registrations, claims with random ids and paths, finishes, cancels, replies to requests that may not
/// exist) and corrupted ones (the seed frames of `Corpus/session-seeds.hex`, bit flipped, truncated, spliced, with
/// tampered lengths), and closes or is closed. Afterwards the daemon must still serve a real client, and hold no
/// claim and no presenter of the sessions. The frame decoder alone is fuzzed much harder by FCProtocolTests.
///
/// Environment: `FC_SESSION_FUZZ_SEED` (default a fixed seed) and `FC_SESSION_FUZZ_SESSIONS` (default 150); a failure
/// prints the seed to replay.
@Suite struct SessionFuzzTests {
    static let defaultSeed: UInt64 = 0x5E55_10F2_2000_0001

    /// The corpus: one frame a line, hex, as the daemon receives it (length prefix included). With
    /// `FC_SESSION_FUZZ_REGENERATE=1` it is written again from seeded valid frames (then commit it).
    static func corpus() throws -> [[UInt8]] {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Corpus/session-seeds.hex").path
        if ProcessInfo.processInfo.environment["FC_SESSION_FUZZ_REGENERATE"] == "1" {
            var rng = SplitMix64(seed: defaultSeed)
            var lines = ["# Seed frames of SessionFuzzTests: one frame a line, hex, length prefix included."]
            for _ in 0..<24 {
                let bytes = try FrameEncoder().encode(validFrame(&rng, folder: "/tmp/fc-fuzz"))
                lines.append(bytes.map { String(format: "%02x", $0) }.joined())
            }
            try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map { line in
            var bytes: [UInt8] = []
            var index = line.startIndex
            while index < line.endIndex, let end = line.index(index, offsetBy: 2, limitedBy: line.endIndex) {
                bytes.append(UInt8(line[index..<end], radix: 16) ?? 0)
                index = end
            }
            return bytes
        }
    }

    /// A valid frame of a random kind, with small random ids (so that some match live claims and presenters).
    static func validFrame(_ rng: inout SplitMix64, folder: String) -> Filecoord_V1_Frame {
        let id = UInt64(rng.within(1...8))
        let path = Data("\(folder)/item\(rng.below(4))".utf8)
        switch rng.below(7) {
        case 0:
            var register = Filecoord_V1_RegisterPresenter()
            register.presenterID = id
            register.path = path
            register.callbacks = UInt32(truncatingIfNeeded: rng.next()) & PresenterCallbacks.all.rawValue
            return Filecoord_V1_Frame(.registerPresenter(register))
        case 1:
            var item = Filecoord_V1_ClaimItem()
            item.path = path
            item.write = rng.below(2) == 0
            var request = Filecoord_V1_RequestClaim()
            request.claimID = id
            request.coordinatorID = UInt64(rng.within(1...3))
            request.purpose = "fuzz-\(rng.below(3))"
            request.items = [item]
            request.held = rng.below(8) == 0
            if rng.below(3) == 0 { request.filePresenterID = UInt64(rng.within(1...8)) }
            return Filecoord_V1_Frame(.requestClaim(request))
        case 2:
            return Filecoord_V1_Frame(.finishClaim(Filecoord_V1_FinishClaim(claim: ClaimID(id), created: [])))
        case 3:
            var cancel = Filecoord_V1_CancelClaim()
            cancel.claimID = id
            return Filecoord_V1_Frame(.cancelClaim(cancel))
        case 4:
            var unregister = Filecoord_V1_UnregisterPresenter()
            unregister.presenterID = id
            return Filecoord_V1_Frame(.unregisterPresenter(unregister))
        case 5:
            var reply = Filecoord_V1_PresenterReply()
            reply.requestID = UInt64(rng.within(1...64))
            reply.succeeded = Filecoord_V1_PresenterReply.Succeeded()
            return Filecoord_V1_Frame(.presenterReply(reply))
        default:
            var cancel = Filecoord_V1_CancelCoordinator()
            cancel.coordinatorID = UInt64(rng.within(1...3))
            return Filecoord_V1_Frame(.cancelCoordinator(cancel))
        }
    }

    /// One corrupted frame: a seed frame bit flipped, truncated, spliced with another, or with a tampered length.
    static func corrupted(_ seeds: [[UInt8]], _ rng: inout SplitMix64) -> [UInt8] {
        var bytes = seeds[rng.below(seeds.count)]
        switch rng.below(4) {
        case 0:
            for _ in 0..<rng.within(1...4) where !bytes.isEmpty {
                bytes[rng.below(bytes.count)] ^= UInt8(1 << rng.below(8))
            }
        case 1:
            bytes = Array(bytes.prefix(rng.below(max(bytes.count, 1))))
        case 2:
            let other = seeds[rng.below(seeds.count)]
            bytes = Array(bytes.prefix(rng.below(max(bytes.count, 1)))) + other.suffix(rng.below(max(other.count, 1)))
        default:
            if bytes.count >= 4 {
                let length = UInt32(truncatingIfNeeded: rng.next()) % 4096
                bytes[0] = UInt8(length >> 24)
                bytes[1] = UInt8((length >> 16) & 0xFF)
                bytes[2] = UInt8((length >> 8) & 0xFF)
                bytes[3] = UInt8(length & 0xFF)
            }
        }
        return bytes
    }

    @Test func theDaemonSurvivesRandomSessions() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["FC_SESSION_FUZZ_SEED"].flatMap { UInt64($0) } ?? Self.defaultSeed
        let sessions = environment["FC_SESSION_FUZZ_SESSIONS"].flatMap { Int($0) } ?? 150
        let seeds = try Self.corpus()
        #expect(seeds.count >= 8, "the corpus is in Tests/EndToEndTests/Corpus")
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon(presenterTimeout: "0.2")
            var rng = SplitMix64(seed: seed)
            let encoder = FrameEncoder()
            for _ in 0..<sessions {
                let raw = try RawClient(socket: env.socket)
                try await raw.handshake(name: "fuzz")
                var bytes: [UInt8] = []
                for _ in 0..<rng.within(1...12) {
                    if rng.below(5) == 0 {
                        bytes += Self.corrupted(seeds, &rng)
                    } else {
                        bytes += try encoder.encode(Self.validFrame(&rng, folder: env.directory))
                    }
                }
                try? raw.send(bytes)
                // Some sessions linger a moment (their claims and presenters live), the others close at once.
                if rng.below(3) == 0 { _ = try? await raw.nextFrame(timeout: .milliseconds(20)) }
            }
            // The daemon serves a real client, and nothing of the sessions is left once they are gone.
            let host = try await env.host("after")
            let file = try env.file("after.txt", "text")
            try host.send("write \(file) fine")
            _ = try await host.waitFor("done write \(file)")
            var left = "not read"
            for _ in 0..<100 {
                let json = try await env.runTool("fcdump", ["--json"])
                let object = try? JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
                let claims = (object?["claims"] as? [Any])?.count ?? -1
                let presenters = (object?["presenters"] as? [Any])?.count ?? -1
                left = "\(claims) claims and \(presenters) presenters"
                if claims == 0 && presenters == 0 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(left == "0 claims and 0 presenters", "left in the daemon after the sessions closed (seed \(seed))")
        }
    }
}
