// The deadlock detector across real processes (docs/SEMANTICS.md §6): the classic serial-queue deadlock of two
// presenters that read inside presentedItemDidChange, and a long wait that is no deadlock.

import Foundation
import Testing

// Two minutes: the test that looks at a cycle before it is broken gives the detector 20 s, and CI's loaded test
// phases have taken 50 s for one of these.
@Suite(.timeLimit(.minutes(2)))
struct DeadlockEndToEndTests {
    /// hydrixos/DeadlockExample across processes: a daemon, presenters A and B of one file (in hosts a and b) that
    /// read it inside presentedItemDidChange, and host c, whose write of the file starts the cycle.
    private func classicSetUp(
        _ env: TestEnvironment,
        deadlockDelay: String = "1"
    ) async throws -> (doc: String, a: HostProcess, b: HostProcess, c: HostProcess) {
        _ = try await env.startDaemon(deadlockDelay: deadlockDelay)
        let doc = try env.file("test.txt", "xy")
        let a = try await env.host("A")
        let b = try await env.host("B")
        let c = try await env.host("C")
        try await a.present("A", doc, "read-on-change")
        try await b.present("B", doc, "read-on-change")
        return (doc, a, b, c)
    }

    @Test(
        "Two presenters in two processes reading inside didChange: one read fails with the cycle, the other completes"
    )
    func classicDeadlockAcrossTwoProcessesIsBroken() async throws {
        try await TestEnvironment.run { env in
            let (doc, a, b, c) = try await classicSetUp(env)
            let start = ContinuousClock.now
            try c.send("write \(doc) abc")
            let outcomeA = try await a.waitFor("presenter A readOnChange")
            let outcomeB = try await b.waitFor("presenter B readOnChange")
            let elapsed = ContinuousClock.now - start
            let outcomes = [outcomeA.text, outcomeB.text]
            let failed = outcomes.filter { $0.contains("readOnChange failed FileCoordinationErrorDomain 3 ") }
            let done = outcomes.filter { $0.hasSuffix("readOnChange done") }
            #expect(failed.count == 1 && done.count == 1, "outcomes: \(outcomes)")
            // Found within the detection delay (1 s) plus a margin. The presenters never time out (the harness's
            // daemon runs with --presenter-timeout infinity), so only the detector breaks the cycle; the bound catches a
            // detector far slower than its delay. It is read by the test's clock, through four processes' wake-ups:
            // 5 s was exceeded once by the loaded first test phase (5.56 s), hence 15 s.
            #expect(elapsed < .seconds(15), "the deadlock took \(elapsed) to break")
            // The report closes the cycle: both processes, both presenters' queues.
            let report = (a.lines + b.lines).map(\.text).joined(separator: "\n")
            #expect(report.contains("deadlock found"))
            #expect(report.contains("is held by a coordinated call made in its presentedItemDidChange()"), "\(report)")
            #expect(report.contains("pid \(a.pid)") && report.contains("pid \(b.pid)"), "\(report)")
            // Both queues run on: a read from a third process is answered by both presenters.
            try await c.waitFor("done write \(doc)")
            try c.send("read \(doc) without-changes")
            try await c.waitFor("done read \(doc)")

            // fcdump keeps the report: `deadlocks` prints it, and the JSON counts it.
            let reports = try await env.runTool("fcdump", ["deadlocks"])
            #expect(reports.status == 0, "fcdump deadlocks failed: \(reports.error)")
            #expect(reports.output.contains("deadlock found"), "\(reports.output)")
            #expect(reports.output.contains("pid \(a.pid)") && reports.output.contains("pid \(b.pid)"))
            #expect(reports.output.contains("made in its presentedItemDidChange()"), "\(reports.output)")
            let json = try await env.runTool("fcdump", ["--json"])
            let dump = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
            #expect((dump["statistics"] as? [String: Any])?["deadlocksBroken"] as? Int == 1)
            let kept = try #require(dump["deadlocks"] as? [String])
            #expect(kept.count == 1 && kept.first.map { report.contains($0) || $0.contains("deadlock found") } == true)
        }
    }

    @Test("Before the detector breaks a cycle, fcdump shows it: the reads made in presentedItemDidChange, the edges")
    func fcdumpShowsACycleWhileItWaits() async throws {
        try await TestEnvironment.run { env in
            // The detector waits 20 s before it breaks the cycle, and the test looks for 18 s of them: with 6 and 4,
            // CI's loaded second test phase (leases off) read the callbacks' lines after the cycle was already broken.
            let (doc, a, b, c) = try await classicSetUp(env, deadlockDelay: "20")
            try c.send("write \(doc) abc")
            try await a.waitFor("presenter A didChange")
            try await b.waitFor("presenter B didChange")

            // Both reads wait, each made in its presenter's callback.
            var inCallbacks: [[String: Any]] = []
            var json = ""
            let deadline = ContinuousClock.now + .seconds(18)
            while inCallbacks.count < 2 && ContinuousClock.now < deadline {
                json = try await env.runTool("fcdump", ["--json"]).output
                let dump = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
                inCallbacks = ((dump?["claims"] as? [[String: Any]]) ?? []).filter {
                    $0["fromCallback"] as? String == "presentedItemDidChange" && $0["phase"] as? String != "granted"
                }
            }
            try #require(inCallbacks.count == 2, "no two waiting reads made in presentedItemDidChange in:\n\(json)")
            #expect(Set(inCallbacks.compactMap { $0["fromPresenterQueue"] as? Int }).count == 2)
            let tree = try await env.runTool("fcdump", [])
            #expect(tree.output.contains("'s presentedItemDidChange"), "\(tree.output)")
            // The graph holds the cycle: each read waits for the other presenter, whose queue its own read holds.
            let graph = try await env.runTool("fcdump", ["--graph"])
            #expect(
                graph.output.components(separatedBy: "made in its presentedItemDidChange()").count == 3,
                "\(graph.output)"
            )
            for claim in inCallbacks {
                let id = try #require(claim["id"] as? Int)
                let queue = try #require(claim["fromPresenterQueue"] as? Int)
                #expect(graph.output.contains("\"presenter#\(queue)\" -> \"claim#\(id)\""), "\(graph.output)")
            }
            let broken = try await env.runTool("fcdump", ["deadlocks"])
            #expect(broken.output.contains("no recent deadlock reports"), "broken before its delay: \(broken.output)")

            // Looking changed nothing: after the delay, the detector breaks the cycle as usual.
            let outcomes = [
                try await a.waitFor("presenter A readOnChange", timeout: .seconds(40)).text,
                try await b.waitFor("presenter B readOnChange", timeout: .seconds(40)).text,
            ]
            #expect(outcomes.filter { $0.hasSuffix("readOnChange done") }.count == 1, "outcomes: \(outcomes)")
        }
    }

    @Test("A presenter that never answers: a long-wait report naming it, then the presenter timeout")
    func longWaitIsReportedThenThePresenterTimesOut() async throws {
        try await TestEnvironment.run { env in
            // The report comes after the 1 s detection delay; the timeout 5 s later leaves a loaded machine (the full
            // suite on two cores) time to read the report before the write is let through (3 s was too tight once).
            let daemon = try await env.startDaemon(presenterTimeout: "6")
            let doc = try env.file("doc.txt", "one")
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("A", doc, "never-answer")
            try b.send("write \(doc) two")
            try await daemon.waitForLog("long wait, not a deadlock")
            #expect(daemon.log().contains("to answer relinquishPresentedItem(toWriter:)"))
            try await b.waitFor("granted write \(doc)")
            // In the daemon's own order, not by the test's clock (a loaded machine reads the log late): the report,
            // then the timeout, which lets the write through.
            let log = daemon.log()
            let report = try #require(log.range(of: "long wait, not a deadlock"))
            let timeout = try #require(log.range(of: "presenter did not answer in time"))
            #expect(report.lowerBound < timeout.lowerBound, "\(log)")
        }
    }
}
