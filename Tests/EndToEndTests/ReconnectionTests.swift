import FCProtocol
import FCTestSupport
import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

// How a process reaches the arbiter when the daemon is starting, stopping, stopped or absent (docs/SEMANTICS.md §7, §9;
// issue 11): a failure that may pass is tried again and never turns into coordinating in process, which would grant
// what another process holds through the daemon; only a process with no daemon to start coordinates in process, says
// so, and moves to a daemon once one answers.

@Suite struct ReconnectionTests {
    static let fallbackWarning = "coordinating in this process only"

    @Test("A handshake the daemon resets is tried again, never coordinated in process")
    func resetHandshakeIsRetried() async throws {
        try await TestEnvironment.run { env in
            let file = try env.file("doc.txt", "text")
            try env.makeSocketFolder()
            // A "daemon" that accepts and drops every connection, as one that is starting or dying does.
            let dying = try ClosingListener(path: env.socket)
            let a = try await env.host("A", mayStartDaemon: false, environment: ["FILECOORD_CONNECT_TIMEOUT": "30"])
            try a.send("present P \(file)")
            _ = try await a.waitFor("presenting P")
            try a.send("write \(file) mine")
            // Before, the first reset made the process coordinate alone and this write was granted at once.
            #expect(try await a.staysWithout("done write", for: .milliseconds(600)))
            #expect(dying.acceptedCount > 1, "the handshake was tried again")

            // A daemon answers now: the write is made through it, and the presenter was registered there.
            dying.stop()
            _ = try await env.startDaemon()
            _ = try await a.waitFor("done write \(file)", timeout: .seconds(30))
            let b = try await env.host("B")
            try b.send("write \(file) theirs")
            _ = try await b.waitFor("done write \(file)")
            _ = try await a.waitFor("presenter P relinquishToWriter")
            #expect(!a.standardError().contains(Self.fallbackWarning), "\(a.standardError())")
        }
    }

    @Test("With no daemon to start: in process, said through the logger, and moved to a daemon once one answers")
    func noDaemonCoordinatesInProcessThenMoves() async throws {
        try await TestEnvironment.run { env in
            let file = try env.file("doc.txt", "text")
            let a = try await env.host("A", mayStartDaemon: false)
            try a.send("present P \(file)")
            _ = try await a.waitFor("presenting P")
            try a.send("write \(file) alone")
            _ = try await a.waitFor("done write \(file)")
            #expect(a.standardError().contains(Self.fallbackWarning))

            // Another process starts the daemon; A finds it and moves there (presenter and new claims).
            _ = try await env.startDaemon()
            try await eventually(timeout: .seconds(20), "A to move to the daemon: \(a.standardError())") {
                a.standardError().contains("filecoordd answers now")
            }
            try a.send("write \(file) held hold")
            _ = try await a.waitFor("holding write \(file)")
            let b = try await env.host("B")
            try b.send("write \(file) theirs")
            // B waits for A's write, which is now held through the daemon.
            #expect(try await b.staysWithout("granted write"))
            try a.send("release")
            _ = try await b.waitFor("done write \(file)")
            _ = try await a.waitFor("presenter P relinquishToWriter")
        }
    }

    @Test("A write held across a daemon crash still excludes: the next daemon takes no conflicting claim until it ends")
    func heldClaimSurvivesADaemonCrash() async throws {
        try await TestEnvironment.run { env in
            let file = try env.file("doc.txt", "text")
            let daemon = try await env.startDaemon()
            let a = try await env.host("A")
            try a.send("write \(file) mine hold")
            _ = try await a.waitFor("holding write \(file)")
            // The daemon dies while A's accessor runs; A reconnects at once (starting a new daemon) and declares its
            // write again. B's write must wait for it, past the new daemon's recovery grace (2 s).
            daemon.signal(SIGKILL)
            let b = try await env.host("B")
            try b.send("write \(file) theirs")
            #expect(try await b.staysWithout("granted write", for: .seconds(3)), "B was let in while A held the item")
            try a.send("release")
            _ = try await a.waitFor("done write \(file)")
            _ = try await b.waitFor("done write \(file)", timeout: .seconds(20))
        }
    }

    @Test("A stopped daemon: the call fails after the connect deadline with a clear error, and works once it resumes")
    func stoppedDaemonFailsTheCallClearly() async throws {
        try await TestEnvironment.run { env in
            let file = try env.file("doc.txt", "text")
            let daemon = try await env.startDaemon()
            try await daemon.stop()
            defer { daemon.signal(SIGCONT) }
            let a = try await env.host("A", environment: ["FILECOORD_CONNECT_TIMEOUT": "1"])
            try a.send("write \(file) mine")
            let line = try await a.waitFor("failed write \(file)", timeout: .seconds(20))
            let failure = try #require(FailedCall(line.text))
            #expect(failure.domain == "FileCoordinationErrorDomain")
            #expect(failure.code == 1)
            #expect(failure.message.contains("could not be reached"))
            #expect(failure.message.contains("did not answer the handshake"))
            #expect(!a.standardError().contains(Self.fallbackWarning))
            daemon.signal(SIGCONT)
            try a.send("write \(file) again")
            _ = try await a.waitFor("done write \(file)", timeout: .seconds(20))
        }
    }
}

// Bad input fails its own call only (issue 11.5).
@Suite struct LimitTests {
    /// A path of `length` bytes or more under `folder` (components of 200 bytes; none of them exists).
    static func longPath(under folder: String, length: Int) -> String {
        var path = folder
        while path.utf8.count < length { path += "/" + String(repeating: "x", count: 200) }
        return path
    }

    @Test("A path over the limit fails only its call, naming the limit; the process's waiting call goes on")
    func overLongPathFailsOnlyItsCall() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let file = try env.file("doc.txt", "text")
            let holder = try await env.host("H")
            try holder.send("write \(file) held hold")
            _ = try await holder.waitFor("holding write \(file)")
            let a = try await env.host("A")
            try a.send("write \(file) mine")
            #expect(try await a.staysWithout("granted write"))
            let long = Self.longPath(under: env.directory, length: 5000)
            try a.send("write \(long) x")
            let line = try await a.waitFor("failed write \(long)")
            let failure = try #require(FailedCall(line.text))
            #expect(failure.domain == "FileCoordinationErrorDomain" && failure.code == 8)
            #expect(failure.message.contains("4096"), "\(failure.message)")
            // The waiting write of the same process was not touched: it is granted once the holder lets go.
            try holder.send("release")
            _ = try await a.waitFor("done write \(file)")
        }
    }

    @Test("The daemon answers an over-long item with a claim failure, not a disconnect")
    func daemonFailsTheClaimNotTheConnection() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let raw = try RawClient(socket: env.socket)
            try await raw.handshake(name: "long-paths")
            func claim(_ id: UInt64, _ path: String) -> Filecoord_V1_Frame {
                WireFrames.writeClaim(id, path: path, purpose: "long-paths-\(id)")
            }
            try raw.send(claim(1, Self.longPath(under: env.directory, length: 5000)))
            let first = try #require(try await raw.nextFrame())
            guard case .claimFailed(let failed)? = first.payload else {
                Issue.record("expected ClaimFailed, got \(first)")
                return
            }
            #expect(failed.claimID == 1)
            #expect(failed.kind == .limitExceeded)
            #expect(failed.message.contains("4096"), "\(failed.message)")
            // The connection serves on.
            try raw.send(claim(2, env.path("short.txt")))
            let second = try #require(try await raw.nextFrame())
            guard case .granted(let granted)? = second.payload else {
                Issue.record("expected Granted, got \(second)")
                return
            }
            #expect(granted.claimID == 2)
        }
    }
}
