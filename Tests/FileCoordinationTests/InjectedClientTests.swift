import Dispatch
import FCSystem
import Foundation
import Logging
import Testing

@testable import FileCoordination

/// Clients made by the test, not the process's own (`CoordinationClient.shared`): each bound to an arbiter the test
/// chooses, without environment variables (issue 12; docs/ARCHITECTURE.md §8). Two clients in one process then
/// coordinate with each other exactly as two processes do: through a daemon the test starts, or through one
/// in-process arbiter they share.
@Suite struct InjectedClientTests {
    /// The two ways a test binds its clients to one arbiter.
    enum Arbiter: String, CaseIterable, CustomTestStringConvertible {
        case daemon, inProcess
        var testDescription: String { rawValue }
    }

    /// Two clients bound to one arbiter of the kind asked for; `stop` ends what the test started. The first logs
    /// through `logger` when one is given.
    static func clients(
        _ arbiter: Arbiter,
        logger: (@Sendable () -> Logger)? = nil
    ) throws -> (CoordinationClient, CoordinationClient, stop: () -> Void) {
        let logger = logger ?? { FileCoordinationLogging.logger }
        switch arbiter {
        case .daemon:
            let daemon = try TestDaemon()
            let policy = ConnectionPolicy.daemon(at: daemon.socket)
            return (CoordinationClient(policy: policy, logger: logger), CoordinationClient(policy: policy), daemon.stop)
        case .inProcess:
            let shared = LocalArbiterTransport()
            let policy = ConnectionPolicy.inProcess(sharing: shared)
            return (
                CoordinationClient(policy: policy, id: 2, logger: logger), CoordinationClient(policy: policy, id: 3),
                {}
            )
        }
    }

    @Test(arguments: Arbiter.allCases)
    func aWriteThroughOneClientExcludesAReadThroughAnother(_ arbiter: Arbiter) throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let (a, b, stop) = try Self.clients(arbiter)
        defer { stop() }

        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let writer = spawn {
            var error: NSError?
            NSFileCoordinator(filePresenter: nil, client: a).coordinate(
                writingItemAt: file,
                options: [],
                error: &error
            ) { _ in
                holding.signal()
                _ = release.wait(seconds: patience)
            }
        }
        #expect(holding.wait(seconds: patience))

        // The other client's read waits for the write: its own deadline passes first.
        let reader = NSFileCoordinator(filePresenter: nil, client: b)
        reader.timeout = .milliseconds(300)
        var error: NSError?
        var ran = false
        reader.coordinate(readingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(!ran)
        #expect(error?.domain == FileCoordinationError.errorDomain)
        #expect(error?.code == FileCoordinationError.Code.timedOut.rawValue)

        // Once the write ends, the read is granted.
        release.signal()
        #expect(writer.wait(seconds: patience))
        reader.timeout = nil
        error = nil
        reader.coordinate(readingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(ran)
        #expect(error == nil)
    }

    @Test(arguments: Arbiter.allCases)
    func aPresenterOfOneClientHearsAWriteThroughAnother(_ arbiter: Arbiter) throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let (a, b, stop) = try Self.clients(arbiter)
        defer { stop() }
        let presenter = RecordingPresenter(url: file)
        a.addPresenter(presenter)
        defer { a.removePresenter(presenter) }
        #expect(a.allPresenters.count == 1)
        #expect(b.allPresenters.isEmpty)

        var error: NSError?
        var ran = false
        NSFileCoordinator(filePresenter: nil, client: b).coordinate(writingItemAt: file, options: [], error: &error) {
            _ in
            ran = true
        }
        #expect(ran)
        #expect(error == nil)
        #expect(presenter.wait(for: "relinquishToWriter", timeout: patience))
        #expect(presenter.wait(for: "didChange", timeout: patience))
        #expect(presenter.offQueueCallbacks.isEmpty)
    }
}

/// A `filecoordd --foreground` of the test's own, on a socket in a folder of its own; stopped by ``stop()``.
final class TestDaemon: @unchecked Sendable {
    let socket: String
    private let folder: String
    private let process: Process

    init() throws {
        let template = FileManager.default.temporaryDirectory.appendingPathComponent("fc-daemon-XXXXXX").path
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { throw CocoaError(.fileWriteUnknown) }
        folder = String(cString: made)
        socket = folder + "/socket"
        process = Process()
        process.executableURL = try Self.executable()
        process.arguments = ["--foreground", "--socket", socket]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // Its log is read to the end on a thread of its own (the daemon never blocks on a full pipe); the test
        // goes on once the daemon says it listens.
        let listening = DispatchSemaphore(value: 0)
        let reader = output.fileHandleForReading
        Thread {
            var text = ""
            var told = false
            while case let data = reader.availableData, !data.isEmpty {
                guard !told else { continue }
                text += String(decoding: data, as: UTF8.self)
                if text.contains("filecoordd listening") {
                    told = true
                    listening.signal()
                }
            }
            if !told { listening.signal() }
        }
        .start()
        guard listening.wait(seconds: patience), process.isRunning else {
            stop()
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "filecoordd did not start"])
        }
    }

    /// `FILECOORDD_PATH`, else the `filecoordd` built beside the test binary.
    private static func executable() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["FILECOORDD_PATH"] { return URL(fileURLWithPath: path) }
        let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var directory = URL(fileURLWithPath: own).deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = directory.appendingPathComponent("filecoordd")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw CocoaError(.executableNotLoadable, userInfo: [NSLocalizedDescriptionKey: "no filecoordd near \(own)"])
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            // Its end as the kernel tells it; Foundation reaps it later. `waitUntilExit()` learns of the end through
            // a socket the child holds, which a process another test spawns at that moment may inherit
            // (swift-corelibs-foundation issue 4795): it then waited for that other process, here a daemon of a
            // test that could not end, because two such waits held both threads of the tests' pool (the first test
            // phase hung for ten minutes, every child left unreaped).
            _ = try? ChildProcess.peekEnd(of: process.processIdentifier, blocking: true)
        }
        try? FileManager.default.removeItem(atPath: folder)
    }
}
