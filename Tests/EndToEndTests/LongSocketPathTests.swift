// A runtime folder deep in a temporary tree (issue 37): a socket path longer than a Unix socket address holds (108
// bytes with its NUL) works for the library (which starts the daemon on demand), fcdump, fccoord and the preload
// library, reached through its folder as /proc/self/fd/N/NAME; a socket name that cannot be reached even so fails the
// first call at once, with the path, its length and the limit, and starts no daemon.

import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

@Suite struct LongSocketPathTests {
    /// A private folder `depth` levels below the test's folder, and a socket path in it.
    private func deepSocket(_ env: TestEnvironment, name: String = "socket") throws -> String {
        var folder = env.path("runtime")
        for level in 0..<6 { folder += "/a-folder-deep-in-a-temporary-tree-\(level)" }
        try FileManager.default.createDirectory(
            atPath: folder,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        return folder + "/" + name
    }

    /// Stops the daemon serving `socket` (the harness stops only its own socket's).
    private func stopDaemon(at socket: String) {
        guard let text = try? String(contentsOfFile: socket + ".lock", encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return }
        kill(pid, SIGKILL)
    }

    @Test(
        "A socket path over 108 bytes: the daemon starts on demand, and the library, fcdump, fccoord and the preload work"
    )
    func aLongSocketPathWorksEverywhere() async throws {
        try await TestEnvironment.run { env in
            let socket = try deepSocket(env)
            #expect(socket.utf8.count > 108, "the path is longer than a socket address: \(socket.utf8.count)")
            defer { stopDaemon(at: socket) }
            let doc = try env.file("doc.txt", "old\n")
            let presenter = try await env.host("P", environment: ["FILECOORDD_SOCKET": socket])
            try await presenter.present("R", doc)
            let writer = try await env.host("W", environment: ["FILECOORDD_SOCKET": socket])
            try writer.send("write \(doc) new")
            try await writer.waitFor("done write \(doc)")
            try await presenter.waitFor("presenter R didChange")
            #expect(FileManager.default.fileExists(atPath: socket), "the daemon listens at the long path itself")

            let dump = try await env.runTool("fcdump", ["--socket", socket])
            #expect(dump.status == 0, "fcdump: \(dump.error)")
            #expect(dump.output.contains("doc.txt"), "fcdump shows the presenter: \(dump.output)")

            let script = try await env.runTool(
                "fccoord",
                ["write", doc, "--", "/bin/sh", "-c", "echo scripted > \"$FCCOORD_PATH_1\""],
                environment: ["FILECOORDD_SOCKET": socket]
            )
            #expect(script.status == 0, "fccoord: \(script.error)")
            try await presenter.waitFor("presenter R didChange", count: 2)

            let copied = try env.file("copied.txt", "from cp\n")
            let program = try await env.runProgram(
                ["cp", copied, doc],
                environment: ["FILECOORDD_SOCKET": socket]
            )
            #expect(program.status == 0, "cp under the preload: \(program.error)")
            try await presenter.waitFor("presenter R relinquishToWriter")
        }
    }

    @Test(
        "A socket name too long even through its folder: the first call fails at once, names the limit, starts nothing"
    )
    func anUnreachableSocketPathFailsAtOnce() async throws {
        try await TestEnvironment.run { env in
            let socket = try deepSocket(env, name: String(repeating: "s", count: 100))
            let doc = try env.file("doc.txt", "text")
            let host = try await env.host("A", environment: ["FILECOORDD_SOCKET": socket])
            try host.send("read \(doc)")
            let failed = try await host.waitFor("failed read \(doc)")
            // At once: not through the connect deadline's retries, whose error says "could not be reached in". (No
            // bound on time: the whole suite's load makes any one unreliable.)
            #expect(!failed.text.contains("could not be reached in"), "it did not wait for a daemon: \(failed.text)")
            #expect(failed.text.contains("\(socket.utf8.count) bytes long"), "it names the length: \(failed.text)")
            #expect(failed.text.contains("holds 107"), "it names the limit: \(failed.text)")
            #expect(!FileManager.default.fileExists(atPath: socket + ".log"), "no daemon was started")
            #expect(!FileManager.default.fileExists(atPath: socket + ".lock"), "no daemon was started")

            let dump = try await env.runTool("fcdump", ["--socket", socket])
            #expect(dump.status != 0)
            #expect(dump.error.contains("bytes long"), "fcdump names the length: \(dump.error)")
        }
    }
}
