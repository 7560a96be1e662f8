// A hung daemon is never a silent hang (issue 28): a call that waits on a daemon that stopped answering sends a
// keepalive, fails with a clear error when it stays unanswered, and the process works again once the daemon answers;
// a call queued behind a live holder keeps waiting, because the daemon answers the keepalive.

import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

@Suite struct KeepaliveTests {
    /// A keepalive timeout of 2 s: a Ping after 1 s of waiting in silence, the call failed 2 s later.
    private static let keepalive: [String: String?] = ["FILECOORD_KEEPALIVE_TIMEOUT": "2"]

    @Test(
        "A stopped daemon: a waiting read fails with arbiterUnreachable naming the cause; later calls work again",
        arguments: [false, true]
    )
    func aStoppedDaemonFailsTheWaitingCall(withPresenter: Bool) async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            defer { daemon.signal(SIGCONT) }
            let doc = try env.file("doc.txt", "text")
            // Without leases (issue 23): a holder of a lease on the folder would read doc.txt in process, with no
            // call waiting on the daemon, which is what this test is about.
            var environment = Self.keepalive
            environment["FILECOORD_LEASES"] = "0"
            let a = try await env.host("A", environment: environment)
            let b = try await env.host("B")
            // Connected first: with a presenter its listener reads (the caller parks), without one the caller reads.
            if withPresenter {
                try await a.present("P", env.file("presented.txt", "p"))
            } else {
                try await a.barrier()
            }
            try await daemon.stop()
            let sent = ContinuousClock.now
            try a.send("read \(doc)")
            let line = try await a.waitFor("failed read \(doc)", timeout: .seconds(20))
            let waited = line.time - sent
            let failure = try #require(FailedCall(line.text))
            #expect(failure.domain == "FileCoordinationErrorDomain" && failure.code == 1, "\(failure)")
            #expect(failure.message.contains("stopped answering"), "\(failure)")
            #expect(failure.message.contains("keepalive"), "\(failure)")
            #expect(waited >= .seconds(2) && waited < .seconds(10), "the read failed after \(waited)")
            // A version store call waiting on the stopped daemon fails the same way.
            try a.send("versions \(doc)")
            try await a.waitFor("versions \(doc) ", timeout: .seconds(20))
            #expect(a.standardError().contains("stopped answering"))

            daemon.signal(SIGCONT)
            try a.send("read \(doc)")
            try await a.waitFor("done read \(doc) text", timeout: .seconds(20))
            if withPresenter {
                try b.send("write \(env.path("presented.txt")) changed")
                try await b.waitFor("done write \(env.path("presented.txt"))")
                try await a.waitFor("presenter P relinquishToWriter")
            }
        }
    }

    @Test("A read queued behind a live writer keeps waiting past the keepalive's timeout: the daemon answers it")
    func aCallQueuedBehindALiveHolderKeepsWaiting() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "text")
            let a = try await env.host("A")
            let b = try await env.host("B", environment: Self.keepalive)
            try a.send("write \(doc) mine hold")
            try await a.waitFor("holding write \(doc)")
            try b.send("read \(doc)")
            // Three Pings (1 s of silence each, 2 s to answer) go and are answered meanwhile.
            #expect(try await b.staysWithout("failed read", for: .seconds(7)), "B gave up on a live daemon")
            #expect(try await b.staysWithout("done read", for: .zero), "B read while A wrote")
            try a.send("release")
            try await b.waitFor("done read \(doc) mine", timeout: .seconds(20))
        }
    }

    @Test("A presenter process stopped with SIGSTOP: a writer in another process proceeds after --presenter-timeout")
    func aStoppedPresenterProcessTimesOut() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon(presenterTimeout: "1")
            let doc = try env.file("doc.txt", "v1")
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("A", doc)
            try await stopProcess(a.pid)
            defer { kill(a.pid, SIGCONT) }
            let sent = ContinuousClock.now
            try b.send("write \(doc) v2")
            let done = try await b.waitFor("done write \(doc)", timeout: .seconds(20))
            #expect(done.time - sent >= .milliseconds(800), "B was granted before the presenter timed out")
            try await daemon.waitForLog("presenter did not answer in time")
        }
    }

    @Test("fcdump on a stopped daemon gives up after --timeout and names the likely cause")
    func fcdumpOnAStoppedDaemon() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            try await daemon.stop()
            defer { daemon.signal(SIGCONT) }
            let result = try await env.runTool("fcdump", ["--socket", env.socket, "--timeout", "1"])
            #expect(result.status != 0)
            #expect(result.error.contains("did not answer within 1 s"), "\(result.error)")
            #expect(result.error.contains("stopped"), "\(result.error)")
            daemon.signal(SIGCONT)
            let again = try await env.runTool("fcdump", ["--socket", env.socket, "--timeout", "5"])
            #expect(again.status == 0, "\(again.error)")
        }
    }
}
