// Several real processes around one private filecoordd: presenter messaging across processes (docs/SEMANTICS.md §2,
// §3), crashes and stuck presenters (§6, §7), malformed clients, shutdown and the single-daemon lock.
//
// Each test has its own folder, socket and daemon (Harness.swift), so the tests run in parallel.

import FCCore
import FCProtocol
import FCSystem
import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// `failed OP PATH DOMAIN CODE MESSAGE`, as fc-testhost prints a failed call.
struct FailedCall: Equatable, CustomStringConvertible {
    var operation: String
    var path: String
    var domain: String
    var code: Int
    var message: String

    init?(_ line: String) {
        let parts = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 6, parts[0] == "failed", let code = Int(parts[4]) else { return nil }
        (operation, path, domain, self.code, message) = (parts[1], parts[2], parts[3], code, parts[5])
    }

    var description: String { "failed \(operation) \(path) \(domain) \(code) \(message)" }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension DaemonProcess {
    /// The daemon's id for the client with kernel pid `pid`, from its "client connected" log line.
    func clientID(ofPID pid: Int32) async throws -> String {
        var found: String?
        try await eventually("a \"client connected\" line for pid \(pid) in:\n\(log())") {
            for line in log().split(separator: "\n")
            where line.contains("client connected") && line.contains("client.pid=\(pid) ") {
                found = line.split(separator: " ").first { $0.hasPrefix("client.id=") }.map(String.init)
            }
            return found != nil
        }
        return found ?? ""
    }
}

/// The wire encoding of a claim on one item, as the library would send it.
func claimFrame(_ claim: UInt64, _ path: String, _ access: Access) throws -> Filecoord_V1_Frame {
    Filecoord_V1_Frame(
        .requestClaim(
            Filecoord_V1_RequestClaim(
                ClaimRequest(
                    id: ClaimID(claim),
                    client: ClientID(0),
                    coordinator: CoordinatorID(1),
                    purpose: PurposeID(UUID().uuidString),
                    items: [ClaimItem(path: try ItemPath(absolute: path), access: access)]
                )
            )
        )
    )
}

/// A client that sends `bytes` (after a handshake if `handshake`) and must be disconnected, with `Refused` if
/// `refused`, else with `ProtocolError`.
struct BadClient {
    var name: String
    var bytes: [UInt8]
    var handshake = false
    var refused = false

    init(_ name: String, _ bytes: [UInt8], handshake: Bool = false, refused: Bool = false) {
        (self.name, self.bytes, self.handshake, self.refused) = (name, bytes, handshake, refused)
    }
}

/// Deterministic bytes (SplitMix64), so that a failure can be replayed.
func seededBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return UInt8(truncatingIfNeeded: z ^ (z >> 31))
    }
}

@Suite(.timeLimit(.minutes(1)))
struct EndToEndTests {
    // MARK: Presenter messaging across processes (docs/SEMANTICS.md §3)

    @Test("A write in B: A hears relinquishToWriter, didChange, reacquire; B is granted after A relinquished")
    func writeMessagesAPresenterInAnotherProcess() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "first")
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("A", doc)

            try b.send("write \(doc) second")
            let granted = try await b.waitFor("granted write \(doc)")
            try await b.waitFor("done write \(doc)")

            #expect(
                try await a.settledPresenterEvents("A", count: 3) == ["relinquishToWriter", "didChange", "reacquire"]
            )
            let relinquished = try #require(a.lines.first { $0.text == "presenter A relinquishToWriter" })
            #expect(
                relinquished.round <= granted.round,
                "B's grant was written before A's relinquishToWriter (rounds \(granted.round) < \(relinquished.round))"
            )
            #expect(try String(contentsOfFile: doc, encoding: .utf8) == "second")
        }
    }

    @Test("A read in B: relinquishToReader, save, reacquire; with .withoutChanges no save")
    func readMessagesAPresenterInAnotherProcess() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "contents")
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("A", doc)

            try b.send("read \(doc)")
            let done = try await b.waitFor("done read \(doc)")
            #expect(done.text == "done read \(doc) contents")
            #expect(try await a.settledPresenterEvents("A", count: 3) == ["relinquishToReader", "save", "reacquire"])

            try b.send("read \(doc) without-changes")
            try await b.waitFor("done read \(doc)", count: 2)
            #expect(
                try await a.settledPresenterEvents("A", count: 5) == [
                    "relinquishToReader", "save", "reacquire", "relinquishToReader", "reacquire",
                ]
            )
        }
    }

    @Test("A presenter's save error fails the read in another process with domain, code and message intact")
    func presenterErrorCrossesProcesses() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "contents")
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("A", doc, "refuse-save")

            try b.send("read \(doc)")
            let failed = try await b.waitFor("failed read \(doc)")
            #expect(failed.text == "failed read \(doc) FCTestHostDomain 42 The document could not be saved.")
            // fc-testhost prints `granted` inside the accessor, which runs before the call returns: none means it never
            // ran.
            #expect(!b.lines.contains { $0.text.hasPrefix("granted read") })
            #expect(try await a.settledPresenterEvents("A", count: 3) == ["relinquishToReader", "save", "reacquire"])
        }
    }

    @Test("Delete: relinquishToWriter, accommodateDeletion; move: one didMove to the new path and no didChange")
    func deleteAndMoveAcrossProcesses() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doomed = try env.file("doomed.txt", "bye")
            let original = try env.file("original.txt", "text")
            let moved = env.path("moved.txt")
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("D", doomed)
            try await a.present("M", original)

            try b.send("write \(doomed) deleting")
            try await b.waitFor("done write \(doomed)")
            #expect(
                try await a.settledPresenterEvents("D", count: 3) == [
                    "relinquishToWriter", "accommodateDeletion", "reacquire",
                ]
            )
            #expect(!FileManager.default.fileExists(atPath: doomed))

            try b.send("move \(original) \(moved)")
            try await b.waitFor("done move \(original) \(moved)")
            #expect(
                try await a.settledPresenterEvents("M", count: 3) == [
                    "relinquishToWriter", "didMove \(moved)", "reacquire",
                ]
            )
            #expect(FileManager.default.fileExists(atPath: moved))

            // The daemon follows the presenter to its new path.
            try b.send("write \(moved) again")
            try await b.waitFor("done write \(moved)")
            #expect(
                try await a.settledPresenterEvents("M", count: 6) == [
                    "relinquishToWriter", "didMove \(moved)", "reacquire", "relinquishToWriter", "didChange",
                    "reacquire",
                ]
            )
            #expect(a.presenterEvents("D").count == 3)
        }
    }

    @Test("A folder presenter in another process: asked before a deletion, one subitemDidMove per move, new items")
    func folderPresenterAcrossProcesses() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let folder = env.path("folder")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let doomed = folder + "/doomed.txt"
            let original = folder + "/original.txt"
            let moved = folder + "/moved.txt"
            try writeText("bye", toFile: doomed)
            try writeText("text", toFile: original)
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("F", folder)

            try b.send("write \(doomed) deleting")
            try await b.waitFor("done write \(doomed)")
            try b.send("move \(original) \(moved)")
            try await b.waitFor("done move \(original) \(moved)")
            try b.send("write \(folder)/new.txt hello")
            try await b.waitFor("done write \(folder)/new.txt")
            #expect(
                try await a.settledPresenterEvents("F", count: 6) == [
                    "accommodateSubitemDeletion \(doomed)", "subitemDidChange \(doomed)",
                    "accommodateSubitemDeletion \(moved)", "subitemDidMove \(original) \(moved)",
                    "subitemDidChange \(folder)/new.txt", "subitemDidAppear \(folder)/new.txt",
                ]
            )
        }
    }

    // MARK: Who waits for whom, across processes (docs/SEMANTICS.md §2)

    @Test("Readers share across processes; a writer waits for readers and readers wait for a writer")
    func readersShareAndAWriterExcludes() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "v1")
            let b = try await env.host("B")
            let c = try await env.host("C")

            // A third client holds a read (fc-testhost cannot hold one): C's read is granted beside it...
            let reader = try RawClient(socket: env.socket)
            try await reader.handshake()
            try reader.send(try claimFrame(1, doc, .read([])))
            let grant = try await reader.nextFrame()
            guard case .granted(let granted)? = grant?.payload else {
                Issue.record("expected Granted, got \(String(describing: grant?.payload))")
                return
            }
            #expect(granted.claimID == 1)
            try c.send("read \(doc)")
            try await c.waitFor("done read \(doc) v1")

            // ...but B's write waits for it,
            try b.send("write \(doc) v2 hold")
            #expect(try await b.staysWithout("granted write"), "B's write was granted while another process read")
            try reader.send(Filecoord_V1_Frame(.finishClaim(Filecoord_V1_FinishClaim(claim: ClaimID(1), created: []))))
            try await b.waitFor("holding write \(doc)")

            // and C's next read waits for B's write.
            try c.send("read \(doc)")
            #expect(try await c.staysWithout("granted read", count: 2), "C's read was granted while B held a write")
            try b.send("release")
            let writeDone = try await b.waitFor("done write \(doc)")
            let readGranted = try await c.waitFor("granted read \(doc)", count: 2)
            #expect(writeDone.round <= readGranted.round, "C's read was granted before B's accessor returned")
            #expect(try await c.waitFor("done read \(doc)", count: 2).text == "done read \(doc) v2")
        }
    }

    // MARK: Processes come and go (docs/SEMANTICS.md §7)

    @Test("kill -9 of a claim holder releases its claim at once; the daemon logs it and keeps serving")
    func killedClaimHolderReleasesItsClaim() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            let doc = try env.file("doc.txt", "v1")
            let b = try await env.host("B")
            let c = try await env.host("C")

            try b.send("write \(doc) v2 hold")
            try await b.waitFor("holding write \(doc)")
            let clientB = try await daemon.clientID(ofPID: b.pid)
            try c.send("read \(doc)")
            #expect(try await c.staysWithout("granted read"), "C's read was granted while B held a write")

            let killed = try await b.kill9()
            let granted = try await c.waitFor("granted read \(doc)")
            // At once (milliseconds alone; 10 s leaves room for the first test phase's load): without the release
            // C waits for ever, and `waitFor` gives up at 30 s.
            #expect(granted.time - killed < .seconds(10), "C waited \(granted.time - killed) after B died")
            try await c.waitFor("done read \(doc)")

            try await eventually("the daemon to log that \(clientB) disconnected:\n\(daemon.log())") {
                daemon.log().split(separator: "\n").contains {
                    $0.contains("\(clientB) ") && $0.contains("client disconnected")
                }
            }
            let d = try await env.host("D")
            try d.send("write \(doc) v3")
            try await d.waitFor("done write \(doc)")
            #expect(try String(contentsOfFile: doc, encoding: .utf8) == "v3")
        }
    }

    @Test("kill -9 of a presenter that is being asked lets the waiting writer through at once")
    func killedPresenterAnswersForItself() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon(presenterTimeout: "infinity")
            let doc = try env.file("doc.txt", "v1")
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("A", doc, "never-answer")

            try b.send("write \(doc) v2")
            try await a.waitFor("presenter A relinquishToWriter")
            #expect(try await b.staysWithout("granted write"), "B's write was granted before A answered")

            let killed = try await a.kill9()
            let granted = try await b.waitFor("granted write \(doc)")
            // The presenter timeout is infinite: without the daemon answering for the dead presenter B waits for ever.
            #expect(granted.time - killed < .seconds(10), "B waited \(granted.time - killed) after A died")
            try await b.waitFor("done write \(doc)")
        }
    }

    // MARK: Stuck presenters (docs/SEMANTICS.md §6)

    @Test("A presenter that never answers counts as having relinquished after --presenter-timeout")
    func presenterTimeout() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon(presenterTimeout: "1")
            let doc = try env.file("doc.txt", "v1")
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("A", doc, "never-answer")

            let sent = ContinuousClock.now
            try b.send("write \(doc) v2")
            try await a.waitFor("presenter A relinquishToWriter")
            let granted = try await b.waitFor("granted write \(doc)")
            let waited = granted.time - sent
            #expect(waited >= .milliseconds(800) && waited <= .seconds(5), "B was granted after \(waited)")
            try await b.waitFor("done write \(doc)")
            try await daemon.waitForLog("presenter did not answer in time")
        }
    }

    // MARK: The daemon goes away (docs/SEMANTICS.md §7)

    @Test("kill -9 of the daemon fails a waiting call with connectionLost; the next call restarts the daemon")
    func killedDaemonFailsWaitersAndIsRestarted() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon(presenterTimeout: "infinity")
            let doc = try env.file("doc.txt", "v1")
            let other = try env.file("other.txt", "v1")
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("A", doc, "never-answer")

            try b.send("write \(doc) v2")
            try await a.waitFor("presenter A relinquishToWriter")
            #expect(try await b.staysWithout("granted write"))

            let killed = ContinuousClock.now
            daemon.signal(SIGKILL)
            let line = try await b.waitFor("failed write \(doc)")
            // The presenter timeout is infinite: a call that does not see the connection end waits for ever.
            #expect(line.time - killed < .seconds(10), "B's call failed \(line.time - killed) after the daemon died")
            let failure = try #require(FailedCall(line.text), "unparsable: \(line.text)")
            #expect(failure.domain == "FileCoordinationErrorDomain" && failure.code == 2, "\(failure)")
            #expect(!b.lines.contains { $0.text.hasPrefix("granted write") })
            _ = try await daemon.waitForExit()

            // The next call reconnects, starting a daemon (FILECOORDD_PATH is set).
            try b.send("write \(other) v2")
            try await b.waitFor("done write \(other)", timeout: .seconds(15))
            let restarted = try #require(env.lockedDaemonPID())
            #expect(restarted != daemon.pid)
            #expect(kill(restarted, 0) == 0, "the restarted daemon \(restarted) is not running")
        }
    }

    @Test("Malformed clients are disconnected one by one while real clients keep coordinating")
    func malformedClientsAreDisconnected() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            let doc = try env.file("doc.txt", "zero")
            let a = try await env.host("A")
            let b = try await env.host("B")
            try await a.present("A", doc)
            try b.send("write \(doc) one")
            try await b.waitFor("done write \(doc)")

            let random = seededBytes(64, seed: 0x5EED)
            var probe = FrameDecoder(accepting: .toDaemon)
            #expect(throws: ProtocolError.self) { _ = try probe.feed([0, 0, 0, 64] + random) }
            var newerHello = Filecoord_V1_Hello(clientName: "from-the-future", pid: ProcessIdentity.processID)
            newerHello.protocolVersion = 99
            let wrongWay = Filecoord_V1_Frame(.granted(Filecoord_V1_Granted()))
            let encoder = FrameEncoder()
            let cases: [BadClient] = [
                BadClient("text", Array("hello filecoordd\n".utf8)),
                BadClient("length 0xFFFFFFFF", [0xFF, 0xFF, 0xFF, 0xFF]),
                BadClient("length 0", [0, 0, 0, 0]),
                BadClient("64 random bytes", [0, 0, 0, 64] + random),
                BadClient("RequestClaim before Hello", try encoder.encode(try claimFrame(1, doc, .write([])))),
                BadClient("a message for clients", try encoder.encode(wrongWay)),
                BadClient(
                    "Hello of protocol 99",
                    try encoder.encode(Filecoord_V1_Frame(.hello(newerHello))),
                    refused: true
                ),
                BadClient("random bytes after Hello", [0, 0, 0, 64] + random, handshake: true),
            ]
            var clients: [RawClient] = []
            for item in cases {
                let client = try RawClient(socket: env.socket)
                if item.handshake { try await client.handshake() }
                clients.append(client)
            }
            for (client, item) in zip(clients, cases) { try client.send(item.bytes) }
            // Meanwhile, real clients coordinate (one call at a time: fc-testhost runs each call on its own thread).
            try b.send("write \(doc) two")
            try await b.waitFor("done write \(doc)", count: 2)
            try b.send("read \(doc)")

            for (client, item) in zip(clients, cases) {
                #expect(try await client.waitForClose(timeout: .seconds(5)), "the daemon kept the \(item.name) client")
                let last = client.frames.last?.payload
                if item.refused {
                    guard case .refused(let refused)? = last else {
                        Issue.record("\(item.name): expected Refused, got \(String(describing: last))")
                        continue
                    }
                    #expect(refused.reason.contains("99"), "\(refused.reason)")
                } else {
                    guard case .protocolError? = last else {
                        Issue.record("\(item.name): expected ProtocolError, got \(String(describing: last))")
                        continue
                    }
                }
            }

            let read = try await b.waitFor("done read \(doc)")
            #expect(read.text == "done read \(doc) two")
            let perWrite = ["relinquishToWriter", "didChange", "reacquire"]
            let perRead = ["relinquishToReader", "save", "reacquire"]
            #expect(try await a.settledPresenterEvents("A", count: 9) == perWrite + perWrite + perRead)

            // A process that connects afterwards coordinates as usual.
            let c = try await env.host("C")
            try c.send("write \(doc) three")
            try await c.waitFor("done write \(doc)")
            #expect(try await a.settledPresenterEvents("A", count: 12) == perWrite + perWrite + perRead + perWrite)
            #expect(daemon.isRunning)
            #expect(daemon.log().contains("closing a connection before its handshake"))
            #expect(daemon.log().contains("closing a connection:"))
        }
    }

    @Test("SIGTERM fails a waiting call with a clear error and removes the socket")
    func gracefulShutdown() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon(presenterTimeout: "infinity")
            let doc = try env.file("doc.txt", "v1")
            // Neither may start a daemon: A, which still presents, would restart one at once, and its new socket
            // would hide whether this one removed its own.
            let a = try await env.host("A", mayStartDaemon: false)
            let b = try await env.host("B", mayStartDaemon: false)
            try await a.present("A", doc, "never-answer")

            try b.send("write \(doc) v2")
            try await a.waitFor("presenter A relinquishToWriter")
            #expect(try await b.staysWithout("granted write"))

            daemon.signal(SIGTERM)
            let line = try await b.waitFor("failed write \(doc)", timeout: .seconds(5))
            let failure = try #require(FailedCall(line.text), "unparsable: \(line.text)")
            #expect(failure.domain == "FileCoordinationErrorDomain" && failure.code == 2, "\(failure)")
            #expect(failure.message.contains("shutting down") || failure.message.contains("lost"), "\(failure)")
            #expect(try await daemon.waitForExit() == 0, "\(daemon.log())")
            #expect(!FileManager.default.fileExists(atPath: env.socket), "the socket outlived the daemon")
            #expect(!b.lines.contains { $0.text.hasPrefix("granted write") })
        }
    }

    @Test("A second daemon on the same socket exits non-zero naming the running daemon's pid")
    func secondDaemonIsRefused() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            let (status, output) = try await env.runDaemonToExit(["--foreground", "--socket", env.socket])
            #expect(status != 0)
            #expect(output.contains("another filecoordd (pid \(daemon.pid))"), "\(output)")

            // The first daemon still serves the socket.
            #expect(daemon.isRunning)
            #expect(env.lockedDaemonPID() == daemon.pid)
            let doc = try env.file("doc.txt", "v1")
            let c = try await env.host("C")
            try c.send("write \(doc) v2")
            try await c.waitFor("done write \(doc)")
        }
    }
}
