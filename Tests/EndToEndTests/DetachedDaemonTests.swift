import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

// The daemon a program starts is detached from it (issue 10): not its child, none of its descriptors, a session of its
// own, default signal dispositions and an empty signal mask. Before, whoever waited for the program with Foundation's
// `Process` (which notices the exit by end of file on a socket the child inherited) waited for ever, because the
// daemon held that socket too.

@Suite struct DetachedDaemonTests {
    /// Writes a wrapper that records its parent, session and signal state as the daemon gets them into the test's
    /// folder, then becomes the daemon (`exec`).
    static func wrapper(in environment: TestEnvironment) throws -> String {
        let daemon = try Products.executable("filecoordd").path
        let script = environment.path("filecoordd-wrapper")
        let text = """
            #!/bin/sh
            # Builtins only while reading: a shell that waits for a child blocks every signal meanwhile.
            while IFS= read -r line; do
                case "$line" in PPid:*|SigBlk:*|SigIgn:*) printf '%s\\n' "$line" ;; esac
            done < /proc/$$/status > \(environment.path("start-status")).tmp
            mv \(environment.path("start-status")).tmp \(environment.path("start-status"))
            exec \(daemon) "$@"

            """
        try text.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        return script
    }

    /// The fields the wrapper recorded.
    static func startStatus(in environment: TestEnvironment) throws -> [String: String] {
        let status = try String(contentsOfFile: environment.path("start-status"), encoding: .utf8)
        var fields: [String: String] = [:]
        for line in status.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return fields
    }

    /// What each open descriptor of a process refers to (`/path`, `socket:[inode]`, `pipe:[inode]`, ...).
    static func descriptors(of pid: Int32) -> [Int: String] {
        let folder = "/proc/\(pid)/fd"
        var result: [Int: String] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            guard let fd = Int(name),
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + name)
            else { continue }
            result[fd] = target
        }
        return result
    }

    /// The session of a process (field 6 of /proc/PID/stat).
    static func session(of pid: Int32) throws -> String {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
        guard let close = stat.lastIndex(of: ")") else { return "" }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 3 ? String(fields[3]) : ""
    }

    @Test func foundationsProcessSeesAProgramThatStartedTheDaemonExit() async throws {
        try await TestEnvironment.run { environment in
            let file = try environment.file("doc.txt", "hello")
            var childEnvironment = try childEnvironment(socket: environment.socket)
            childEnvironment["FILECOORDD_PATH"] = try Self.wrapper(in: environment)

            // The program, started with Foundation's Process as an app's launcher, test runner or IDE would.
            let process = Process()
            process.executableURL = try Products.executable("fc-testhost")
            process.environment = childEnvironment
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            let exited = Locked(false)
            process.terminationHandler = { _ in exited.set(true) }
            try process.run()
            let hostPID = process.processIdentifier
            defer { if process.stillRuns { kill(hostPID, SIGKILL) } }
            let transcript = Locked("")
            output.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                if data.isEmpty {
                    handle.readabilityHandler = nil
                } else {
                    transcript.withLock { $0 += String(decoding: data, as: UTF8.self) }
                }
            }
            defer { output.fileHandleForReading.readabilityHandler = nil }
            func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

            // Process-wide state of the program that the daemon must not inherit.
            send("ignore \(SIGUSR1)")
            try await eventually("the host to ignore SIGUSR1") { transcript.current.contains("ignoring") }
            send("read \(file)")
            try await eventually("the read through the daemon the host started: \(transcript.current)") {
                transcript.current.contains("done read \(file) hello")
            }
            let daemonPID = try #require(environment.lockedDaemonPID())
            #expect(kill(daemonPID, 0) == 0)
            let start = try Self.startStatus(in: environment)

            // Not the program's child, in a session of its own.
            #expect(start["PPid"] != "\(hostPID)")
            #expect(try Self.session(of: daemonPID) != Self.session(of: hostPID))
            // Default dispositions (SIGUSR1 is not ignored) and an empty mask.
            #expect(start["SigIgn"] == "0000000000000000")
            #expect(start["SigBlk"] == "0000000000000000")
            // No descriptor of the program: standard input is /dev/null, output and errors go to the log, and no
            // descriptor of the daemon is one the program holds (the pipes and the socket Foundation gave it).
            let daemonDescriptors = Self.descriptors(of: daemonPID)
            let hostDescriptors = Set(Self.descriptors(of: hostPID).values).subtracting(["/dev/null"])
            #expect(daemonDescriptors[0] == "/dev/null")
            #expect(daemonDescriptors[1] == environment.socket + ".log")
            #expect(daemonDescriptors[2] == environment.socket + ".log")
            let shared = daemonDescriptors.filter { hostDescriptors.contains($0.value) }
            #expect(shared.isEmpty, "descriptors of the program the daemon holds: \(shared)")

            // The program exits; whoever started it sees that, and the daemon stays. (A daemon holding the program's
            // pipe would keep Process waiting for ever; under the full suite's load Process was once seen to report
            // a plain exit more than 10 s late, hence the default bound of 30 s.)
            send("exit")
            try await eventually("Foundation's Process to see the program exit") { exited.current }
            #expect(kill(daemonPID, 0) == 0)
        }
    }
}

/// A value shared with Foundation's callbacks (termination handler, readability handler).
private final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    var current: Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
    func withLock<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
}
