import Dispatch
import FCDaemon
import FCSystem
import Foundation
// Linux with glibc only (`/proc`, glibc's `posix_spawn`).
@preconcurrency import Glibc
import Logging
import ServiceLifecycle
import Synchronization

// The plumbing the end-to-end benchmarks stand on: a private folder, a daemon in this process, bare Unix sockets,
// helper processes (this same executable, re-run in a role), and a wall-clock record per benchmark. All of it is
// built in `setup:` and torn down in `teardown:`, outside the measurement.

/// A failure while setting a benchmark up or checking its result.
struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// `errno` as text.
func errnoText() -> String { String(cString: strerror(errno)) }

/// A private folder under /tmp (short: Unix socket paths hold at most 107 bytes), removed by ``remove()``.
final class ScratchDirectory: Sendable {
    let path: String

    init() throws {
        var template = Array("/tmp/fc-e2e-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BenchmarkFailure("mkdtemp: \(errnoText())")
        }
        path = String(cString: made)
    }

    /// A file in the folder, created with some contents.
    func file(_ name: String) throws -> String {
        let file = path + "/" + name
        guard FileManager.default.createFile(atPath: file, contents: Data("contents\n".utf8)) else {
            throw BenchmarkFailure("cannot create \(file)")
        }
        return file
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

// MARK: - The daemon, in this process

/// `filecoordd` as a library (`FCDaemon.DaemonService`) under a `ServiceGroup`, on a private socket. Its arbiter runs
/// on an event loop thread of its own; this process's `FileCoordination` reaches it through the socket exactly as
/// another process would. Counts the connections it accepted (from its "client connected" log line), so that a
/// benchmark can check its clients really coordinate through it and did not fall back to an in-process arbiter.
final class InProcessDaemon: Sendable {
    let socketPath: String
    private let connections: ConnectionCounter
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Starts the daemon on `socketPath` and points this process (and the helpers it spawns) at it: sets
    /// `FILECOORDD_SOCKET` before any `FileCoordination` call, removes `FILECOORD_ARBITER`, and names a daemon
    /// executable that does not exist, so that a failed connection is not hidden by an auto-started daemon. The
    /// clients run with the settings a user gets (`FILECOORD_LEASES` unset: they answer recalls, issue 38); the
    /// daemon grants no lease unless `leases`, so that every claim measures the daemon's path.
    static func start(
        socketPath: String,
        leases: Bool = false,
        configure: (inout DaemonConfiguration) -> Void = { _ in }
    ) async throws -> InProcessDaemon {
        setenv("FILECOORDD_SOCKET", socketPath, 1)
        setenv("FILECOORDD_PATH", "/nonexistent/filecoordd", 1)
        unsetenv("FILECOORD_LEASES")
        unsetenv("FILECOORD_ARBITER")
        let connections = ConnectionCounter()
        let logger = Logger(label: "filecoordd") { _ in CountingLogHandler(connections: connections) }
        let ready = DispatchSemaphore(value: 0)
        var configuration = DaemonConfiguration(socketPath: socketPath)
        configuration.grantsLeases = leases
        configure(&configuration)
        let service = DaemonService(
            configuration: configuration,
            logger: logger,
            ready: { ready.signal() }
        )
        let group = ServiceGroup(services: [service], logger: logger)
        let task = Task.detached { try await group.run() }
        let daemon = InProcessDaemon(socketPath: socketPath, connections: connections, group: group, task: task)
        // `ready` comes from the daemon's own task; wait for it off the cooperative pool's threads.
        let started = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: ready.wait(timeout: .now() + 10) == .success) }.start()
        }
        guard started else {
            await daemon.stop()
            throw BenchmarkFailure("the in-process daemon did not listen on \(socketPath) within 10 s")
        }
        return daemon
    }

    private init(
        socketPath: String,
        connections: ConnectionCounter,
        group: ServiceGroup,
        task: Task<Void, any Error>
    ) {
        self.socketPath = socketPath
        self.connections = connections
        self.group = group
        self.task = task
    }

    /// How many clients the daemon accepted so far.
    var clients: Int { connections.value }

    /// Waits (up to 10 s) until the daemon has accepted `count` clients in all.
    func waitForClients(_ count: Int, what: String) throws {
        let deadline = Date().addingTimeInterval(10)
        while connections.value < count {
            guard Date() < deadline else {
                throw BenchmarkFailure(
                    "\(what): the daemon saw \(connections.value) of \(count) clients connect; a client fell back to "
                        + "its in-process arbiter (see its standard error)"
                )
            }
            usleep(1_000)
        }
    }

    /// Waits (up to `timeout` seconds) until the daemon has logged `message` (one of its `cluster: ...` lines: the
    /// cluster benchmarks wait for `cluster: session open`).
    func waitForLog(_ message: String, timeout: Double = 20) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !connections.logged(message) {
            guard Date() < deadline else {
                throw BenchmarkFailure("the in-process daemon did not log \"\(message)\" within \(timeout) s")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Shuts the daemon down gracefully and waits for it.
    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}

/// How many clients the daemon accepted, and which of its cluster messages (`cluster: ...`) it logged.
final class ConnectionCounter: Sendable {
    private let count = Mutex(0)
    private let clusterMessages = Mutex(Set<String>())
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
    func note(_ message: String) { _ = clusterMessages.withLock { $0.insert(message) } }
    func logged(_ message: String) -> Bool { clusterMessages.withLock { $0.contains(message) } }
}

/// Counts "client connected", notes the cluster's messages; prints warnings and worse to standard error; drops the
/// rest.
struct CountingLogHandler: LogHandler {
    let connections: ConnectionCounter
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let message = event.message.description
        if message == "client connected" {
            connections.increment()
        } else if message.hasPrefix("cluster: ") {
            connections.note(message)
        }
        if event.level >= .warning {
            FileHandle.standardError.write(Data("filecoordd (in process): \(event.message)\n".utf8))
        }
    }
}

// MARK: - Bare Unix sockets

/// Blocking Unix stream sockets (FCSystem's `UnixSocket`, the package's one socket type) and exact-length reads and
/// writes, with no framing and no allocation per call.
enum BareSocket {
    /// A listening socket at `path`.
    static func listen(at path: String) throws -> UnixSocket {
        do {
            return try UnixSocket.listen(at: path, backlog: 16)
        } catch {
            throw BenchmarkFailure("bind/listen \(path): \(error)")
        }
    }

    /// A socket connected to `path`.
    static func connect(to path: String) throws -> UnixSocket {
        do {
            return try UnixSocket.connect(to: path)
        } catch {
            throw BenchmarkFailure("connect \(path): \(error)")
        }
    }

    /// Accepts one connection on a listening socket, waiting at most 10 s.
    static func accept(on listener: UnixSocket) throws -> UnixSocket {
        guard (try? listener.waitUntilReadable(timeout: .seconds(10))) == true else {
            throw BenchmarkFailure("nobody connected within 10 s")
        }
        do {
            return try listener.accept()
        } catch {
            throw BenchmarkFailure("accept: \(error)")
        }
    }

    /// Reads exactly `count` bytes from `socket`; `false` at end of file or on an error.
    static func readExactly(_ socket: UnixSocket, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Bool {
        (try? socket.receiveExactly(into: UnsafeMutableRawBufferPointer(start: buffer, count: count))) == true
    }

    /// Writes exactly `count` bytes to `socket`; `false` on an error.
    static func writeAll(_ socket: UnixSocket, _ buffer: UnsafeRawPointer, _ count: Int) -> Bool {
        (try? socket.send(UnsafeRawBufferPointer(start: buffer, count: count))) != nil
    }

    /// Reads exactly `count` bytes from a pipe; `false` at end of file or on an error.
    static func readExactly(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Bool {
        var done = 0
        while done < count {
            let n = read(fd, buffer + done, count - done)
            if n > 0 {
                done += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Writes exactly `count` bytes to a pipe; `false` on an error.
    static func writeAll(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Bool {
        var done = 0
        while done < count {
            let n = write(fd, buffer + done, count - done)
            if n > 0 {
                done += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// The size of every bare request and response.
    static let messageSize = 32

    /// Serves one connection: echoes each 32-byte message until end of file, then closes it.
    static func echo(_ socket: UnixSocket) {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: messageSize, alignment: 8)
        defer { buffer.deallocate() }
        while readExactly(socket, buffer, messageSize), writeAll(socket, buffer, messageSize) {}
    }

    /// Relays each 32-byte message from `client` to `responder`, and the answer back, until either side closes.
    static func relay(client: UnixSocket, responder: UnixSocket) {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: messageSize, alignment: 8)
        defer { buffer.deallocate() }
        while readExactly(client, buffer, messageSize), writeAll(responder, buffer, messageSize),
            readExactly(responder, buffer, messageSize), writeAll(client, buffer, messageSize)
        {}
    }
}

/// A client's end of a bare round trip: a 32-byte buffer sent and read back.
final class BareClient: @unchecked Sendable {
    let socket: UnixSocket
    private let buffer = UnsafeMutableRawPointer.allocate(byteCount: BareSocket.messageSize, alignment: 8)

    init(socket: UnixSocket) {
        self.socket = socket
        buffer.initializeMemory(as: UInt8.self, repeating: 7, count: BareSocket.messageSize)
    }

    /// One request and its response.
    @inline(__always)
    func roundTrip() -> Bool {
        BareSocket.writeAll(socket, buffer, BareSocket.messageSize)
            && BareSocket.readExactly(socket, buffer, BareSocket.messageSize)
    }

    /// Ends the connection (the server's side sees end of file); the descriptor closes with the object.
    func close() {
        socket.shutdown()
    }

    deinit { buffer.deallocate() }
}

/// Starts a thread running `body`.
func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    thread.start()
}

// MARK: - Helper processes

/// Another process: this same executable, run again with `FC_E2E_ROLE` set (see `HelperRoles.swift`), its standard
/// input and output on pipes. Its standard error is this process's. It inherits no other descriptor (in particular
/// not the pipes to the benchmark tool), and ends when its standard input closes.
final class HelperProcess: @unchecked Sendable {
    static let roleVariable = "FC_E2E_ROLE"

    let pid: pid_t
    let input: Int32
    let output: Int32
    private var closed = false

    init(role: String, environment extra: [String: String] = [:]) throws {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else { throw BenchmarkFailure("pipe: \(errnoText())") }
        // No descriptor of this process but the two pipe ends below may reach the helper: not the pipes to the
        // benchmark tool, not another helper's pipes (glibc's `posix_spawn_file_actions_addclosefrom_np` is not
        // imported into Swift, so every descriptor is marked close-on-exec instead).
        Self.markAllCloseOnExec()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        var environment = ProcessInfo.processInfo.environment
        environment[Self.roleVariable] = role
        environment.merge(extra) { _, new in new }
        let environmentStrings: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0)=\($1)") } + [nil]
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup(executable), nil]
        defer {
            for pointer in environmentStrings { free(pointer) }
            for pointer in arguments { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, arguments, environmentStrings)
        close(toChild[0])
        close(fromChild[1])
        guard result == 0 else {
            close(toChild[1])
            close(fromChild[0])
            throw BenchmarkFailure("posix_spawn \(executable): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        self.input = toChild[1]
        self.output = fromChild[0]
    }

    /// Sets close-on-exec on every open descriptor above standard error.
    static func markAllCloseOnExec() {
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for name in open {
            if let fd = Int32(name), fd > 2 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
    }

    /// Sends one byte (a command) to the helper.
    func send(_ byte: UInt8) -> Bool {
        var byte = byte
        return BareSocket.writeAll(input, &byte, 1)
    }

    /// Sends a line to the helper.
    func send(line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        return bytes.withUnsafeBytes { BareSocket.writeAll(input, $0.baseAddress!, $0.count) }
    }

    /// Reads one byte (a reply), blocking.
    func receive() -> UInt8? {
        var byte: UInt8 = 0
        return BareSocket.readExactly(output, &byte, 1) ? byte : nil
    }

    /// Reads one line, waiting at most `timeout` seconds.
    func receiveLine(timeout: Double = 10) throws -> String {
        var line: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            var descriptor = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            guard poll(&descriptor, 1, remaining) > 0 else {
                throw BenchmarkFailure("helper \(pid) did not answer within \(timeout) s")
            }
            guard let byte = receive() else { throw BenchmarkFailure("helper \(pid) ended") }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }

    /// Closes its standard input (the helper then exits) and reaps it; kills it if it takes over 5 s.
    func finish() {
        guard !closed else { return }
        closed = true
        close(input)
        var status: Int32 = 0
        for _ in 0..<500 {
            if waitpid(pid, &status, WNOHANG) == pid {
                close(output)
                return
            }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        close(output)
    }
}

// MARK: - Wall clock per operation, and the ratios

/// Wall-clock nanoseconds per operation, one value per sample (a sample runs `scaledIterations` operations). Kept
/// next to the framework's own numbers so that the ratios can be printed at the end of the run.
final class WallClockRecord: @unchecked Sendable {
    private var perOperation: [Double] = []
    private var started: UInt64 = 0

    init() { perOperation.reserveCapacity(100_000) }

    @inline(__always)
    func start() { started = DispatchTime.now().uptimeNanoseconds }

    @inline(__always)
    func stop(operations: Int) {
        let elapsed = DispatchTime.now().uptimeNanoseconds - started
        perOperation.append(Double(elapsed) / Double(operations))
    }

    /// A sample the caller timed itself.
    func add(perOperation nanoseconds: Double) { perOperation.append(nanoseconds) }

    /// The median of the samples' per-operation times, in nanoseconds.
    var median: Double? {
        guard !perOperation.isEmpty else { return nil }
        let sorted = perOperation.sorted()
        return sorted[sorted.count / 2]
    }

    var samples: Int { perOperation.count }
}

/// Where this run's results meet: each benchmark runs in a process of its own, so each appends its median to a file
/// named after the benchmark tool (the parent of every benchmark process of one run: its pid and start time), and
/// the last one of the run prints the ratios.
enum RunResults {
    static let names = [
        "EndToEnd.bareSocketRoundTrip", "EndToEnd.bareThreePartyRoundTrip", "EndToEnd.claimsPerSecond8Clients",
        "EndToEnd.openFlockClose", "EndToEnd.uncontendedRead", "EndToEnd.writeWithRelinquishingPresenter",
        "EndToEnd.uncontendedWrite", "EndToEnd.clientHotPath.uncontendedRead",
        "EndToEnd.clientHotPath.uncontendedWrite",
    ]

    static var path: String {
        let parent = ProcessIdentity.parentProcessID
        let stat = (try? String(contentsOfFile: "/proc/\(parent)/stat", encoding: .utf8)) ?? ""
        // Field 22, the start time, counted after the command name's closing parenthesis (fields 3 onwards).
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        let startTime = fields.count > 19 ? String(fields[19]) : "0"
        return NSTemporaryDirectory() + "/fc-e2e-results-\(parent)-\(startTime).txt"
    }

    /// Appends a value of this run (`name value`) for the last benchmark to read.
    static func append(_ name: String, _ value: Double) {
        let line = "\(name) \(value)\n"
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        if fd >= 0 {
            _ = line.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
    }

    /// Records `name`'s median (nanoseconds per operation), prints it, and prints the ratios once all are known.
    static func record(_ name: String, _ record: WallClockRecord, note: String = "") {
        guard let median = record.median else { return }
        append(name, median)
        report("\(name): p50 \(format(median)) per operation over \(record.samples) samples\(note)")
        let results = read()
        if names.allSatisfy({ results[$0] != nil }) {
            report(summary(results))
            report(table(results))
            unlink(path)
        }
    }

    static func read() -> [String: Double] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var results: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { results[String(parts[0])] = value }
        }
        return results
    }

    /// The ratios, against the targets of docs/ARCHITECTURE.md §7.
    static func summary(_ results: [String: Double]) -> String {
        let read = results["EndToEnd.uncontendedRead"]!
        let bare = results["EndToEnd.bareSocketRoundTrip"]!
        let flock = results["EndToEnd.openFlockClose"]!
        let write = results["EndToEnd.writeWithRelinquishingPresenter"]!
        let threeParty = results["EndToEnd.bareThreePartyRoundTrip"]!
        let claim = results["EndToEnd.claimsPerSecond8Clients"]!
        let uncontendedWrite = results["EndToEnd.uncontendedWrite"]!
        let uncontendedWriteRatio = uncontendedWrite / bare
        let clientCPU = results["EndToEnd.claimsPerSecond8Clients.clientCPUPerClaim"].map(format) ?? "?"
        let daemonCPU = results["EndToEnd.claimsPerSecond8Clients.daemonCPUPerClaim"].map(format) ?? "?"
        func verdict(_ met: Bool) -> String { met ? "met" : "MISSED" }
        let readRatio = read / bare
        let flockRatio = read / (flock + bare)
        let writeRatio = write / threeParty
        let rate = 1e9 / claim
        let single = 1e9 / read
        let processors = ProcessInfo.processInfo.activeProcessorCount
        return """

            ==== EndToEnd ratios (this run, \(processors) cores; p50 wall clock per operation; reported, never gated) ====
            uncontendedRead                  \(format(read))
            uncontendedWrite                 \(format(uncontendedWrite))
            bareSocketRoundTrip              \(format(bare))
            openFlockClose                   \(format(flock))
            writeWithRelinquishingPresenter  \(format(write))
            bareThreePartyRoundTrip          \(format(threeParty))
            uncontendedRead / bareSocketRoundTrip                  = \(ratio(readRatio))  (target <= 2: \
            \(verdict(readRatio <= 2)))
            uncontendedRead / (openFlockClose + bareSocketRoundTrip) = \(ratio(flockRatio))  (target < 1: \
            \(verdict(flockRatio < 1)))
            uncontendedWrite / bareSocketRoundTrip                 = \(ratio(uncontendedWriteRatio))  (target <= 2: \
            \(verdict(uncontendedWriteRatio <= 2)))
            writeWithRelinquishingPresenter / bareThreePartyRoundTrip = \(ratio(writeRatio))  (target <= 2: \
            \(verdict(writeRatio <= 2)))
            claimsPerSecond8Clients          \(Int(rate)) claims/s (8 processes; \(ratio(rate / single)) x one \
            client's sequential uncontendedRead rate of \(Int(single))/s)
            claimsPerSecond8Clients CPU per claim: clients \(clientCPU), daemon \(daemonCPU)
            =====================================================================================================

            """
    }

    static func format(_ nanoseconds: Double) -> String {
        nanoseconds >= 1_000 ? "\(ratio(nanoseconds / 1_000)) µs" : "\(Int(nanoseconds)) ns"
    }

    static func ratio(_ value: Double) -> String {
        String(format: "%.2f", value)
    }

    /// To standard error: standard output may carry the benchmark tool's machine-readable output.
    static func report(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
