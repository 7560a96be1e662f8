// Presenters across hosts (issue 41) with real processes: the etcd cluster and the two daemons of
// ClusterEndToEndTests (`ClusterHosts`), an `fc-testhost` presenter on host B, coordinated writes, moves and deletes
// by clients of host A. Each test fails without the rule it names.

import FCFileSystemPolicy
import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

@Suite(.serialized, .timeLimit(.minutes(3)))
struct ClusterPresenterEndToEndTests {
    /// Two hosts that do not watch with inotify (they share one kernel: ``ClusterHosts/start(in:watching:hostB:)``).
    private func withHosts(
        hostB: [String] = [],
        _ body: (TestEnvironment, ClusterHosts) async throws -> Void
    ) async throws {
        try await ClusterHosts.run(watching: false, hostB: hostB, body)
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
            // A script's write on host A (fccoord): asked first, told after, as for an app's.
            let script = try await environment.runTool(
                "fccoord",
                ["write", doc, "--", "/bin/sh", "-c", "echo v3 > \"$FCCOORD_PATH_1\""],
                environment: ClusterHosts.client(of: hosts.socketA)
            )
            #expect(script.status == 0, "\(script.error)")
            let scripted = try await b.settledPresenterEvents("P", count: 9)
            #expect(Array(scripted.dropFirst(6)) == ["relinquishToWriter", "didChange", "reacquire"], "\(scripted)")
            // The letters went directly between the daemons, none through etcd, both ways.
            let mailA = try await mail(of: hosts.socketA, in: environment)
            let mailB = try await mail(of: hosts.socketB, in: environment)
            #expect(mailA.address?.hasPrefix("127.0.0.1:") == true, "\(mailA)")
            #expect(mailA.direct >= 9 && mailA.etcd == 0, "host A's letters: \(mailA)")
            #expect(mailB.direct >= 3 && mailB.etcd == 0, "host B's replies: \(mailB)")
        }
    }

    /// What `fcdump --json` on host `socket` says of its mail: its mailbox, and the letters it sent each way.
    private func mail(
        of socket: String,
        in environment: TestEnvironment
    ) async throws -> (address: String?, direct: Int, etcd: Int) {
        let dump = try await environment.runTool("fcdump", ["--json"], environment: ClusterHosts.client(of: socket))
        let json = try JSONSerialization.jsonObject(with: Data(dump.output.utf8)) as? [String: Any]
        let cluster = try #require(json?["cluster"] as? [String: Any], "\(dump.output)")
        return (
            cluster["mailAddress"] as? String,
            try #require(cluster["lettersDirect"] as? Int, "\(cluster)"),
            try #require(cluster["lettersThroughEtcd"] as? Int, "\(cluster)")
        )
    }

    /// What `fcdump --json` on host `socket` says of the mail's series it keeps: read, and sent.
    private func mailSeries(of socket: String, in environment: TestEnvironment) async throws -> (read: Int, sent: Int) {
        let dump = try await environment.runTool("fcdump", ["--json"], environment: ClusterHosts.client(of: socket))
        let json = try JSONSerialization.jsonObject(with: Data(dump.output.utf8)) as? [String: Any]
        let cluster = try #require(json?["cluster"] as? [String: Any], "\(dump.output)")
        return (
            try #require(cluster["mailSeriesRead"] as? Int, "\(cluster)"),
            try #require(cluster["mailSeriesSent"] as? Int, "\(cluster)")
        )
    }

    /// Stop 68: the series of the mail (the next number a host reads from each other host's session, and the last it
    /// sent each) were kept for the daemon's life, one more for every session of every host that ever mailed it. Now
    /// a series goes once etcd says its other session ended.
    @Test func theMailSeriesOfAHostWhoseSessionEndedAreForgotten() async throws {
        try await withHosts { environment, hosts in
            let doc = try environment.file("share/doc.txt", "v1")
            let b = try await client("B", of: hosts.socketB, in: environment)
            try await presentOnB("P", doc, by: b, hosts: hosts)
            let a = try await client("A", of: hosts.socketA, in: environment)
            try a.send("write \(doc) v2")
            try await a.waitFor("done write \(doc)")
            // Host A sent host B's presenter its messages and read its replies: a series each way.
            let kept = try await mailSeries(of: hosts.socketA, in: environment)
            #expect(kept.read == 1 && kept.sent == 1, "\(kept)")
            kill(hosts.b.pid, SIGKILL)
            // Host B's session ends 2 s later; host A checks every 4 s.
            let deadline = ContinuousClock.now + .seconds(30)
            var left = kept
            while left != (0, 0) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(250))
                left = try await mailSeries(of: hosts.socketA, in: environment)
            }
            #expect(left == (0, 0), "host A still keeps the mail series of host B's ended session: \(left)")
        }
    }

    /// A host that does not listen (`--cluster-listen off`, or a daemon from before direct mail) gets its letters
    /// through etcd, and still answers directly to a host that listens.
    @Test func aHostThatDoesNotListenGetsItsLettersThroughEtcd() async throws {
        try await withHosts(hostB: ["--cluster-listen", "off"]) { environment, hosts in
            let doc = try environment.file("share/doc.txt", "v1")
            let b = try await client("B", of: hosts.socketB, in: environment)
            try await presentOnB("P", doc, by: b, hosts: hosts)
            let a = try await client("A", of: hosts.socketA, in: environment)
            try a.send("write \(doc) v2")
            try await a.waitFor("done write \(doc)")
            let written = try await b.settledPresenterEvents("P", count: 3)
            #expect(written == ["relinquishToWriter", "didChange", "reacquire"], "\(written)")
            let mailA = try await mail(of: hosts.socketA, in: environment)
            let mailB = try await mail(of: hosts.socketB, in: environment)
            #expect(mailB.address == nil, "\(mailB)")
            #expect(mailA.direct == 0 && mailA.etcd >= 3, "host A's letters: \(mailA)")
            #expect(mailB.direct >= 1 && mailB.etcd == 0, "host B's replies: \(mailB)")
        }
    }

    /// A connection to a host's mailbox that shows a wrong token is closed, and what it sends is not read.
    @Test func aConnectionWithoutTheTokenIsClosedUnread() async throws {
        try await withHosts { environment, hosts in
            let doc = try environment.file("share/doc.txt", "v1")
            let b = try await client("B", of: hosts.socketB, in: environment)
            try await presentOnB("P", doc, by: b, hosts: hosts)
            let address = try #require(try await mail(of: hosts.socketB, in: environment).address)
            let colon = try #require(address.lastIndex(of: ":"))
            // A hello with a made-up token, then a letter for B's presenters: B closes the connection.
            let script = """
                import json, socket, struct, sys
                def frame(value):
                    data = json.dumps(value).encode()
                    return struct.pack(">I", len(data)) + data
                def closed(s):
                    try:
                        return s.recv(1) == b""
                    except ConnectionResetError:
                        return True
                    except socket.timeout:
                        return False
                address = (sys.argv[1], int(sys.argv[2]))
                s = socket.create_connection(address, timeout=20)
                s.sendall(frame({"version": 1, "token": "00" * 32, "sender": "6869/1"}))
                s.sendall(frame({"number": 1, "batch": {"toLease": "1", "items": [{"presenter": 1, "kind": "didChange"}]}}))
                results = ["closed" if closed(s) else "open"]
                # Before a hello, a frame announced at 4 MB is refused by its first 8 KiB, not buffered (and at once,
                # not at the 5 s a hello may take).
                s = socket.create_connection(address, timeout=2)
                try:
                    s.sendall(struct.pack(">I", 4000000) + b"x" * 8192)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                results.append("closed" if closed(s) else "open")
                open(sys.argv[3], "w").write(" ".join(results))
                """
            let result = environment.path("probe.txt")
            let probe = Process()
            probe.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            probe.arguments = [
                "-c", script, String(address[..<colon]), String(address[address.index(after: colon)...]), result,
            ]
            probe.standardInput = FileHandle.nullDevice
            try probe.run()
            try await eventually("the probe to end") { !probe.stillRuns }
            probe.waitForEnd()
            #expect(try String(contentsOfFile: result, encoding: .utf8) == "closed closed")
            try await hosts.b.waitForLog("a connection to this host's mailbox showed no valid token: closed")
            try await Task.sleep(for: .milliseconds(300))  // A letter read would be there by now.
            #expect(b.lines.filter { $0.text.hasPrefix("presenter P ") }.isEmpty, "\(b.lines)")
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

    /// A presenter published by a host that names items by other path rules (a daemon of another release, played
    /// here by host B's record put again with etcdctl as host C's, of rules revision 99) is not stood in for: its
    /// paths might name items otherwise than this host's. Before, nothing told the two apart.
    @Test func aPresenterOfAHostWithOtherPathRulesIsIgnored() async throws {
        try await withHosts { environment, hosts in
            let doc = try environment.file("share/doc.txt", "v1")
            let b = try await client("B", of: hosts.socketB, in: environment)
            try await presentOnB("P", doc, by: b, hosts: hosts)
            let keyB = try #require(try hosts.keys(of: "hostB").first { $0.contains("/presenters/") })
            let value = try hosts.etcdctl(["get", keyB, "--print-value-only"])
            var record = try #require(
                try JSONSerialization.jsonObject(with: Data(value.utf8)) as? [String: Any],
                "\(value)"
            )
            #expect(record["pathRules"] as? Int == Int(PathRules.revision), "host B's record: \(value)")
            record["pathRules"] = 99
            let keyC = keyB.replacingOccurrences(
                of: "/\(ClusterHosts.hex("hostB"))/",
                with: "/\(ClusterHosts.hex("hostC"))/"
            )
            let json = String(decoding: try JSONSerialization.data(withJSONObject: record), as: UTF8.self)
            _ = try hosts.etcdctl(["put", keyC, json])
            try await hosts.a.waitForLog(
                "a presenter of host hostC is ignored: that host names items by path rules revision 99"
            )
            let dump = try await environment.runTool(
                "fcdump",
                ["clients"],
                environment: ClusterHosts.client(of: hosts.socketA)
            )
            #expect(!dump.output.contains("host hostC"), "\(dump.output)")
            #expect(dump.output.contains("host hostB"), "\(dump.output)")
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
            // Had host A asked the dead host's presenter, the write would have waited the presenter timeout (5 s) and
            // A's arbiter logged that it did not answer (before the grant).
            #expect(!hosts.a.log().contains("did not answer"), "host A asked a presenter of a dead host")
            #expect(ContinuousClock.now - start < .seconds(5), "host A waited for a presenter of a dead host")
        }
    }

    /// Host B mounts the shared folder elsewhere (a bind mount in a mount namespace of its own, where its daemon and
    /// its client run): a move on host A reaches B's presenter in B's spelling.
    @Test(.enabled(if: MountNamespaces.shouldRun))
    func aMoveOnOneHostReachesThePresenterOnTheOtherInItsOwnSpelling() async throws {
        try await TestEnvironment.run { environment in
            let etcd = try await EtcdCluster.start(in: environment.path("etcd"))
            defer { etcd.shutdown() }
            try await MountNamespaces.withOwnFileSystem(environment) { fs, share, view in
                // Host B's mount namespace sees the folder at `view` alone (as a container sees a folder mounted into
                // it), held by a process that sleeps; B's daemon and client join it.
                let holder = Process()
                holder.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
                holder.arguments =
                    Array(MountNamespaces.bound(share, at: view, hiding: fs).dropFirst()) + ["/bin/sleep", "100000"]
                try holder.run()
                defer { holder.terminate() }
                try await eventually("host B's bind mount") {
                    let mounts =
                        (try? String(contentsOfFile: "/proc/\(holder.processIdentifier)/mountinfo", encoding: .utf8))
                        ?? ""
                    return mounts.contains(" \(view) ") && !mounts.contains(" \(fs) ") || !holder.stillRuns
                }
                try #require(holder.stillRuns, "cannot bind-mount the shared folder in a namespace of its own")
                let joining = MountNamespaces.joining(holder.processIdentifier)
                func daemon(
                    _ name: String,
                    _ socket: String,
                    _ folder: String,
                    _ wrapper: [String]
                ) async throws
                    -> DaemonProcess
                {
                    let daemon = try await environment.startDaemon(
                        presenterTimeout: "5",
                        arguments: [
                            "--cluster-endpoints", etcd.clientEndpoints.joined(separator: ","), "--host-name", name,
                            "--cluster-ttl", "\(ClusterHosts.ttl)", "--shared-folder", "docs=\(folder)",
                            "--no-watching",
                        ],
                        socket: socket,
                        wrapper: wrapper
                    )
                    try await daemon.waitForLog("cluster: session open")
                    return daemon
                }
                let socketA = environment.path("hostA/socket")
                let socketB = environment.path("hostB/socket")
                let a = try await daemon("hostA", socketA, share, [])
                let daemonB = try await daemon("hostB", socketB, view, joining)

                let original = share + "/original.txt"
                try writeText("text", toFile: original)
                let b = try await environment.host(
                    "B",
                    mayStartDaemon: false,
                    environment: ClusterHosts.client(of: socketB),
                    wrapper: joining
                )
                try b.send("present M \(view)/original.txt")
                try await b.waitFor("presenting M ")
                do {
                    try await a.waitForLog("cluster: another host presents items in shared folders")
                } catch {
                    throw HarnessError(description: "\(error)\n--- host B ---\n\(daemonB.log())")
                }

                let writer = try await client("A", of: socketA, in: environment)
                try writer.send("move \(original) \(share)/moved.txt")
                try await writer.waitFor("done move \(original)")
                let moves = try await b.settledPresenterEvents("M", count: 3)
                #expect(moves == ["relinquishToWriter", "didMove \(view)/moved.txt", "reacquire"], "\(moves)")
            }
        }
    }

    /// The examples across hosts: `notes` (a `CoordinatedDocument`) edits a file of the shared folder on host A, and
    /// `mirror` on host B keeps that folder in step with a folder of B's own. Typing on A reaches B's copy; a write of
    /// B's copy reaches the editor on A, which reloads.
    @Test func theNotesEditorOnOneHostAndTheMirrorOnTheOtherKeepOneFileInStep() async throws {
        try await withHosts { environment, hosts in
            let path = try environment.file("share/notes.txt", "hello")
            let other = environment.path("b-local")
            try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: false)
            let mirror = try await environment.host(
                "mirror",
                mayStartDaemon: false,
                arguments: [hosts.share, other],
                environment: ClusterHosts.client(of: hosts.socketB),
                executable: "mirror",
                readyLine: "mirror: watching"
            )
            try await eventually("the mirror's first copy") { contents(other + "/notes.txt") == "hello" }
            try await hosts.a.waitForLog("cluster: another host presents items in shared folders")

            var variables = try childEnvironment(socket: hosts.socketA)
            variables["FILECOORDD_PATH"] = "/nonexistent/filecoordd"
            let tmux = TmuxSession(socket: environment.path("tmux.sock"))
            try await tmux.start(
                environment: variables.filter { ["FILECOORDD_SOCKET", "FILECOORDD_PATH"].contains($0.key) },
                command: [try Products.executable("notes").path, "--autosave", "0.2", path]
            )
            do {
                try await tmux.waitForScreen("opened notes.txt")
                try await tmux.keys("End")
                try await tmux.type(" world")
                // Saved on host A, heard by the mirror on host B, copied to B's own folder.
                try await eventually("the mirror's copy of the typed text") {
                    contents(other + "/notes.txt") == "hello world"
                }
                try await mirror.waitFor("mirror: copied notes.txt from this to other")

                // A coordinated write of B's copy: the mirror copies it into the shared folder on host B, and the
                // editor on host A hears it and reloads.
                let tool = try await client("tool", of: hosts.socketB, in: environment)
                try tool.send("write \(other)/notes.txt from-host-b")
                try await tool.waitFor("done write \(other)/notes.txt")
                try await mirror.waitFor("mirror: copied notes.txt from other to this")
                try await tmux.waitForScreen("reloaded: the file changed on disk")
                try await tmux.waitForScreen("from-host-b")
                #expect(contents(path) == "from-host-b")
            } catch {
                await tmux.kill()
                throw error
            }
            await tmux.kill()
        }
    }

    private func contents(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? "<missing>"
    }

    /// `--shared-scan-interval` on host B: a change made without coordination (here by this test, as a program on
    /// another host would; B's daemon does not watch with inotify, as it could not see another host's write) reaches
    /// B's presenter once; a coordinated write on host A reaches it once too, by A's messages, not again by the scan.
    @Test func theSharedScanReportsAChangeMadeWithoutCoordinationOnceAndACoordinatedOneNotAgain() async throws {
        try await withHosts(hostB: ["--shared-scan-interval", "0.1"]) { environment, hosts in
            let doc = try environment.file("share/doc.txt", "v1")
            let b = try await client("B", of: hosts.socketB, in: environment)
            try await presentOnB("P", doc, by: b, hosts: hosts)
            // Two scans at least, so that the first state is known.
            try await Task.sleep(for: .milliseconds(300))
            try writeText("changed without coordination", toFile: doc)
            try await b.waitFor("presenter P didChange")
            #expect(try await b.settledPresenterEvents("P", count: 1) == ["didChange"])

            let a = try await client("A", of: hosts.socketA, in: environment)
            for round in 1...3 {
                try a.send("write \(doc) v\(round + 1)")
                try await a.waitFor("done write \(doc)", count: round)
                let events = try await b.settledPresenterEvents("P", count: 1 + 3 * round)
                #expect(
                    Array(events.suffix(3)) == ["relinquishToWriter", "didChange", "reacquire"]
                        && events.count == 1 + 3 * round,
                    "round \(round): \(events)"
                )
            }
        }
    }

    /// Found by review: a presenter on host B that relinquished with a reacquirer to a write of host A whose daemon
    /// then died never had its reacquirer run (A's reacquire letter never comes). Once A's key is gone from the shared
    /// folder (its session expired), every claim of A there has ended: B runs the reacquirer, as a local claimer's
    /// reacquirers run when its process dies.
    @Test func aPresentersReacquirerRunsWhenTheWritingHostDiesInsideItsWrite() async throws {
        try await withHosts { environment, hosts in
            let doc = try environment.file("share/doc.txt", "v1")
            let b = try await client("B", of: hosts.socketB, in: environment)
            try await presentOnB("P", doc, by: b, hosts: hosts)
            let writer = try await client("A", of: hosts.socketA, in: environment)
            try writer.send("write \(doc) v2 hold")
            try await writer.waitFor("holding write \(doc)")
            try await b.waitFor("presenter P relinquishToWriter")
            kill(hosts.a.pid, SIGKILL)
            // A's session (2 s) expires, its key goes, B runs the reacquirer.
            try await b.waitFor("presenter P reacquire", timeout: .seconds(20))
        }
    }
}
