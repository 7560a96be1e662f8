// Leases and the daemon's path translations (issue 26 with issue 23): a lease is a subtree in the daemon's paths,
// which the holder's library compares with its own. A client whose paths the daemon translates (another mount
// namespace) gets none; before, a contained client with leases on had the daemon hand each claim back to a lease
// that could not take it, forever. The document portal's side of it is in DocumentPortalEndToEndTests.

import Foundation
import Testing

@Suite("Leases and clients whose paths the daemon translates (issue 26)")
struct TranslatedLeaseEndToEndTests {
    @Test(
        "A process in another mount namespace, with leases on, gets none and its claims go on",
        .enabled(if: MountNamespaces.shouldRun, "DID NOT RUN: mounts and a mount namespace of its own need root")
    )
    func aContainedClientWithLeasesOnGetsNone() async throws {
        try await TestEnvironment.run { env in
            try await MountNamespaces.withOwnFileSystem(env) { fs, docs, view in
                _ = try await env.startDaemon()
                let contained = try await env.host(
                    "C",
                    environment: LeaseEndToEndTests.leasing,
                    wrapper: MountNamespaces.bound(docs, at: view, hiding: fs)
                )
                let host = try await env.host("H")
                for round in 1...3 {
                    try contained.send("write \(view)/doc.txt r\(round)")
                    try await contained.waitFor("done write \(view)/doc.txt", count: round)
                }
                let json = try await env.runTool("fcdump", ["--json"])
                let dump = try #require(
                    try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
                )
                #expect((dump["leases"] as? [Any])?.isEmpty ?? true, "\(dump["leases"] ?? "")")
                try await contained.expectHeldWriteHoldsBack(
                    "\(view)/doc.txt",
                    "v2",
                    reader: host,
                    reading: "\(docs)/doc.txt",
                    "the host's read ran while the contained process wrote the file"
                )
            }
        }
    }
}
