// fcdump against a private filecoordd with known state: a presenter, a held write and a read waiting for it.

import FCProtocol
import Foundation
import Testing

@Suite(.timeLimit(.minutes(1)))
struct FcdumpTests {
    /// Checks the dump's JSON against docs/FCDUMP-SCHEMA.md: every required key, with its type.
    private func checkSchema(_ dump: [String: Any]) throws {
        func require<T>(_ object: [String: Any], _ key: String, _ type: T.Type, _ context: String) throws -> T {
            guard let value = object[key] else { throw HarnessError(description: "\(context): no \"\(key)\"") }
            guard let typed = value as? T else {
                throw HarnessError(description: "\(context).\(key) is \(Swift.type(of: value)), not \(T.self)")
            }
            return typed
        }
        func optional<T>(_ object: [String: Any], _ key: String, _ type: T.Type, _ context: String) throws {
            guard let value = object[key] else { throw HarnessError(description: "\(context): no \"\(key)\"") }
            guard value is NSNull || value is T else {
                throw HarnessError(description: "\(context).\(key) is \(Swift.type(of: value)), not \(T.self)?")
            }
        }
        #expect(try require(dump, "schemaVersion", Int.self, "dump") == 1)
        _ = try require(dump, "daemonPID", Int.self, "dump")
        _ = try require(dump, "nodeCount", Int.self, "dump")
        _ = try require(dump, "deadlocks", [String].self, "dump")
        // Issue 13: the daemon watches with inotify; the watcher's health is there.
        let watcher = try require(dump, "watcher", [String: Any].self, "dump")
        _ = try require(watcher, "watches", Int.self, "watcher")
        _ = try require(watcher, "overflows", Int.self, "watcher")
        _ = try require(watcher, "recrawls", Int.self, "watcher")
        _ = try require(watcher, "retiredWatches", Int.self, "watcher")
        _ = try require(watcher, "renewals", Int.self, "watcher")
        try optional(watcher, "maximumWatches", Int.self, "watcher")
        for directory in try require(watcher, "directories", [[String: Any]].self, "watcher") {
            _ = try require(directory, "path", String.self, "watched directory")
            _ = try require(directory, "presenters", Int.self, "watched directory")
        }
        for client in try require(dump, "clients", [[String: Any]].self, "dump") {
            _ = try require(client, "id", Int.self, "client")
            _ = try require(client, "pid", Int.self, "client")
            _ = try require(client, "name", String.self, "client")
            _ = try require(client, "presenters", [Int].self, "client")
            _ = try require(client, "claims", [Int].self, "client")
            _ = try require(client, "arguments", [String].self, "client")
        }
        for presenter in try require(dump, "presenters", [[String: Any]].self, "dump") {
            _ = try require(presenter, "id", Int.self, "presenter")
            _ = try require(presenter, "client", Int.self, "presenter")
            try optional(presenter, "path", String.self, "presenter")
            _ = try require(presenter, "callbacks", [String].self, "presenter")
            _ = try require(presenter, "isPackage", Bool.self, "presenter")
            try optional(presenter, "serialQueue", Int.self, "presenter")
            _ = try require(presenter, "otherNames", [String].self, "presenter")
        }
        for claim in try require(dump, "claims", [[String: Any]].self, "dump") {
            _ = try require(claim, "id", Int.self, "claim")
            _ = try require(claim, "client", Int.self, "claim")
            #expect(["waiting", "preparing", "granted"].contains(try require(claim, "phase", String.self, "claim")))
            _ = try require(claim, "purpose", String.self, "claim")
            try optional(claim, "filePresenter", Int.self, "claim")
            try optional(claim, "fromPresenterQueue", Int.self, "claim")
            _ = try require(claim, "isPreparation", Bool.self, "claim")
            #expect(try require(claim, "ageSeconds", Double.self, "claim") >= 0)
            _ = try require(claim, "blockedBy", [Int].self, "claim")
            for awaiting in try require(claim, "awaiting", [[String: Any]].self, "claim") {
                _ = try require(awaiting, "request", Int.self, "awaiting")
                _ = try require(awaiting, "presenter", Int.self, "awaiting")
            }
            for item in try require(claim, "items", [[String: Any]].self, "claim") {
                _ = try require(item, "path", String.self, "item")
                #expect(["read", "write"].contains(try require(item, "kind", String.self, "item")))
                _ = try require(item, "options", [String].self, "item")
            }
        }
        func checkNode(_ node: [String: Any]) throws {
            _ = try require(node, "name", String.self, "node")
            _ = try require(node, "path", String.self, "node")
            _ = try require(node, "presenters", [Int].self, "node")
            _ = try require(node, "claims", [Int].self, "node")
            for child in try require(node, "children", [[String: Any]].self, "node") { try checkNode(child) }
        }
        try checkNode(try require(dump, "tree", [String: Any].self, "dump"))
        for edge in try require(dump, "waitFor", [[String: Any]].self, "dump") {
            _ = try require(edge, "from", String.self, "edge")
            _ = try require(edge, "to", String.self, "edge")
            _ = try require(edge, "label", String.self, "edge")
        }
        let statistics = try require(dump, "statistics", [String: Any].self, "dump")
        for key in [
            "claimsRequested", "claimsGranted", "claimsFailed", "messagesSent", "presenterTimeouts", "deadlocksBroken",
            "longWaits", "holdsEnded",
        ] {
            _ = try require(statistics, key, Int.self, "statistics")
        }
    }

    @Test("fcdump shows presenters, a granted write and the read it blocks, as text, JSON, DOT and clients")
    func dumpsKnownState() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "v1")
            let a = try await env.host("A")
            let b = try await env.host("B")
            let c = try await env.host("C")
            try await a.present("P", doc)
            try b.send("write \(doc) x hold")
            try await b.waitFor("holding write \(doc)")
            try c.send("read \(doc)")
            #expect(try await c.staysWithout("granted read"), "C's read was granted while B held a write")

            // The tree: the document, its presenter, the granted write and the waiting read with its blocker.
            let text = try await env.runTool("fcdump", [])
            #expect(text.status == 0, "fcdump failed: \(text.error)")
            #expect(text.output.contains(doc), "no \(doc) in:\n\(text.output)")
            #expect(text.output.contains("presenter presenter#"), "no presenter in:\n\(text.output)")
            #expect(text.output.contains("pid \(a.pid)"), "no presenter's pid in:\n\(text.output)")
            #expect(text.output.contains("granted claim#"), "no granted claim in:\n\(text.output)")
            #expect(text.output.contains("write by"), "no write in:\n\(text.output)")
            #expect(text.output.contains("waiting claim#"), "no waiting claim in:\n\(text.output)")
            #expect(text.output.contains("blocked by granted claim#"), "no blocker in:\n\(text.output)")
            #expect(!text.output.contains("\u{1B}["), "colours when standard output is not a terminal")

            // The JSON follows the schema and says the same.
            let json = try await env.runTool("fcdump", ["--json"])
            #expect(json.status == 0, "fcdump --json failed: \(json.error)")
            let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8))
            let dump = try #require(object as? [String: Any])
            try checkSchema(dump)
            let claims = try #require(dump["claims"] as? [[String: Any]])
            let write = try #require(claims.first { $0["phase"] as? String == "granted" })
            let read = try #require(claims.first { $0["phase"] as? String == "waiting" })
            let writeID = try #require(write["id"] as? Int)
            let readID = try #require(read["id"] as? Int)
            #expect(read["blockedBy"] as? [Int] == [writeID])
            // The write has been held at least through C's quiet time: its age says so.
            #expect((write["ageSeconds"] as? Double ?? 0) >= 0.3, "\(write)")
            #expect((write["items"] as? [[String: Any]])?.first?["kind"] as? String == "write")
            #expect((read["items"] as? [[String: Any]])?.first?["path"] as? String == doc)
            let clients = try #require(dump["clients"] as? [[String: Any]])
            for host in [a, b, c] {
                #expect(clients.contains { $0["pid"] as? Int == Int(host.pid) }, "no client with pid \(host.pid)")
            }
            let presenters = try #require(dump["presenters"] as? [[String: Any]])
            #expect(presenters.count == 1 && presenters.first?["path"] as? String == doc)

            // The wait-for graph: the read waits for the write.
            let graph = try await env.runTool("fcdump", ["--graph"])
            #expect(graph.status == 0, "fcdump --graph failed: \(graph.error)")
            #expect(graph.output.hasPrefix("digraph"), "not DOT:\n\(graph.output)")
            #expect(
                graph.output.contains("\"claim#\(readID)\" -> \"claim#\(writeID)\""),
                "no edge from the read to the write in:\n\(graph.output)"
            )

            // Clients: each host with its pid; deadlocks: none yet.
            let listed = try await env.runTool("fcdump", ["clients"])
            #expect(listed.status == 0, "fcdump clients failed: \(listed.error)")
            for host in [a, b, c] {
                #expect(listed.output.contains("pid \(host.pid)"), "no pid \(host.pid) in:\n\(listed.output)")
            }
            let deadlocks = try await env.runTool("fcdump", ["deadlocks"])
            #expect(deadlocks.status == 0 && deadlocks.output.contains("no recent deadlock reports"))

            // --path: a subtree without the document shows none of it.
            let elsewhere = try await env.runTool("fcdump", ["--path", env.path("elsewhere")])
            #expect(elsewhere.status == 0 && !elsewhere.output.contains(doc), "\(elsewhere.output)")

            // Dumping changed nothing: the read still waits, and is granted when the write ends.
            #expect(try await c.staysWithout("granted read"), "the dumps disturbed the daemon")
            try b.send("release")
            try await b.waitFor("done write \(doc)")
            try await c.waitFor("done read \(doc) x")
            let after = try await env.runTool("fcdump", ["--json"])
            let afterDump = try #require(
                try JSONSerialization.jsonObject(with: Data(after.output.utf8)) as? [String: Any]
            )
            #expect((afterDump["claims"] as? [Any])?.isEmpty == true, "claims left after both ended: \(after.output)")
        }
    }

    @Test("fcdump --watch refreshes until stopped, shows new state, and reports a daemon that went away")
    func watchRefreshes() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            let doc = try env.file("doc.txt", "v1")
            let watch = try env.startTool("fcdump", ["--watch", "--interval", "0.1"])
            try await watch.waitForOutput("(every 0.1s; ^C to stop)", count: 2)
            #expect(!watch.output.contains("presenter#"), "a presenter before any was registered:\n\(watch.output)")

            // A presenter registered now appears in a later refresh.
            let a = try await env.host("A")
            try await a.present("P", doc)
            try await watch.waitForOutput("presenter presenter#")
            #expect(watch.output.contains("pid \(a.pid)"))
            #expect(!watch.output.contains("\u{1B}"), "escape codes when standard output is not a terminal")

            // The daemon goes away (its only client first, so that none restarts it): each refresh says so, and
            // fcdump keeps watching.
            try await a.kill9()
            daemon.signal(SIGKILL)
            _ = try await daemon.waitForExit()
            try await watch.waitForOutput("no filecoordd is running", count: 2)
            #expect(watch.process.stillRuns, "fcdump --watch stopped when the daemon went away")
            kill(watch.process.processIdentifier, SIGTERM)
            try await eventually("fcdump --watch to stop on SIGTERM") { !watch.process.stillRuns }
        }
    }

    @Test("A dump bigger than a frame (2,000 presenters, over 1 MiB of JSON) arrives whole, in several frames")
    func aBigDumpArrivesWhole() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let a = try await env.host("A")
            let count = 2_000
            for index in 0..<count { try a.send("present P\(index) \(env.path("d\(index % 50)/f\(index).txt"))") }
            try await a.waitFor("presenting P", count: count, timeout: .seconds(30))
            try await a.barrier()
            let json = try await env.runTool("fcdump", ["--json"], timeout: .seconds(30))
            #expect(json.status == 0, "fcdump --json failed: \(json.error)")
            let dump = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
            try checkSchema(dump)
            #expect((dump["presenters"] as? [Any])?.count == count)
            #expect(json.output.utf8.count > 1_048_576, "the dump is only \(json.output.utf8.count) bytes")
            let tree = try await env.runTool("fcdump", [], timeout: .seconds(30))
            #expect(tree.output.contains("\(count) presenters"), "\(tree.output.prefix(300))")
        }
    }

    @Test("fcdump clients shows each client's command line")
    func clientsShowTheirCommandLine() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let a = try await env.host("A", arguments: ["it's here", "plain-arg"])
            try await a.barrier()
            let json = try await env.runTool("fcdump", ["--json"])
            let dump = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
            let clients = try #require(dump["clients"] as? [[String: Any]])
            let host = try #require(clients.first { $0["pid"] as? Int == Int(a.pid) })
            let arguments = try #require(host["arguments"] as? [String])
            #expect(
                arguments == [try Products.executable("fc-testhost").path, "it's here", "plain-arg"],
                "\(arguments)"
            )
            // As a shell would need it: a quote and a space are quoted, a plain argument is not.
            let listed = try await env.runTool("fcdump", ["clients"])
            #expect(
                listed.output.contains(
                    "command: \(try Products.executable("fc-testhost").path) 'it'\\''s here' plain-arg"
                ),
                "\(listed.output)"
            )
        }
    }

    @Test("fcdump escapes the control characters a daemon sends (issue 29): no escape sequence reaches the terminal")
    func controlCharactersAreEscaped() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            // A command line with a terminal title sequence (C0), a C1 CSI and a bidirectional override.
            let a = try await env.host("A", arguments: ["\u{1B}]0;owned\u{07}", "\u{9B}31m", "\u{202E}txt"])
            try await a.barrier()
            let listed = try await env.runTool("fcdump", ["clients"])
            #expect(listed.status == 0, "\(listed.error)")
            for raw in ["\u{1B}]0", "\u{07}", "\u{9B}", "\u{202E}"] {
                #expect(!listed.output.contains(raw), "a raw control character in:\n\(listed.output.debugDescription)")
            }
            #expect(listed.output.contains("\\u{1B}]0;owned\\u{7}"), "\(listed.output.debugDescription)")
            #expect(listed.output.contains("\\u{9B}31m"), "\(listed.output.debugDescription)")
            // The JSON keeps the values exact, escaped the JSON way.
            let json = try await env.runTool("fcdump", ["--json"])
            #expect(
                !json.output.unicodeScalars.contains {
                    $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value)
                }
            )
            let dump = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
            let clients = try #require(dump["clients"] as? [[String: Any]])
            let host = try #require(clients.first { $0["pid"] as? Int == Int(a.pid) })
            #expect(
                (host["arguments"] as? [String])?.dropFirst() == ["\u{1B}]0;owned\u{07}", "\u{9B}31m", "\u{202E}txt"]
            )
        }
    }

    @Test("fcdump gives up on a daemon that does not answer after --timeout, and says so")
    func timeoutOnASilentDaemon() async throws {
        try await TestEnvironment.run { env in
            let listener = try SilentListener(path: env.path("silent.socket"))
            let start = ContinuousClock.now
            let result = try await env.runTool("fcdump", ["--socket", listener.path, "--timeout", "1"])
            #expect(result.status != 0)
            #expect(result.error.contains("did not answer within 1 s"), "\(result.error)")
            // Bounded, not timed: starting a process took 8.4 s on the loaded machine (a hang would not end at all).
            #expect(ContinuousClock.now - start < .seconds(30), "fcdump waited past its timeout")
            let invalid = try await env.runTool("fcdump", ["--socket", listener.path, "--timeout", "0"])
            #expect(invalid.status != 0 && invalid.error.contains("--timeout"), "\(invalid.error)")
        }
    }

    @Test("A second DumpRequest before the first is answered is a protocol error; the daemon serves on")
    func oneDumpAtATimePerConnection() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let raw = try RawClient(socket: env.socket)
            try await raw.handshake(name: "fcdump")
            let request = try FrameEncoder().encode(Filecoord_V1_Frame(.dumpRequest(Filecoord_V1_DumpRequest())))
            // One write: the daemon reads both before the first dump is encoded.
            try raw.send(request + request)
            #expect(try await raw.waitForClose(), "the daemon kept the connection")
            let reasons = raw.frames.compactMap { frame -> String? in
                if case .protocolError(let error)? = frame.payload { return error.reason }
                return nil
            }
            #expect(
                reasons.contains { $0.contains("DumpRequest sent before the previous dump was answered") },
                "\(reasons)"
            )
            let dump = try await env.runTool("fcdump", ["--json"])
            #expect(dump.status == 0, "\(dump.error)")
        }
    }

    @Test("fcdump escapes undecodable bytes and control characters, in the tree and in JSON")
    func fcdumpEscapesNames() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let raw = try RawClient(socket: env.socket)
            try await raw.handshake(name: "odd-names")
            let folder = Array(env.path("odd").utf8)
            let names: [[UInt8]] = [
                Array("bad".utf8) + [0xFF], Array("bad".utf8) + [0xFE], Array("two\nlines\u{1}".utf8),
            ]
            for (index, name) in names.enumerated() {
                var register = Filecoord_V1_RegisterPresenter()
                register.presenterID = UInt64(index + 1)
                register.path = Data(folder + [0x2F] + name)
                register.callbacks = 0
                try raw.send(Filecoord_V1_Frame(.registerPresenter(register)))
            }
            let tree = try await env.runTool("fcdump", [])
            #expect(tree.status == 0, "\(tree.error)")
            #expect(tree.output.contains("bad\\xff"), "\(tree.output)")
            #expect(tree.output.contains("bad\\xfe"), "\(tree.output)")
            #expect(tree.output.contains("two\\x0alines\\x01"), "\(tree.output)")
            #expect(!tree.output.contains("\u{FFFD}"))
            let json = try await env.runTool("fcdump", ["--json"])
            #expect(json.output.contains("odd/bad\\\\xff"), "\(json.output)")
            #expect(json.output.contains("odd/bad\\\\xfe"), "\(json.output)")
            #expect(!json.output.contains("\u{FFFD}"))
        }
    }

    @Test("fcdump without a daemon fails clearly, names the socket, and starts none")
    func noDaemon() async throws {
        try await TestEnvironment.run { env in
            let socket = env.path("nobody/socket")
            let result = try await env.runTool("fcdump", ["--socket", socket])
            #expect(result.status != 0)
            #expect(result.error.contains(socket), "the socket is not named in: \(result.error)")
            #expect(result.error.contains("no filecoordd is running"), "unclear error: \(result.error)")
            #expect(result.error.contains("filecoordd"), "no hint to start one: \(result.error)")
            #expect(!FileManager.default.fileExists(atPath: socket), "fcdump started a daemon")
            // The default socket comes from FILECOORDD_SOCKET: the test's, where nothing listens either.
            let byDefault = try await env.runTool("fcdump", ["--json"])
            #expect(byDefault.status != 0 && byDefault.error.contains(env.socket), "\(byDefault.error)")
            #expect(!FileManager.default.fileExists(atPath: env.socket), "fcdump started a daemon")
        }
    }
}
