// A client trusts only its own user's daemon (issue 29; docs/SEMANTICS.md §12): the socket's folder must be a folder
// of the client's user with no access for group or others, the socket a socket, and the listening process the
// client's user's; anything else fails the call with `untrustedDaemon` (code 11) before any frame is sent, starts no
// daemon and is never coordinated in process. Tested for real, as root, against another account (uid 65534, through
// `setpriv`): without root, `setpriv` and /usr/bin/python3 the suite is reported as not run, and in CI (`CI` set)
// `theTrustTestsRunInCI` fails.

import FCSystem
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whether the trust tests can run here: as root, with `setpriv` to become another user and a system Python for the
/// squatting listener.
enum OtherUser {
    static let uid: uid_t = 65534
    static let python = "/usr/bin/python3"
    static let setpriv = "/usr/bin/setpriv"

    static var isAvailable: Bool {
        ProcessIdentity.effectiveUserID == 0 && FileManager.default.isExecutableFile(atPath: setpriv)
            && FileManager.default.isExecutableFile(atPath: python)
    }
}

@Test("The trust tests run in CI (CI runs as root)")
func theTrustTestsRunInCI() {
    guard ProcessInfo.processInfo.environment["CI"] != nil else { return }
    #expect(
        OtherUser.isAvailable,
        "DaemonTrustEndToEndTests need root, \(OtherUser.setpriv) and \(OtherUser.python); in CI they must run"
    )
}

/// A Unix socket listener run by another user (uid 65534) that accepts every connection and reports what it
/// received: `accepted`, then `received N` (bytes read before the client closed, or 2 s passed).
final class SquattingListener: @unchecked Sendable {
    let process: Process
    let socketPath: String
    private let outputPath: String

    /// Starts the listener bound in a folder of the other user's, then moves its socket to `path` (root may).
    init(movedTo path: String, in environment: TestEnvironment) async throws {
        let folder = environment.path("squatter")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        guard chown(folder, OtherUser.uid, OtherUser.uid) == 0 else {
            throw HarnessError(description: "chown \(folder): \(String(cString: strerror(errno)))")
        }
        // The other user must reach its folder inside the test's (mkdtemp's 0700) folder.
        chmod(environment.directory, 0o755)
        let bound = folder + "/socket"
        outputPath = environment.path("squatter.out")
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        defer { try? output.close() }
        let script = """
            import socket, sys, os
            s = socket.socket(socket.AF_UNIX)
            s.bind(sys.argv[1]); s.listen(8); os.chmod(sys.argv[1], 0o777)
            print("listening", flush=True)
            while True:
                c, _ = s.accept()
                print("accepted", flush=True)
                c.settimeout(2.0)
                total = 0
                try:
                    while True:
                        data = c.recv(65536)
                        if not data: break
                        total += len(data)
                except socket.timeout:
                    pass
                print("received %d" % total, flush=True)
                c.close()
            """
        process = Process()
        process.executableURL = URL(fileURLWithPath: OtherUser.setpriv)
        process.arguments = [
            "--reuid=\(OtherUser.uid)", "--regid=\(OtherUser.uid)", "--clear-groups", OtherUser.python, "-c", script,
            bound,
        ]
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let outputPath = self.outputPath
        try await eventually("the squatting listener to listen") {
            ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").contains("listening")
        }
        guard rename(bound, path) == 0 else {
            throw HarnessError(description: "rename \(bound) \(path): \(String(cString: strerror(errno)))")
        }
        socketPath = path
    }

    /// What it printed.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    func stop() {
        if process.stillRuns { kill(process.processIdentifier, SIGKILL) }
        process.waitForEnd()
    }
}

@Suite(
    .enabled(
        if: OtherUser.isAvailable,
        "DID NOT RUN: needs root, \(OtherUser.setpriv) and \(OtherUser.python) (another user squats the socket)"
    ),
    .timeLimit(.minutes(1))
)
struct DaemonTrustEndToEndTests {
    /// The socket's folder, made by the test (the daemon or a client would make it otherwise).
    private static func makeRunFolder(_ env: TestEnvironment, mode: mode_t = 0o700) throws -> String {
        let folder = (env.socket as NSString).deletingLastPathComponent
        guard mkdir(folder, mode) == 0, chmod(folder, mode) == 0 else {
            throw HarnessError(description: "mkdir \(folder): \(String(cString: strerror(errno)))")
        }
        return folder
    }

    /// A coordinated read by `fc-testhost` fails with `untrustedDaemon` (11) whose message contains `words`, and so
    /// does `fcdump`; neither starts a daemon or coordinates in process.
    private static func expectRefused(_ env: TestEnvironment, _ words: [String]) async throws {
        let doc = try env.file("doc.txt", "one")
        let app = try await env.host("app")
        try app.send("read \(doc)")
        let failure = try await app.waitFor("failed read \(doc)")
        #expect(failure.text.contains("FileCoordinationErrorDomain 11 "), "\(failure.text)")
        for word in words { #expect(failure.text.contains(word), "no \"\(word)\" in: \(failure.text)") }
        #expect(!app.lines.contains { $0.text.hasPrefix("granted") }, "coordinated in process: \(app.lines)")
        #expect(!app.standardError().contains("coordinating in this process only"), "\(app.standardError())")
        #expect(app.standardError().contains("FileCoordinationErrorDomain") || app.standardError().contains(words[0]))
        let dump = try await env.runTool("fcdump", [])
        #expect(dump.status == 1)
        for word in words { #expect(dump.error.contains(word), "no \"\(word)\" in fcdump's: \(dump.error)") }
        #expect(!FileManager.default.fileExists(atPath: env.socket + ".log"), "a daemon was started")
    }

    @Test("A listener of another user in the client's own folder receives no frame")
    func aSquattingListenerOfAnotherUserGetsNothing() async throws {
        try await TestEnvironment.run { env in
            _ = try Self.makeRunFolder(env)
            let squatter = try await SquattingListener(movedTo: env.socket, in: env)
            defer { squatter.stop() }
            try await Self.expectRefused(env, ["runs as uid 65534", env.socket])
            // Both clients connected (that is how they learnt who listens) and sent nothing.
            try await eventually("the listener's report:\n\(squatter.output)") {
                squatter.output.components(separatedBy: "received").count - 1 >= 2
            }
            let received = squatter.output.split(separator: "\n").filter { $0.hasPrefix("received") }
            #expect(received.allSatisfy { $0 == "received 0" }, "\(squatter.output)")
        }
    }

    @Test("A socket folder that belongs to another user is not used")
    func aFolderOfAnotherOwner() async throws {
        try await TestEnvironment.run { env in
            let folder = try Self.makeRunFolder(env)
            #expect(chown(folder, OtherUser.uid, OtherUser.uid) == 0)
            try await Self.expectRefused(env, [folder, "belongs to uid 65534"])
        }
    }

    @Test("A socket folder that group or others may enter is not used")
    func aFolderWithMode0777() async throws {
        try await TestEnvironment.run { env in
            let folder = try Self.makeRunFolder(env, mode: 0o777)
            try await Self.expectRefused(env, [folder, "mode 777", "chmod 700"])
        }
    }

    @Test("A symbolic link as the socket folder is not followed")
    func aSymbolicLinkAsTheFolder() async throws {
        try await TestEnvironment.run { env in
            let target = env.path("elsewhere")
            #expect(mkdir(target, 0o700) == 0)
            let folder = (env.socket as NSString).deletingLastPathComponent
            #expect(symlink(target, folder) == 0)
            try await Self.expectRefused(env, [folder, "symbolic link"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty, "something was made there")
        }
    }

    @Test("A socket path that is a regular file is not used, and no daemon is started there")
    func aRegularFileAsTheSocket() async throws {
        try await TestEnvironment.run { env in
            _ = try Self.makeRunFolder(env)
            try writeText("not a socket", toFile: env.socket)
            try await Self.expectRefused(env, [env.socket, "not a socket"])
        }
    }

    @Test("The client's own daemon in its own private folder is used as before")
    func theHappyPathIsUnchanged() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let doc = try env.file("doc.txt", "one")
            let app = try await env.host("app")
            try app.send("read \(doc)")
            try await app.waitFor("done read \(doc) one")
            let dump = try await env.runTool("fcdump", [])
            #expect(dump.status == 0, "\(dump.error)")
        }
    }
}
