// An add by moving that a crash cuts short gives the caller's contents back: until then the staging or the
// uncommitted `contents/<id>` that held them was removed by the next repair, and the file the caller handed over was
// gone although no version was ever acknowledged.

import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

@Suite struct VersionByMovingCrashTests {
    struct Case: Sendable, CustomTestStringConvertible {
        /// Where the add stops: `staged` (moved into staging) or `renamed` (in `contents/`, row not committed).
        var point: String
        /// `daemon` or `in-process`: which process adds, and is killed.
        var arbiter: String
        /// Whether another file takes the contents' old place before the repair.
        var placeTaken: Bool

        var testDescription: String { "\(point), \(arbiter)\(placeTaken ? ", its place taken" : "")" }
    }

    @Test(
        "kill -9 of an add by moving after the move: the next repair puts the contents back (or in recovered/)",
        arguments: [
            Case(point: "staged", arbiter: "daemon", placeTaken: false),
            Case(point: "renamed", arbiter: "daemon", placeTaken: false),
            Case(point: "staged", arbiter: "in-process", placeTaken: false),
            Case(point: "renamed", arbiter: "in-process", placeTaken: true),
        ]
    )
    func theCallersContentsSurviveAKilledAddByMoving(_ test: Case) async throws {
        try await TestEnvironment.run { env in
            let store = env.path("versions")
            let doc = try env.file("doc.txt", "the document")
            let prepared = try env.file("prepared.txt", "the prepared contents")
            let fault = ["FILECOORD_VERSIONS_DIR": store, "FILECOORD_VERSION_STORE_FAULT": test.point]
            let adder: HostProcess
            if test.arbiter == "daemon" {
                _ = try await env.startDaemon(arguments: ["--versions-directory", store], environment: fault)
                adder = try await env.host("adder", environment: ["FILECOORD_VERSIONS_DIR": store])
            } else {
                var variables: [String: String?] = ["FILECOORD_ARBITER": "in-process"]
                for (key, value) in fault { variables[key] = value }
                adder = try await env.host("adder", environment: variables)
            }
            try adder.send("add-version \(doc) moving \(prepared)")
            try await eventually(timeout: .seconds(30), "the add to stop at \(test.point)") {
                FileManager.default.fileExists(atPath: store + "/fault-\(test.point)")
            }
            #expect(!FileManager.default.fileExists(atPath: prepared), "the add moved the contents into the store")
            let paused = try #require(test.arbiter == "daemon" ? env.lockedDaemonPID() : adder.pid)
            // The adder goes first, so that no reconnect of its own asks a new daemon to add again.
            _ = try await adder.kill9()
            if test.arbiter == "daemon" { kill(paused, SIGKILL) }
            if test.arbiter == "daemon" {
                try await eventually("the killed daemon to let go of its lock") {
                    let lock = open(env.socket + ".lock", O_RDWR)
                    defer { close(lock) }
                    return lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0
                }
            }
            try FileManager.default.removeItem(atPath: store + "/fault-\(test.point)")
            if test.placeTaken { try writeText("written there since", toFile: prepared) }

            // A fresh process opens the store, and its repair runs first.
            let fresh = try await env.host(
                "fresh",
                environment: ["FILECOORD_VERSIONS_DIR": store, "FILECOORD_ARBITER": "in-process"]
            )
            try fresh.send("versions \(doc)")
            let listing = try await fresh.waitFor("versions \(doc) ", timeout: .seconds(30)).text
            #expect(listing.split(separator: " ").count == 2, "no version was added: \(listing)")
            let manager = FileManager.default
            if test.placeTaken {
                #expect(try String(contentsOfFile: prepared, encoding: .utf8) == "written there since")
                let recovered = try manager.contentsOfDirectory(atPath: store + "/recovered")
                #expect(recovered.count == 1, "one folder of recovered contents: \(recovered)")
                let kept = store + "/recovered/" + (recovered.first ?? "") + "/doc.txt"
                #expect(try String(contentsOfFile: kept, encoding: .utf8) == "the prepared contents")
            } else {
                #expect(
                    try String(contentsOfFile: prepared, encoding: .utf8) == "the prepared contents",
                    "the contents are back where the caller had them"
                )
                #expect(!manager.fileExists(atPath: store + "/recovered"))
            }
            #expect(try manager.contentsOfDirectory(atPath: store + "/contents").isEmpty, "no version, no contents")
            #expect(try manager.contentsOfDirectory(atPath: store + "/staging").isEmpty, "no staging, no record")
        }
    }
}
