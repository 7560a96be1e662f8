// Presenters across hosts (issue 41) with real processes: the etcd cluster and the two daemons of
// ClusterEndToEndTests (`ClusterHosts`), an `fc-testhost` presenter on host B, coordinated writes, moves and deletes
// by clients of host A. Each test fails without the rule it names.

import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

@Suite(.serialized, .timeLimit(.minutes(3)))
struct ClusterPresenterEndToEndTests {
    private func withHosts(_ body: (TestEnvironment, ClusterHosts) async throws -> Void) async throws {
        try await TestEnvironment.run { environment in
            let hosts = try await ClusterHosts.start(in: environment, watching: false)
            defer { hosts.etcd.shutdown() }
            do {
                try await body(environment, hosts)
            } catch {
                throw HarnessError(description: "\(error)\n--- etcd ---\n\(hosts.etcd.logs())")
            }
        }
    }

    /// A client of host `socket`, named `name`.
    private func client(
        _ name: String,
        of socket: String,
        in environment: TestEnvironment
    ) async throws
        -> HostProcess
    {
        try await environment.host(name, mayStartDaemon: false, environment: ClusterHosts.client(of: socket))
    }

    /// `presenter` on host B presents `path`, and host A knows it (its daemon logs the first presenter of host B).
    private func presentOnB(
        _ presenter: String,
        _ path: String,
        by process: HostProcess,
        hosts: ClusterHosts,
        _ flags: String...
    ) async throws {
        try process.send((["present", presenter, path] + flags).joined(separator: " "))
        try await process.waitFor("presenting \(presenter) ")
        try await hosts.a.waitForLog("cluster: another host presents items in shared folders")
    }

    @Test func aWriteOnOneHostAsksAPresenterOnTheOtherFirstAndTellsItAfter() async throws {
        try await withHosts { environment, hosts in
            let doc = try environment.file("share/doc.txt", "v1")
            let b = try await client("B", of: hosts.socketB, in: environment)
            try await presentOnB("P", doc, by: b, hosts: hosts)

            let a = try await client("A", of: hosts.socketA, in: environment)
            try a.send("write \(doc) v2")
            let granted = try await a.waitFor("granted write \(doc)")
            try await a.waitFor("done write \(doc)")
            let written = try await b.settledPresenterEvents("P", count: 3)
            #expect(written == ["relinquishToWriter", "didChange", "reacquire"], "\(written)")
            let relinquished = try #require(b.lines.first { $0.text == "presenter P relinquishToWriter" })
            #expect(
                relinquished.round <= granted.round,
                "host A granted its write before host B's presenter relinquished"
            )
            // fcdump on host A shows host B's presenter, with its host.
            let dump = try await environment.runTool(
                "fcdump",
                ["clients"],
                environment: ClusterHosts.client(of: hosts.socketA)
            )
            #expect(dump.output.contains("host hostB, another host's presenters"), "\(dump.output)")
            #expect(dump.output.contains(doc), "\(dump.output)")
            // A read on A asks B's presenter to save and relinquish to the reader.
            try a.send("read \(doc)")
            try await a.waitFor("done read \(doc)")
            let events = try await b.settledPresenterEvents("P", count: 6)
            #expect(Array(events.dropFirst(3)).sorted() == ["reacquire", "relinquishToReader", "save"].sorted())
        }
    }

    @Test func aMoveOnOneHostMovesThePresenterOnTheOtherAndADeleteAsksItToAccommodate() async throws {
        try await withHosts { environment, hosts in
            let original = try environment.file("share/original.txt", "text")
            let moved = environment.path("share/moved.txt")
            let doomed = try environment.file("share/doomed.txt", "bye")
            let b = try await client("B", of: hosts.socketB, in: environment)
            try await presentOnB("M", original, by: b, hosts: hosts)
            try b.send("present D \(doomed)")
            try await b.waitFor("presenting D ")

            let a = try await client("A", of: hosts.socketA, in: environment)
            try a.send("move \(original) \(moved)")
            try await a.waitFor("done move \(original) \(moved)")
            let moves = try await b.settledPresenterEvents("M", count: 3)
            #expect(moves == ["relinquishToWriter", "didMove \(moved)", "reacquire"], "\(moves)")
            // The presenter now presents the new name on host A too: a write there asks it.
            try a.send("write \(moved) again")
            try await a.waitFor("done write \(moved)")
            #expect(
                try await b.settledPresenterEvents("M", count: 6).suffix(3) == [
                    "relinquishToWriter", "didChange", "reacquire",
                ]
            )

            try a.send("write \(doomed) deleting")
            try await a.waitFor("done write \(doomed)")
            #expect(
                try await b.settledPresenterEvents("D", count: 3) == [
                    "relinquishToWriter", "accommodateDeletion", "reacquire",
                ]
            )
            #expect(!FileManager.default.fileExists(atPath: doomed))
        }
    }

    @Test func aPresenterOnAnotherHostThatDoesNotAnswerCostsTheTimeoutAndNoMore() async throws {
        try await withHosts { environment, hosts in
            let doc = try environment.file("share/doc.txt", "v1")
            let b = try await client("B", of: hosts.socketB, in: environment)
            try await presentOnB("P", doc, by: b, hosts: hosts)
            // The presenter's process stops: host B relays the request, nobody answers.
            kill(b.pid, SIGSTOP)
            defer { kill(b.pid, SIGCONT) }

            let a = try await client("A", of: hosts.socketA, in: environment)
            let start = ContinuousClock.now
            try a.send("write \(doc) v2")
            try await a.waitFor("done write \(doc)", timeout: .seconds(30))
            let waited = ContinuousClock.now - start
            // The daemons' presenter timeout is 5 s (ClusterHosts): the write waited it out, and not much longer.
            #expect(waited >= .seconds(4), "host A's write did not wait for host B's presenter (\(waited))")
            #expect(waited < .seconds(15), "host A's write waited \(waited) for a presenter that does not answer")
            try await hosts.a.waitForLog("did not answer")
        }
    }

    @Test func aPresenterHostThatDiesIsForgottenWhenItsSessionEnds() async throws {
        try await withHosts { environment, hosts in
            let doc = try environment.file("share/doc.txt", "v1")
            let b = try await client("B", of: hosts.socketB, in: environment)
            try await presentOnB("P", doc, by: b, hosts: hosts)
            kill(hosts.b.pid, SIGKILL)
            // Its keys go with its session (2 s): host A's stand-ins for its presenters go then.
            try await hosts.a.waitForLog("cluster: another host presents nothing in shared folders any more")

            let a = try await client("A", of: hosts.socketA, in: environment)
            let start = ContinuousClock.now
            try a.send("write \(doc) v2")
            try await a.waitFor("done write \(doc)")
            #expect(ContinuousClock.now - start < .seconds(4), "host A waited for a presenter of a dead host")
        }
    }
}
