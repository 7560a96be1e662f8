// Leases across real processes (issue 23; docs/SEMANTICS.md §13): a process alone in a folder decides its claims
// there itself; another process's claim recalls the lease and waits for the holder's running claims; a killed
// holder frees the folder at once; a stopped holder is reported and still holds back what conflicts with it.
// The library takes leases unless FILECOORD_LEASES=0; the hosts here say FILECOORD_LEASES=1 all the same, and keep
// an unused lease for a minute (FILECOORD_LEASE_IDLE_RETURN) unless a test is about the idle return.

import FCCore
import FCProtocol
import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

@Suite(.timeLimit(.minutes(1)))
struct LeaseEndToEndTests {
    static let leasing: [String: String?] = ["FILECOORD_LEASES": "1", "FILECOORD_LEASE_IDLE_RETURN": "60"]
    /// A holder that returns a lease once it has not used it for `seconds` to twice that.
    static func leasing(returningIdleAfter seconds: String) -> [String: String?] {
        ["FILECOORD_LEASES": "1", "FILECOORD_LEASE_IDLE_RETURN": seconds]
    }

    /// The daemon's state as `fcdump --json` gives it.
    private func dump(_ env: TestEnvironment) async throws -> [String: Any] {
        let json = try await env.runTool("fcdump", ["--json"])
        #expect(json.status == 0, "fcdump --json failed: \(json.error)")
        return try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
    }

    private func leases(_ env: TestEnvironment) async throws -> [[String: Any]] {
        try await dump(env)["leases"] as? [[String: Any]] ?? []
    }

    private func claimsRequested(_ env: TestEnvironment) async throws -> Int {
        try #require((try await dump(env)["statistics"] as? [String: Any])?["claimsRequested"] as? Int)
    }

    /// A folder with one file, and host A alone in it with a lease on the folder (after one read).
    private func leasedSetUp(
        _ env: TestEnvironment,
        presenterTimeout: String = "infinity"
    ) async throws -> (file: String, a: HostProcess, daemon: DaemonProcess) {
        let daemon = try await env.startDaemon(presenterTimeout: presenterTimeout)
        let folder = env.path("tree")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let file = try env.file("tree/f.txt", "v1")
        let a = try await env.host("A", environment: Self.leasing)
        try a.send("read \(file)")
        try await a.waitFor("done read \(file)")
        var held: [[String: Any]] = []
        let deadline = ContinuousClock.now + defaultTimeout
        while held.isEmpty && ContinuousClock.now < deadline {
            held = try await leases(env)
            if held.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        }
        let lease = try #require(held.first, "no lease was granted to A")
        #expect(lease["subtree"] as? String == folder)
        #expect(lease["state"] as? String == "held")
        #expect(
            (try await dump(env)["clients"] as? [[String: Any]])?.contains { $0["pid"] as? Int == Int(a.pid) } == true
        )
        return (file, a, daemon)
    }

    @Test("a process alone in a folder gets a lease, and its reads there make no round trip")
    func aProcessAloneReadsWithoutARoundTrip() async throws {
        try await TestEnvironment.run { env in
            let (file, a, _) = try await leasedSetUp(env)
            let before = try await claimsRequested(env)
            try a.send("read-loop \(file) 200")
            try await a.waitFor("done read-loop \(file)")
            let after = try await claimsRequested(env)
            #expect(after == before, "the daemon saw \(after - before) claims for 200 reads under a lease")
            let text = try await env.runTool("fcdump", ["leases"])
            #expect(text.output.contains("lease#") && text.output.contains("held by"), "\(text.output)")
        }
    }

    /// The holder grants a claim at once while its lease's arbiter holds nothing, without entering it there; a
    /// second claim enters it first, so that the holder's own write waits for its own running read.
    @Test("inside its lease, a holder's write waits for its own running read, both decided in process")
    func aHoldersWriteWaitsForItsOwnRunningRead() async throws {
        try await TestEnvironment.run { env in
            let (file, a, _) = try await leasedSetUp(env)
            let before = try await claimsRequested(env)
            try a.send("read \(file) hold")
            try await a.waitFor("holding read \(file)")
            try a.send("write \(file) v2")
            #expect(try await a.staysWithout("granted write"), "the write ran while the same process's read did")
            try a.send("release")
            try await a.waitFor("done read \(file) v1")
            try await a.waitFor("done write \(file)")
            #expect(try await claimsRequested(env) == before, "a claim went to the daemon: no lease was used")
        }
    }

    /// Waits until the daemon holds no lease (A's was returned), failing after the default timeout.
    private func waitUntilNoLease(_ env: TestEnvironment, _ why: String) async throws {
        let deadline = ContinuousClock.now + defaultTimeout
        while !(try await leases(env)).isEmpty {
            guard ContinuousClock.now < deadline else {
                Issue.record("the lease was not returned: \(why)")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Stop 68 (a read-only review): a move reported inside a claim its lease decided stayed in the lease's arbiter.
    /// Moved out of the lease, the item's new place was unknown to the daemon, which granted it to another process
    /// beside the running write. Now the lease is returned first (its running claims declared), and the move goes to
    /// the daemon. With `plain`, the write has no option and its lease grants it on the straight path (no entry in
    /// the lease's arbiter; the branch `LeaseTable.State.straightPathLease(of:)` finds it by).
    @Test(
        "a move out of the lease, reported inside a claim the lease decided, holds the new place against others",
        arguments: ["moving", "plain"]
    )
    func aMoveOutOfTheLeaseHoldsTheNewPlace(write: String) async throws {
        try await TestEnvironment.run { env in
            let (file, a, _) = try await leasedSetUp(env)
            let outside = env.path("elsewhere")
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            let moved = outside + "/f.txt"
            // A's write is decided in its lease (the move, reported inside it, returns the lease: the daemon counts
            // the claim declared then, so its statistics cannot tell; without the fix B is granted at once). Only a
            // write its lease decided returns the lease by moving out: a write the daemon decided leaves it held.
            try a.send("write-move \(file) \(moved) \(write == "plain" ? "plain " : "")hold")
            try await a.waitFor("holding write-move \(file)")
            try await waitUntilNoLease(env, "the move out of it did not give it back (\(write) write)")
            let b = try await env.host("B")
            try b.send("write \(moved) v2")
            #expect(try await b.staysWithout("granted write"), "B wrote the moved file while A's write ran there")
            try a.send("release")
            try await a.waitFor("done write-move \(file)")
            try await b.waitFor("done write \(moved)")
        }
    }

    /// Stop 68 (the same review): a lease recalled while a claim inside it ran declared the claim as it was asked,
    /// without the places its moves took its items to: a folder moved inside the lease (folders are met by path
    /// only) was granted to another process at its new place.
    @Test("a lease recalled while a claim inside it runs declares where that claim's moves took its items")
    func aRecalledLeaseDeclaresTheMovedPlaces() async throws {
        try await TestEnvironment.run { env in
            let (_, a, _) = try await leasedSetUp(env)
            let folder = env.path("tree/sub")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            _ = try env.file("tree/sub/g.txt", "g")
            let renamed = env.path("tree/sub2")
            let before = try await claimsRequested(env)
            try a.send("write-move \(folder) \(renamed) hold")
            try await a.waitFor("holding write-move \(folder)")
            #expect(try await claimsRequested(env) == before, "the write went to the daemon: no lease decided it")
            let b = try await env.host("B")
            try b.send("write \(renamed)/g.txt v2")
            #expect(
                try await b.staysWithout("granted write"),
                "B wrote inside the moved folder while A's write of it ran"
            )
            try a.send("release")
            try await a.waitFor("done write-move \(folder)")
            try await b.waitFor("done write \(renamed)/g.txt")
        }
    }

    @Test("a process that reads in a tight loop from the start takes the lease on the way, without bouncing it")
    func aTightLoopTakesTheLeaseOnTheWay() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            try FileManager.default.createDirectory(atPath: env.path("tree"), withIntermediateDirectories: true)
            let file = try env.file("tree/f.txt", "v1")
            let a = try await env.host("A", environment: Self.leasing)
            try a.send("read-loop \(file) 500")
            try await a.waitFor("done read-loop \(file)")
            let state = try await dump(env)
            let requested = try #require((state["statistics"] as? [String: Any])?["claimsRequested"] as? Int)
            #expect(requested < 50, "the daemon saw \(requested) of 500 reads")
            let leasing = try #require(state["leasing"] as? [String: Any])
            #expect(leasing["recalls"] as? Int == 0, "the lease bounced: \(leasing)")
        }
    }

    @Test("without FILECOORD_LEASES, or with filecoordd --no-leases, no lease is granted")
    func leasesOffGrantNone() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon(arguments: ["--no-leases"])
            let file = try env.file("g.txt", "v1")
            let a = try await env.host("A", environment: Self.leasing)
            let b = try await env.host("B", environment: ["FILECOORD_LEASES": "0"])
            for host in [a, b] {
                try host.send("read \(file)")
                try await host.waitFor("done read \(file)")
            }
            try await Task.sleep(for: quietTime)
            let state = try await dump(env)
            #expect((state["leases"] as? [Any])?.isEmpty == true)
            #expect((state["leasing"] as? [String: Any])?["enabled"] as? Bool == false)
        }
    }

    @Test("another process's write recalls the lease and waits for the holder's running read")
    func aWriteRecallsTheLeaseAndWaitsForTheRunningRead() async throws {
        try await TestEnvironment.run { env in
            let (file, a, _) = try await leasedSetUp(env)
            let before = try await claimsRequested(env)
            try a.send("read \(file) hold")
            try await a.waitFor("holding read \(file)")
            #expect(try await claimsRequested(env) == before, "A's read went to the daemon: no lease was used")
            let b = try await env.host("B", environment: ["FILECOORD_LEASES": "0"])
            try b.send("write \(file) v2")
            #expect(try await b.staysWithout("granted write"), "B wrote while A's read ran under its lease")
            // The lease came back with A's read declared: the daemon now shows it as A's granted claim.
            let state = try await dump(env)
            #expect((state["leases"] as? [Any])?.isEmpty == true, "\(state["leases"] ?? "")")
            let claims = try #require(state["claims"] as? [[String: Any]])
            #expect(claims.contains { $0["phase"] as? String == "granted" }, "\(claims)")
            #expect(claims.contains { $0["phase"] as? String == "waiting" }, "\(claims)")
            try a.send("release")
            try await a.waitFor("done read \(file) v1")
            try await b.waitFor("done write \(file)")
            // Back to the daemon: A's next read waits its turn like anyone's, and sees B's write.
            try a.send("read \(file)")
            try await a.waitFor("done read \(file) v2")
        }
    }

    /// A daemon that stops cleanly closes its clients' connections; a client whose accessor runs declares its claim
    /// to the next daemon only once it has read the end and reconnected, and a lease's holder may even decide
    /// claims in process until then. Before, the next daemon started without the recovery grace (only a crash left
    /// the socket behind), so another process's write was granted while A's read still ran, unknown to it; then the
    /// grace was a time, and on a loaded machine A took longer than it to declare (CI, stop 53): B's write went in
    /// while A's read ran. Now the stopped daemon names A's process and what it held, and the next holds it in A's
    /// name until A declares it or exits, however long A takes: here longer than the grace.
    @Test(
        "a daemon that stops cleanly while a read runs (in a lease or not): the next holds it until A declares",
        arguments: [true, false]
    )
    func aCleanStopHandsOnWhatAHeld(leased: Bool) async throws {
        try await TestEnvironment.run { env in
            let file: String
            let a: HostProcess
            let daemon: DaemonProcess
            if leased {
                (file, a, daemon) = try await leasedSetUp(env)
            } else {
                daemon = try await env.startDaemon()
                file = try env.file("f.txt", "v1")
                a = try await env.host("A")
            }
            try a.send("read \(file) hold")
            try await a.waitFor("holding read \(file)")
            // A cannot see the daemon go, nor declare its read to the next one, until it runs again.
            try await stopProcess(a.pid)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
            let next = try await env.startDaemon(arguments: ["--recovery-grace", "1"])
            try await next.waitForLog("until it declares it or exits")
            let b = try await env.host("B", environment: ["FILECOORD_LEASES": "0"])
            try b.send("write \(file) v2")
            // Past the grace: what A held is held for it while its process lives, not for a time.
            #expect(
                try await b.staysWithout("granted write", for: .seconds(3)),
                "B wrote while A's read ran (A stopped)\n\(daemon.log())\n---\n\(next.log())"
            )
            kill(a.pid, SIGCONT)
            try await next.waitForLog("claim declared again as held")
            try await next.waitForLog("what was kept for a process is let go: it declared")
            #expect(try await b.staysWithout("granted write"), "B wrote while A's declared read ran")
            try a.send("release")
            try await a.waitFor("done read \(file) v1")
            try await b.waitFor("done write \(file)", timeout: .seconds(30))
        }
    }

    /// A stopped daemon's holder that exits without declaring: what was held for it goes, and the next write runs.
    @Test("what a stopped daemon handed on goes when its holder exits")
    func handedOnHoldGoesWithItsHolder() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            let file = try env.file("f.txt", "v1")
            let a = try await env.host("A")
            try a.send("read \(file) hold")
            try await a.waitFor("holding read \(file)")
            try await stopProcess(a.pid)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
            let next = try await env.startDaemon(arguments: ["--recovery-grace", "1"])
            try await next.waitForLog("until it declares it or exits")
            let b = try await env.host("B", environment: ["FILECOORD_LEASES": "0"])
            try b.send("write \(file) v2")
            #expect(try await b.staysWithout("granted write", for: .seconds(2)), "B wrote while A's read ran")
            kill(a.pid, SIGKILL)
            try await next.waitForLog("what was kept for a process is let go: it exited")
            try await b.waitFor("done write \(file)", timeout: .seconds(30))
        }
    }

    /// The daemon closes a holder's connection itself (here for a frame only a daemon sends; also a client that does
    /// not read) while the holder's process lives on: the holder may have decided claims in its lease and not read
    /// the end yet. Before, the lease went at once, and another process's write was granted while such a read ran.
    @Test("a holder whose connection the daemon closes keeps its lease a while, and its declared read excludes")
    func aClosedHoldersLeaseIsKeptUntilItDeclares() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon(arguments: ["--recovery-grace", "1"])
            try FileManager.default.createDirectory(atPath: env.path("tree"), withIntermediateDirectories: true)
            let file = try env.file("tree/f.txt", "v1")
            // The holder speaks the protocol itself: a read through the daemon earns it a lease on tree/.
            let holder = try RawClient(socket: env.socket)
            try await holder.handshake(name: "holder", answersRecalls: true)
            try holder.send(try claimFrame(1, file, .read([])))
            guard case .granted? = try await holder.nextFrame()?.payload else {
                Issue.record("the holder's read was not granted")
                return
            }
            try holder.send(Filecoord_V1_Frame(.finishClaim(Filecoord_V1_FinishClaim(claim: ClaimID(1), created: []))))
            guard case .leaseGranted? = try await holder.nextFrame()?.payload else {
                Issue.record("no lease was granted to the holder")
                return
            }
            // In its lease the holder now runs read 2 itself, unknown to the daemon, and sends a frame only a daemon
            // sends: the daemon closes its connection.
            try holder.send(Filecoord_V1_Frame(.granted(Filecoord_V1_Granted())))
            #expect(try await holder.waitForClose())
            try await daemon.waitForLog("closing a connection")
            let b = try await env.host("B", environment: ["FILECOORD_LEASES": "0"])
            try b.send("write \(file) v2")
            // Past the grace (1 s): the lease is kept while the holder's process lives and has not declared. Before,
            // it was kept for the grace alone, which a loaded machine outlasted (CI, stop 53).
            #expect(
                try await b.staysWithout("granted write", for: .seconds(3)),
                "B wrote while the holder's read ran in its lease"
            )
            // The holder reconnects and declares its running read, as the library does after a lost connection,
            // then says it has declared everything; B waits for that read.
            let again = try RawClient(socket: env.socket)
            try await again.handshake(name: "holder")
            var held = try claimFrame(2, file, .read([]))
            held.requestClaim.held = true
            try again.send(held)
            var declared = Filecoord_V1_Ping()
            declared.heldDeclared = true
            try again.send(Filecoord_V1_Frame(.ping(declared)))
            try await daemon.waitForLog("kept lease of a closed connection released", timeout: .seconds(30))
            #expect(try await b.staysWithout("granted write"), "B wrote while the holder's declared read ran")
            try again.send(Filecoord_V1_Frame(.finishClaim(Filecoord_V1_FinishClaim(claim: ClaimID(2), created: []))))
            try await b.waitFor("done write \(file)")
        }
    }

    /// Waits until the daemon shows `count` leases.
    private func waitForLeases(_ env: TestEnvironment, count: Int) async throws {
        var held: [[String: Any]] = []
        let deadline = ContinuousClock.now + defaultTimeout
        while held.count != count && ContinuousClock.now < deadline {
            held = try await leases(env)
            if held.count != count { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(held.count == count, "leases: \(held)")
    }

    /// Issue 23 with 26: a file hard-linked from one leased folder into another. Each holder deciding its claim on
    /// it in process would let A write it through one name while B reads it through the other. A file with other
    /// names is never decided in a lease: both claims go to the daemon, which meets them on the file.
    @Test("two holders of two folders never both hold one file through two of its names")
    func twoHoldersMeetOnAHardLinkedFile() async throws {
        try await TestEnvironment.run { env in
            let (file, a, _) = try await leasedSetUp(env)
            try FileManager.default.createDirectory(atPath: env.path("other"), withIntermediateDirectories: true)
            let own = try env.file("other/own.txt", "b")
            let b = try await env.host("B", environment: Self.leasing)
            try b.send("read \(own)")
            try await b.waitFor("done read \(own)")
            try await waitForLeases(env, count: 2)
            let link = env.path("other/g.txt")
            try FileManager.default.linkItem(atPath: file, toPath: link)
            try await a.expectHeldWriteHoldsBack(
                file,
                "v2",
                reader: b,
                reading: link,
                "B read the file through its link while A wrote it"
            )
        }
    }

    @Test("kill -9 of a holder frees its folder at once")
    func aKilledHolderFreesItsFolder() async throws {
        try await TestEnvironment.run { env in
            let (file, a, _) = try await leasedSetUp(env)
            try a.send("read \(file) hold")
            try await a.waitFor("holding read \(file)")
            let b = try await env.host("B", environment: ["FILECOORD_LEASES": "0"])
            try b.send("write \(file) v2")
            #expect(try await b.staysWithout("granted write"))
            kill(a.pid, SIGKILL)
            try await b.waitFor("done write \(file)", timeout: .seconds(5))
            #expect(try await leases(env).isEmpty)
        }
    }

    /// A holder stopped while it uses its lease holds back the write (the test below); one stopped after it left the
    /// folder alone for a while does not, because it returned the lease unasked before it stopped. Waits on the
    /// daemon's counters, not on time: a lease was granted, none is held now, and none was recalled (so A returned
    /// it). `LeaseIdleReturnTests` checks, step by step, which leases count as idle.
    @Test("a holder returns a lease it has not used for a while, so a stopped idle holder holds back nobody")
    func anIdleHolderReturnsItsLease() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon(presenterTimeout: "0.5")
            try FileManager.default.createDirectory(atPath: env.path("tree"), withIntermediateDirectories: true)
            let file = try env.file("tree/f.txt", "v1")
            let a = try await env.host("A", environment: Self.leasing(returningIdleAfter: "0.2"))
            defer { kill(a.pid, SIGCONT) }
            try a.send("read \(file)")
            try await a.waitFor("done read \(file)")
            var leasing: [String: Any] = [:]
            var held = 1
            let deadline = ContinuousClock.now + defaultTimeout
            while ContinuousClock.now < deadline {
                let state = try await dump(env)
                leasing = state["leasing"] as? [String: Any] ?? [:]
                held = (state["leases"] as? [[String: Any]] ?? []).count
                if leasing["granted"] as? Int ?? 0 >= 1 && held == 0 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(leasing["granted"] as? Int == 1 && held == 0, "the idle holder kept its lease: \(leasing)")
            #expect(leasing["recalls"] as? Int == 0, "the lease was recalled, not returned: \(leasing)")
            try await stopProcess(a.pid)
            let b = try await env.host("B", environment: ["FILECOORD_LEASES": "0"])
            try b.send("write \(file) v2")
            try await b.waitFor("done write \(file)", timeout: .seconds(5))
        }
    }

    @Test("a stopped holder is reported as not answering its recall, and still holds back the write")
    func aStoppedHolderIsReportedAndStillHoldsBack() async throws {
        try await TestEnvironment.run { env in
            let (file, a, _) = try await leasedSetUp(env, presenterTimeout: "0.5")
            defer { kill(a.pid, SIGCONT) }
            try await stopProcess(a.pid)
            let b = try await env.host("B", environment: ["FILECOORD_LEASES": "0"])
            try b.send("write \(file) v2")
            var state = ""
            let deadline = ContinuousClock.now + defaultTimeout
            while state != "recall unanswered" && ContinuousClock.now < deadline {
                state = try await leases(env).first?["state"] as? String ?? ""
                if state != "recall unanswered" { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(state == "recall unanswered")
            #expect(b.lines.allSatisfy { !$0.text.hasPrefix("granted write") }, "B wrote past a stopped holder")
            let text = try await env.runTool("fcdump", ["leases"])
            #expect(text.output.contains("recall unanswered"), "\(text.output)")
            // Resumed, the holder answers: the write goes on.
            kill(a.pid, SIGCONT)
            try await b.waitFor("done write \(file)")
        }
    }
}
