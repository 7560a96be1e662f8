// The harness of the end-to-end tests: real processes (a private `filecoordd`, `fc-testhost` clients, raw socket
// clients) around one temporary folder per test, so that tests run in parallel and never touch the user's daemon.
//
// Every wait is bounded (10 s unless a test says otherwise) and waits for an event, never for time to pass; the only
// timed waits are the short ones that check that something does *not* happen. Whatever a test does, `cleanup()`
// kills every process it started, the daemon included, and removes the folder.

import FCCore
import FCProtocol
import FCSystem
import Foundation
import SystemPackage
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// A failure of the harness or of a bounded wait, with what the processes printed so far.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
}

/// The default bound of every wait. Generous (it was 10 s): CI runs the whole suite at once, hundreds of processes
/// on a few cores, and a wait that passes ends as soon as its event comes, so only a failing test pays for it. What
/// must not happen is checked over `settleTime`, never over this.
let defaultTimeout: Duration = .seconds(30)

/// How long to keep listening after the expected lines arrived, so that an extra line fails the test.
let settleTime: Duration = .milliseconds(250)

/// How long "does not happen" is watched for.
let quietTime: Duration = .milliseconds(300)

// MARK: - Build products

/// The folder holding the built executables: the test bundle's own folder (`.build/debug`, or the folder named by
/// `FC_E2E_PRODUCTS`), found by walking up from the test binary.
enum Products {
    static let directory: Result<URL, HarnessError> = locate()

    static func executable(_ name: String) throws -> URL {
        try directory.get().appendingPathComponent(name)
    }

    private static func locate() -> Result<URL, HarnessError> {
        var starts: [String] = []
        if let explicit = ProcessInfo.processInfo.environment["FC_E2E_PRODUCTS"] { starts.append(explicit) }
        if let first = CommandLine.arguments.first { starts.append(first) }
        if let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { starts.append(own) }
        let fileManager = FileManager.default
        for start in starts {
            var directory = URL(fileURLWithPath: start).resolvingSymlinksInPath()
            for _ in 0..<6 {
                let daemon = directory.appendingPathComponent("filecoordd").path
                let host = directory.appendingPathComponent("fc-testhost").path
                if fileManager.isExecutableFile(atPath: daemon) && fileManager.isExecutableFile(atPath: host) {
                    return .success(directory)
                }
                directory = directory.deletingLastPathComponent()
            }
        }
        return .failure(
            HarnessError(
                description: "filecoordd and fc-testhost not found above \(starts); build with "
                    + "`swift build --build-tests` or set FC_E2E_PRODUCTS"
            )
        )
    }
}

// MARK: - Output of the child processes

/// One line a child printed, with when the test process read it.
struct OutputLine: Sendable, CustomStringConvertible {
    /// The line, without its newline.
    var text: String
    /// The pump's round that read it. Everything any child had written before a line was read has been read in the
    /// same round or an earlier one, so `a.round < b.round` proves that `b` was written after `a`, and a line written
    /// before another is never in a later round.
    var round: Int
    /// When the line was read (an upper bound of when it was written).
    var time: ContinuousClock.Instant

    var description: String { text }
}

/// Reads the standard output of every child of one test on one thread, splitting it into lines.
///
/// Each round starts when `poll` says something is readable, and reads every stream, again and again, until one
/// whole pass finds nothing: so a round takes in everything written before its last read, which gives lines from
/// different processes a causal order (``OutputLine/round``).
///
/// - Important: Thread-safe.
final class OutputPump: @unchecked Sendable {
    private final class Stream {
        let fd: Int32
        var pending: [UInt8] = []
        var lines: [OutputLine] = []
        var closed = false
        /// Why reading stopped: "end of file", or the error (EBADF means this process closed the descriptor
        /// under the pump: a double close somewhere).
        var closedBecause = ""

        init(fd: Int32) { self.fd = fd }
    }

    private let lock = NSLock()
    private var streams: [Stream] = []
    private var stopping = false
    private var round = 0
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)

    init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            }
        } else {
            fds = [-1, -1]
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        let thread = Thread { [self] in run() }
        thread.name = "EndToEndTests.OutputPump"
        thread.start()
    }

    /// Starts reading `fd`; returns the stream's number.
    func add(_ fd: Int32) -> Int {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let index = lock.withLock {
            streams.append(Stream(fd: fd))
            return streams.count - 1
        }
        wake()
        return index
    }

    func lines(_ stream: Int) -> [OutputLine] { lock.withLock { streams[stream].lines } }
    func isClosed(_ stream: Int) -> Bool { lock.withLock { streams[stream].closed } }
    func closedBecause(_ stream: Int) -> String { lock.withLock { streams[stream].closedBecause } }

    /// Stops the thread and waits for it (bounded), so that no descriptor is read after its owner closes it.
    func stop() {
        lock.withLock { stopping = true }
        wake()
        _ = finished.wait(timeout: .now() + 5)
        close(wakeRead)
        close(wakeWrite)
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func run() {
        defer { finished.signal() }
        while true {
            guard
                var fds = lock.withLock({ () -> [pollfd]? in
                    if stopping { return nil }
                    return [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
                        + streams.filter { !$0.closed }.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
                })
            else { return }
            _ = poll(&fds, nfds_t(fds.count), 1000)
            var scratch = [UInt8](repeating: 0, count: 4096)
            while read(wakeRead, &scratch, scratch.count) > 0 {}
            lock.withLock {
                if stopping { return }
                round += 1
                var progressed = true
                while progressed {
                    progressed = false
                    for stream in streams where !stream.closed {
                        while true {
                            let count = read(stream.fd, &scratch, scratch.count)
                            if count > 0 {
                                progressed = true
                                take(scratch[0..<count], into: stream)
                            } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                                stream.closed = true
                                stream.closedBecause =
                                    count == 0 ? "end of file" : "read: \(String(cString: strerror(errno)))"
                                break
                            } else {
                                break
                            }
                        }
                    }
                }
            }
        }
    }

    /// Splits newly read bytes into lines (called with the lock held).
    private func take(_ bytes: ArraySlice<UInt8>, into stream: Stream) {
        let now = ContinuousClock.now
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                stream.lines.append(
                    OutputLine(text: String(decoding: stream.pending, as: UTF8.self), round: round, time: now)
                )
                stream.pending.removeAll(keepingCapacity: true)
            } else {
                stream.pending.append(byte)
            }
        }
    }
}

// MARK: - One test's world

/// One test's folder, daemon and client processes. Create it with ``run(_:)``, which cleans up whatever happens.
///
/// - Important: Thread-safe.
final class TestEnvironment: @unchecked Sendable {
    /// The test's private folder (symbolic links resolved, so that paths compare as the daemon spells them).
    let directory: String
    /// The private daemon's socket: `<directory>/run/socket`.
    let socket: String
    let pump = OutputPump()
    private let lock = NSLock()
    private var hosts: [HostProcess] = []
    private var daemons: [DaemonProcess] = []
    /// Tools left running (``startTool(_:_:)``), killed by ``cleanup()``.
    private var tools: [Process] = []
    private var hostCount = 0

    private init() throws {
        _ = signal(SIGPIPE, SIG_IGN)  // A write to a killed child's stdin must fail, not kill the test process.
        var template = Array("/tmp/fc-e2e-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw HarnessError(description: "mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        directory = URL(fileURLWithPath: String(cString: made)).resolvingSymlinksInPath().path
        socket = directory + "/run/socket"
    }

    /// Runs `body` in a new environment and always cleans up after it, also when it throws.
    static func run(_ body: (TestEnvironment) async throws -> Void) async throws {
        let environment = try TestEnvironment()
        do {
            try await body(environment)
        } catch {
            let transcript = environment.transcript()
            environment.cleanup()
            throw HarnessError(description: "\(error)\n--- transcript ---\n\(transcript)")
        }
        if ProcessInfo.processInfo.environment["FC_E2E_TRANSCRIPT"] != nil {
            print("--- transcript of \(environment.directory) ---\n\(environment.transcript())")
        }
        environment.cleanup()
    }

    /// A path inside the test's folder.
    func path(_ name: String) -> String { directory + "/" + name }

    /// Creates the socket's folder as a daemon would, private (0700, as a client requires of it: docs/SEMANTICS.md
    /// §12), for a test that listens at ``socket`` itself instead of starting a daemon.
    func makeSocketFolder() throws {
        try FileManager.default.createDirectory(
            atPath: (socket as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
    }

    /// Creates a file with `text` and returns its path.
    @discardableResult
    func file(_ name: String, _ text: String) throws -> String {
        let path = path(name)
        try writeText(text, toFile: path)
        return path
    }

    /// Starts `filecoordd --foreground` on the test's socket (or on `socket`: a second daemon, as another host of a
    /// cluster) and waits until it listens. `environment` adds to its environment (a session bus's address, issue 26).
    func startDaemon(
        presenterTimeout: String = "infinity",
        deadlockDelay: String = "1",
        arguments extra: [String] = [],
        environment variables: [String: String] = [:],
        socket: String? = nil,
        wrapper: [String] = []
    ) async throws -> DaemonProcess {
        let daemon = try DaemonProcess(
            environment: self,
            variables: variables,
            wrapper: wrapper,
            arguments: [
                "--foreground", "--socket", socket ?? self.socket, "--presenter-timeout", presenterTimeout,
                "--deadlock-delay",
                deadlockDelay,
            ] + extra,
            logPath: path("filecoordd-\(lock.withLock { daemons.count }).log")
        )
        lock.withLock { daemons.append(daemon) }
        try await daemon.waitForLog("filecoordd listening")
        return daemon
    }

    /// Runs `filecoordd` with `arguments` and waits (bounded) for it to exit; returns its status and output.
    func runDaemonToExit(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let daemon = try DaemonProcess(
            environment: self,
            arguments: arguments,
            logPath: path("filecoordd-\(lock.withLock { daemons.count }).log")
        )
        lock.withLock { daemons.append(daemon) }
        let status = try await daemon.waitForExit()
        return (status, daemon.log())
    }

    /// Starts an `fc-testhost` that talks to the test's daemon, and waits for its `ready` line. By default it may
    /// start a daemon (`FILECOORDD_PATH` is set), as any client does when none answers, and restarts a stopped one
    /// while it has presenters; with `mayStartDaemon: false` it never does (a test of the daemon's own exit).
    /// `arguments` are passed on and ignored by `fc-testhost` (they show in its command line).
    /// `environment` adds to (or, with `nil` values, removes from) the host's environment.
    /// `executable` and `readyLine` run another line-driven program the same way (the `mirror` example, issue 27).
    func host(
        _ name: String,
        mayStartDaemon: Bool = true,
        arguments: [String] = [],
        environment extra: [String: String?] = [:],
        executable: String = "fc-testhost",
        readyLine: String = "ready ",
        wrapper: [String] = []
    ) async throws -> HostProcess {
        let host = try HostProcess(
            name: name,
            environment: self,
            mayStartDaemon: mayStartDaemon,
            arguments: arguments,
            extraEnvironment: extra,
            executable: executable,
            wrapper: wrapper
        )
        lock.withLock { hosts.append(host) }
        _ = try await host.waitFor(readyLine)
        return host
    }

    /// The pid in `<socket>.lock`: the daemon serving the socket now.
    func lockedDaemonPID() -> Int32? {
        guard let text = try? String(contentsOfFile: socket + ".lock", encoding: .utf8) else { return nil }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Everything the children printed, for failure messages.
    func transcript() -> String {
        let (hosts, daemons) = lock.withLock { (self.hosts, self.daemons) }
        var all: [(Int, String)] = []
        for host in hosts { all += host.lines.map { ($0.round, "[\(host.name)] \($0.text)") } }
        var text = all.sorted { $0.0 < $1.0 }.map(\.1).joined(separator: "\n")
        for host in hosts {
            let errors = host.standardError()
            if !errors.isEmpty { text += "\n[\(host.name) stderr] \(errors)" }
        }
        for daemon in daemons { text += "\n[filecoordd \(daemon.pid)]\n\(daemon.log())" }
        if let log = try? String(contentsOfFile: socket + ".log", encoding: .utf8) {
            text += "\n[\(socket).log]\n\(log)"
        }
        return text
    }

    /// Kills every process the test started (hosts first, so that none restarts a daemon), any daemon a client
    /// started on the test's socket, and removes the folder.
    func cleanup() {
        let (hosts, daemons, tools) = lock.withLock { (self.hosts, self.daemons, self.tools) }
        for tool in tools where tool.stillRuns { kill(tool.processIdentifier, SIGKILL) }
        for host in hosts { host.forceKill() }
        for daemon in daemons { daemon.forceKill() }
        // A daemon the library started (FILECOORDD_PATH): its pid is in the lock file. Killed only if it is a
        // filecoordd serving this test's socket.
        if let pid = lockedDaemonPID(), pid > 0,
            let commandLine = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")),
            String(decoding: commandLine, as: UTF8.self).contains(socket)
        {
            kill(pid, SIGKILL)
        }
        pump.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Polls `condition` every few milliseconds until it holds or `timeout` passes.
/// Runs `tool` with `arguments` and waits for it (a short system command such as `mount`); throws if it fails.
func runToCompletion(_ tool: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    try process.run()
    process.waitForEnd()
    guard process.endStatus == 0 else {
        throw HarnessError(description: "\(tool) \(arguments) exited with \(process.endStatus)")
    }
}

/// Writes `text` to the file at `path`, created or truncated. Not `Data.write(to:)`: it opens without `O_CLOEXEC`, so
/// a host another test spawned meanwhile would hold the descriptor, and the file's close, which the daemon's watcher
/// reports, would come late (`FileSystemCalls.writeFile` opens with it).
func writeText(_ text: String, toFile path: String) throws {
    try FileSystemCalls.writeFile(path, Array(text.utf8))
}

/// Sends SIGSTOP to `pid` and waits (bounded) until every thread of it is stopped (`T` in `/proc/PID/task/*/stat`).
/// `kill` returns before the stop takes hold: a thread of the target that is running may still handle a frame it
/// reads a moment later. A test that sends something right after stopping a process waits here first (a stopped
/// daemon granted a read sent after its SIGSTOP, on the loaded machine).
func stopProcess(_ pid: pid_t) async throws {
    kill(pid, SIGSTOP)
    try await eventually("process \(pid) to stop") {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return !tasks.isEmpty
            && tasks.allSatisfy { task in
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { return true }  // The thread ended.
                let state = stat[stat.index(after: close)...].dropFirst().first
                return state == "T" || state == "t"
            }
    }
}

func eventually(
    timeout: Duration = defaultTimeout,
    _ what: @autoclosure () -> String,
    _ condition: () throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return }
        if ContinuousClock.now >= deadline {
            throw HarnessError(description: "timed out after \(timeout) waiting for \(what())")
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}

// MARK: - Processes

/// Starts `executable` with pipes or files for its standard streams; the process is running when this returns.
private func launch(
    _ executable: URL,
    _ arguments: [String],
    environment: [String: String],
    input: Any,
    output: Any,
    error: Any
) throws -> Process {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.environment = environment
    process.standardInput = input
    process.standardOutput = output
    process.standardError = error
    try process.run()
    return process
}

/// The environment of a child: this process's, with the test's socket and daemon executable, and never the
/// in-process arbiter.
func childEnvironment(socket: String, mayStartDaemon: Bool = true) throws -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    environment["FILECOORDD_SOCKET"] = socket
    // A path that is no executable: the library then looks nowhere else, and starts nothing.
    environment["FILECOORDD_PATH"] =
        mayStartDaemon ? try Products.executable("filecoordd").path : "/nonexistent/filecoordd"
    environment["FILECOORD_ARBITER"] = nil
    // Never the user's own cluster settings (~/.config/filecoordd/cluster.conf): a test daemon joins no real cluster.
    environment["FILECOORDD_CLUSTER_CONFIG"] = "/nonexistent/cluster.conf"
    return environment
}

/// A `filecoordd` the test started, logging to a file of its own.
///
/// - Important: Thread-safe.
final class DaemonProcess: @unchecked Sendable {
    let process: Process
    let logPath: String
    let pid: Int32

    fileprivate init(
        environment: TestEnvironment,
        variables: [String: String] = [:],
        wrapper: [String] = [],
        arguments: [String],
        logPath: String
    ) throws {
        self.logPath = logPath
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        guard let log = FileHandle(forWritingAtPath: logPath) else {
            throw HarnessError(description: "cannot open \(logPath)")
        }
        defer { try? log.close() }
        // A wrapper (`nsenter` into a mount namespace: issue 41's second spelling) runs the daemon after its own
        // arguments.
        let product = try Products.executable("filecoordd")
        process = try launch(
            wrapper.first.map { URL(fileURLWithPath: $0) } ?? product,
            wrapper.isEmpty ? arguments : Array(wrapper.dropFirst()) + [product.path] + arguments,
            environment: try childEnvironment(socket: environment.socket).merging(variables) { $1 },
            input: FileHandle.nullDevice,
            output: log,
            error: log
        )
        pid = process.processIdentifier
    }

    /// The daemon's log so far.
    func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    var isRunning: Bool { process.stillRuns }

    /// Waits until the log contains `text`; fails early if the daemon exits first.
    func waitForLog(_ text: String, timeout: Duration = defaultTimeout) async throws {
        try await eventually(timeout: timeout, "\"\(text)\" in the log of filecoordd \(pid):\n\(log())") {
            if log().contains(text) { return true }
            if !process.stillRuns && !log().contains(text) {
                throw HarnessError(description: "filecoordd \(pid) exited before logging \"\(text)\":\n\(log())")
            }
            return false
        }
    }

    /// Sends a signal.
    func signal(_ number: Int32) { kill(pid, number) }

    /// Stops the daemon with SIGSTOP and returns once every one of its threads has stopped (see ``stopProcess(_:)``).
    func stop() async throws { try await stopProcess(pid) }

    /// Waits (bounded) for the daemon to exit; returns its exit status.
    func waitForExit(timeout: Duration = defaultTimeout) async throws -> Int32 {
        try await eventually(timeout: timeout, "filecoordd \(pid) to exit") { !process.stillRuns }
        return process.endStatus
    }

    fileprivate func forceKill() {
        if process.stillRuns { kill(pid, SIGKILL) }
    }
}

/// An `fc-testhost` driven through its standard input; its output lines are read by the environment's pump.
///
/// - Important: Thread-safe.
final class HostProcess: @unchecked Sendable {
    let name: String
    let pid: Int32
    private let process: Process
    private let input: Pipe
    private let output: Pipe
    private let errorPath: String
    private let pump: OutputPump
    private let stream: Int
    private let barrierPath: String
    private let lock = NSLock()
    private var barriers = 0

    fileprivate init(
        name: String,
        environment: TestEnvironment,
        mayStartDaemon: Bool,
        arguments: [String],
        extraEnvironment: [String: String?],
        executable: String,
        wrapper: [String] = []
    ) throws {
        self.name = name
        input = Pipe()
        output = Pipe()
        errorPath = environment.path("\(name).stderr")
        barrierPath = try environment.file("barrier-\(name)", "")
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        guard let errors = FileHandle(forWritingAtPath: errorPath) else {
            throw HarnessError(description: "cannot open \(errorPath)")
        }
        defer { try? errors.close() }
        pump = environment.pump
        var childEnvironment = try childEnvironment(socket: environment.socket, mayStartDaemon: mayStartDaemon)
        for (key, value) in extraEnvironment { childEnvironment[key] = value }
        // A wrapper (`unshare`, `nsenter`: issue 26) runs the product with its arguments after its own.
        let product = try Products.executable(executable)
        process = try launch(
            wrapper.first.map { URL(fileURLWithPath: $0) } ?? product,
            wrapper.isEmpty ? arguments : Array(wrapper.dropFirst()) + [product.path] + arguments,
            environment: childEnvironment,
            input: input,
            output: output,
            error: errors
        )
        pid = process.processIdentifier
        stream = pump.add(output.fileHandleForReading.fileDescriptor)
    }

    /// Every line printed so far.
    var lines: [OutputLine] { pump.lines(stream) }

    /// What the process wrote to standard error.
    func standardError() -> String {
        ((try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "").trimmingCharacters(
            in: .whitespacesAndNewlines
        )
    }

    /// Sends one command line.
    func send(_ line: String) throws {
        let bytes = Array((line + "\n").utf8)
        let fd = input.fileHandleForWriting.fileDescriptor
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                throw HarnessError(
                    description: "[\(name)] cannot send \"\(line)\": \(String(cString: strerror(errno)))"
                )
            }
            written += count
        }
    }

    /// Waits for the `count`-th line satisfying `predicate` and returns it.
    func waitFor(
        lineMatching predicate: (String) -> Bool,
        _ what: String = "matching a predicate",
        count: Int = 1,
        timeout: Duration = defaultTimeout
    ) async throws -> OutputLine {
        let deadline = ContinuousClock.now + timeout
        while true {
            let matching = lines.filter { predicate($0.text) }
            if matching.count >= count { return matching[count - 1] }
            let closed = pump.isClosed(stream)
            if closed || ContinuousClock.now >= deadline {
                // Output closes as a process exits: give it a moment to be reaped, to say which it was.
                for _ in 0..<40 where closed && process.stillRuns { try await Task.sleep(for: .milliseconds(5)) }
                let exit =
                    process.stillRuns
                    ? "its output closed (\(pump.closedBecause(stream))) while it still runs"
                    : "exited (status \(process.endStatus), \(process.endedBySignal ? "signal" : "exit"); output: \(pump.closedBecause(stream)))"
                throw HarnessError(
                    description: "[\(name)] \(closed ? exit : "timed out after \(timeout)") waiting for "
                        + "line #\(count) \(what); it printed:\n"
                        + lines.map(\.text).joined(separator: "\n") + "\nstderr: \(standardError())"
                )
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Waits for the `count`-th line starting with `prefix` and returns it.
    @discardableResult
    func waitFor(_ prefix: String, count: Int = 1, timeout: Duration = defaultTimeout) async throws -> OutputLine {
        try await waitFor(
            lineMatching: { $0.hasPrefix(prefix) },
            "starting with \"\(prefix)\"",
            count: count,
            timeout: timeout
        )
    }

    /// Watches for `duration`; true if no `count`-th line starting with `prefix` appeared.
    func staysWithout(_ prefix: String, count: Int = 1, for duration: Duration = quietTime) async throws -> Bool {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline {
            if lines.filter({ $0.text.hasPrefix(prefix) }).count >= count { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
        return lines.filter { $0.text.hasPrefix(prefix) }.count < count
    }

    /// The callbacks presenter `presenter` printed, each as `CALLBACK [URL]`.
    func presenterEvents(_ presenter: String) -> [String] {
        let prefix = "presenter \(presenter) "
        return lines.filter { $0.text.hasPrefix(prefix) }.map { String($0.text.dropFirst(prefix.count)) }
    }

    /// Waits until `presenter` printed `count` callbacks, listens `settleTime` longer, and returns them all.
    func settledPresenterEvents(_ presenter: String, count: Int) async throws -> [String] {
        _ = try await waitFor("presenter \(presenter) ", count: count)
        try await Task.sleep(for: settleTime)
        return presenterEvents(presenter)
    }

    /// Registers presenter `presenter` for `path` and waits until the daemon has it (``barrier()``).
    func present(_ presenter: String, _ path: String, _ flags: String...) async throws {
        try send((["present", presenter, path] + flags).joined(separator: " "))
        try await waitFor("presenting \(presenter) ")
        try await barrier()
    }

    /// This process writes `contents` to `written` and holds the write; `reader` then reads `read` (another name of
    /// the same file: a hard link, a bind mount): the read must wait for the write (`failure` otherwise), and once the
    /// write is released it sees `contents`.
    func expectHeldWriteHoldsBack(
        _ written: String,
        _ contents: String,
        reader: HostProcess,
        reading read: String,
        _ failure: Comment
    ) async throws {
        try send("write \(written) \(contents) hold")
        try await waitFor("holding write \(written)")
        try reader.send("read \(read)")
        #expect(try await reader.staysWithout("granted read \(read)"), failure)
        try send("release")
        try await waitFor("done write \(written)")
        try await reader.waitFor("done read \(read) \(contents)")
    }

    /// Holds a coordinated write of `written` (of `contents`) while `writer` writes `second` to `other`, which must
    /// wait (`failure` otherwise); then releases, and both writes end, the second after the first.
    func expectHeldWriteHoldsBackWrite(
        _ written: String,
        _ contents: String,
        writer: HostProcess,
        writing other: String,
        _ second: String,
        _ failure: Comment
    ) async throws {
        try send("write \(written) \(contents) hold")
        try await waitFor("holding write \(written)")
        try writer.send("write \(other) \(second)")
        #expect(try await writer.staysWithout("granted write"), failure)
        try send("release")
        try await waitFor("done write \(written)")
        try await writer.waitFor("done write \(other)")
    }

    /// Waits until the daemon has handled everything this process sent before: a coordinated read of a file nobody
    /// else uses is granted only after the daemon read this connection's earlier frames.
    func barrier() async throws {
        let number = lock.withLock {
            barriers += 1
            return barriers
        }
        try send("read \(barrierPath)")
        try await waitFor("done read \(barrierPath)", count: number)
    }

    /// `kill -9`, then waits (bounded) until the process is gone; returns when the signal was sent.
    @discardableResult
    func kill9() async throws -> ContinuousClock.Instant {
        let sent = ContinuousClock.now
        kill(pid, SIGKILL)
        try await eventually("[\(name)] to exit after SIGKILL") { !process.stillRuns }
        return sent
    }

    fileprivate func forceKill() {
        if process.stillRuns { kill(pid, SIGKILL) }
    }
}

// MARK: - A client speaking the wire protocol by hand

/// A Unix socket bound at `path` and listening.
private func listeningSocket(at path: String, backlog: Int32) throws -> UnixSocket {
    do {
        return try UnixSocket.listen(at: path, backlog: backlog)
    } catch {
        throw HarnessError(description: "bind/listen \(path): \(error)")
    }
}

/// A Unix socket that listens and never accepts: connections complete (the kernel's backlog) and then hear nothing,
/// as from a daemon that hangs.
///
/// - Important: Not thread-safe: one test uses it.
final class SilentListener {
    let path: String
    private let socket: UnixSocket

    init(path: String) throws {
        self.path = path
        socket = try listeningSocket(at: path, backlog: 8)
    }
}

/// A Unix socket that accepts every connection and closes it at once, as a daemon that dies during the handshake
/// does while it starts or stops: the client reads end of file, or has its connection reset.
///
/// - Important: Thread-safe: its own thread accepts; ``stop()`` may be called from any thread.
final class ClosingListener: @unchecked Sendable {
    let path: String
    private let socket: UnixSocket
    private let accepted = NSLock()
    private var count = 0

    init(path: String) throws {
        self.path = path
        socket = try listeningSocket(at: path, backlog: 64)
        let listening = socket
        Thread { [self] in
            // stop() shuts the socket down: accept fails and the thread ends. Each connection closes at once.
            while (try? listening.accept()) != nil {
                accepted.withLock { count += 1 }
            }
        }
        .start()
    }

    /// How many connections it accepted and closed.
    var acceptedCount: Int { accepted.withLock { count } }

    /// Stops accepting and removes the socket file, so that a daemon can bind the path.
    func stop() {
        socket.shutdown()
        unlink(path)
    }
}

/// A raw Unix socket to the daemon, for clients that misbehave or hold claims without a library.
///
/// - Important: Not thread-safe: one test uses it.
final class RawClient {
    let socket: UnixSocket
    private var decoder = FrameDecoder(accepting: .toClient)
    private let encoder = FrameEncoder()
    /// Frames received so far.
    private(set) var frames: [Filecoord_V1_Frame] = []

    init(socket path: String) throws {
        do {
            socket = try UnixSocket.connect(to: path)
            try socket.setNonBlocking(true)
        } catch {
            throw HarnessError(description: "connect \(path): \(error)")
        }
    }

    /// Sends bytes as they are (waiting while the socket's buffer is full).
    func send(_ bytes: [UInt8]) throws {
        var written = 0
        while written < bytes.count {
            do {
                written += try socket.sendSome(bytes[written...])
            } catch .resourceTemporarilyUnavailable {
                _ = try? socket.waitUntilWritable(timeout: .seconds(1))
            } catch {
                throw HarnessError(description: "send: \(error)")
            }
        }
    }

    /// Sends one frame, encoded as the library would.
    func send(_ frame: Filecoord_V1_Frame) throws { try send(try encoder.encode(frame)) }

    /// Registers presenter `id` of `path` that wants only did-change notifications.
    func registerDidChangePresenter(_ id: UInt64, of path: String) throws {
        var register = Filecoord_V1_RegisterPresenter()
        register.presenterID = id
        register.path = Data(path.utf8)
        register.callbacks = PresenterCallbacks.presentedItemDidChange.rawValue
        try send(Filecoord_V1_Frame(.registerPresenter(register)))
    }

    /// Says hello and waits for the daemon's reply.
    func handshake(name: String = "raw-client", answersRecalls: Bool = false) async throws {
        do {
            let hello = Filecoord_V1_Hello(
                clientName: name,
                pid: ProcessIdentity.processID,
                answersRecalls: answersRecalls
            )
            try send(Filecoord_V1_Frame(.hello(hello)))
        } catch {
            // The daemon closed the connection first: say why, if it said.
            _ = try? await waitForClose(timeout: .seconds(1))
            throw HarnessError(description: "Hello not sent (\(error)); the daemon sent: \(frames.map(\.payload))")
        }
        let reply = try await nextFrame()
        guard case .helloReply? = reply?.payload else {
            throw HarnessError(description: "expected HelloReply, got \(String(describing: reply?.payload))")
        }
    }

    /// The next frame, or `nil` when the daemon closed the connection first.
    func nextFrame(timeout: Duration = defaultTimeout) async throws -> Filecoord_V1_Frame? {
        let start = frames.count
        switch try await readUntil(timeout: timeout, { $0.frames.count > start }) {
        case .done: return frames[start]
        case .closed: return frames.count > start ? frames[start] : nil
        case .timedOut: throw HarnessError(description: "no frame from the daemon within \(timeout)")
        }
    }

    /// Reads until `count` of the frames received so far satisfy `matching`; false if the connection closes or
    /// `timeout` passes first.
    func waitForFrames(
        _ count: Int,
        timeout: Duration = defaultTimeout,
        matching: (Filecoord_V1_Frame) -> Bool
    ) async throws -> Bool {
        var seen = 0
        var read = 0
        return try await readUntil(timeout: timeout) { client in
            seen += client.frames[read...].count(where: matching)
            read = client.frames.count
            return seen >= count
        } == .done
    }

    /// Reads until the daemon closes the connection (EOF or reset); false if it is still open after `timeout`.
    func waitForClose(timeout: Duration = defaultTimeout) async throws -> Bool {
        try await readUntil(timeout: timeout, { _ in false }) == .closed
    }

    private enum ReadOutcome { case done, closed, timedOut }

    /// Reads frames until `done` holds, the connection closes or `timeout` passes.
    private func readUntil(timeout: Duration, _ done: (RawClient) -> Bool) async throws -> ReadOutcome {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if done(self) { return .done }
            let count: Int
            do {
                count = try socket.receive(into: &buffer)
            } catch .resourceTemporarilyUnavailable {
                if ContinuousClock.now >= deadline { return .timedOut }
                try await Task.sleep(for: .milliseconds(5))
                continue
            } catch {
                return .closed  // ECONNRESET.
            }
            if count == 0 { return .closed }
            decoder.append(buffer[0..<count])
            while let frame = try decoder.next() { frames.append(frame) }
        }
    }
}

// MARK: - Command-line tools run to completion

extension TestEnvironment {
    /// Runs the built executable `name` (for example `fcdump`) with `arguments` and the test's socket in its
    /// environment, waits (bounded) for it to exit, and returns its status and what it printed.
    func runTool(
        _ name: String,
        _ arguments: [String],
        environment extra: [String: String?] = [:],
        timeout: Duration = defaultTimeout
    ) async throws -> (status: Int32, output: String, error: String) {
        let tool = try startTool(name, arguments, environment: extra)
        let process = tool.process
        do {
            try await eventually(timeout: timeout, "\(name) \(arguments) to exit") { !process.stillRuns }
        } catch {
            kill(process.processIdentifier, SIGKILL)
            throw error
        }
        process.waitForEnd()
        return (process.endStatus, tool.output, tool.error)
    }
}

// MARK: - Command-line tools left running

/// A tool started with ``TestEnvironment/startTool(_:_:)`` (for example `fcdump --watch`): what it printed so far.
struct RunningTool {
    let process: Process
    let outputPath: String
    let errorPath: String

    /// Everything it wrote to standard output so far.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    /// Everything it wrote to standard error so far.
    var error: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// Waits until its standard output holds `text` `count` times.
    func waitForOutput(_ text: String, count: Int = 1, timeout: Duration = defaultTimeout) async throws {
        try await eventually(
            timeout: timeout,
            "\(count) × \"\(text)\" from \(process.arguments ?? []); it printed:\n\(output)"
        ) {
            output.components(separatedBy: text).count - 1 >= count
        }
    }
}

extension TestEnvironment {
    /// Starts the built executable `name` with `arguments` and the test's socket, its standard output and error going
    /// to files (not a terminal), and leaves it running; ``cleanup()`` kills it if the test does not.
    /// `environment` adds to (or, with `nil` values, removes from) its environment.
    func startTool(
        _ name: String,
        _ arguments: [String],
        environment extra: [String: String?] = [:]
    ) throws -> RunningTool {
        let number = lock.withLock {
            hostCount += 1
            return hostCount
        }
        let outputPath = path("\(name)-\(number).stdout")
        let errorPath = path("\(name)-\(number).stderr")
        for file in [outputPath, errorPath] { _ = FileManager.default.createFile(atPath: file, contents: nil) }
        guard let output = FileHandle(forWritingAtPath: outputPath), let error = FileHandle(forWritingAtPath: errorPath)
        else { throw HarnessError(description: "cannot open the output files of \(name)") }
        defer {
            try? output.close()
            try? error.close()
        }
        let process = try launch(
            try Products.executable(name),
            arguments,
            environment: try childEnvironment(socket: socket).merging(extra.compactMapValues { $0 }) { $1 }
                .filter { extra[$0.key] != .some(nil) },
            input: FileHandle.nullDevice,
            output: output,
            error: error
        )
        lock.withLock { tools.append(process) }
        return RunningTool(process: process, outputPath: outputPath, errorPath: errorPath)
    }
}
