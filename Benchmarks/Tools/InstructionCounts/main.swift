// The processes whose instructions `Benchmarks/instructions.sh` counts with `valgrind --tool=callgrind` (issue 23):
// instructions per claim repeat for the same binary and input whatever else the machine does, so CI gates them
// where it cannot gate time.
//
//   InstructionCounts daemon SOCKET [no-leases]
//                                            serves SOCKET (leases granted at once, no back-off; none with
//                                            `no-leases`) until standard input closes; prints `ready` once it listens
//   InstructionCounts client SOCKET MODE N   makes the same warm-up, then N coordinated calls of one file, and exits;
//                                            MODE is read or write (the daemon's path: the script starts the daemon
//                                            with `no-leases`), presented-write (a write of a file a presenter of the
//                                            same process, not the coordinator's, relinquishes at once: the daemon's
//                                            request to it and its reply), leased-read (after the lease is granted),
//                                            or new-folder-write (each write in a folder no call has seen: the cold
//                                            canonicalisation and the daemon's claim in a new folder of a lease's
//                                            recall; profiled, not gated; N at most 2,000), or leased-scan (each
//                                            read of another file in 20 leased folders of 100, a sync agent's scan:
//                                            profiled, not gated; N at most 2,000); the client runs with the
//                                            settings a user gets (leases on) in every mode
//
// The script runs each with two values of N and divides the difference of the totals by the difference of N, so
// that start-up, warm-up and exit cancel out. Both have a synchronous `main` that never calls `dispatchMain()`
// (which async `main`s call): valgrind 3.19 dies in the `sigsuspend` that parks the main thread there.

import FCDaemon
import FCSystem
import FileCoordination
import Foundation
import Logging
import ServiceLifecycle

/// Ends the process with `message` on standard error.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("InstructionCounts: \(message)\n".utf8))
    exit(1)
}

/// Serves `socketPath` until standard input closes; grants leases unless `grantsLeases` is false.
func serveDaemon(socketPath: String, grantsLeases: Bool) -> Never {
    let logger = Logger(label: "filecoordd") { _ in SwiftLogNoOpLogHandler() }
    var configuration = DaemonConfiguration(socketPath: socketPath)
    configuration.grantsLeases = grantsLeases
    configuration.leasePolicy.minimumHold = .zero
    configuration.leasePolicy.initialBackoff = .zero
    configuration.leasePolicy.maximumBackoff = .zero
    let ready = DispatchSemaphore(value: 0)
    let service = DaemonService(configuration: configuration, logger: logger, ready: { ready.signal() })
    let group = ServiceGroup(services: [service], logger: logger)
    let finished = DispatchSemaphore(value: 0)
    Task.detached {
        do { try await group.run() } catch { fail("the daemon stopped: \(error)") }
        finished.signal()
    }
    guard ready.wait(timeout: .now() + 60) == .success else { fail("the daemon did not listen within 60 s") }
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    while readLine() != nil {}
    Task.detached { await group.triggerGracefulShutdown() }
    guard finished.wait(timeout: .now() + 60) == .success else { fail("the daemon did not stop within 60 s") }
    exit(0)
}

/// One coordinated call of `url` with an empty accessor.
func call(_ url: URL, writing: Bool) {
    var error: NSError?
    if writing {
        NSFileCoordinator().coordinate(writingItemAt: url, options: [], error: &error) { _ in }
    } else {
        NSFileCoordinator().coordinate(readingItemAt: url, options: [], error: &error) { _ in }
    }
    if let error { fail("a coordinated call failed: \(error)") }
}

/// The warm-up, then `count` calls in `mode`.
func runClient(socketPath: String, mode: String, count: Int) -> Never {
    setenv("FILECOORDD_SOCKET", socketPath, 1)
    setenv("FILECOORDD_PATH", "/nonexistent/filecoordd", 1)  // No daemon started behind the script's back.
    unsetenv("FILECOORD_ARBITER")
    let writing = mode.hasSuffix("write")
    let modes = ["read", "write", "leased-read", "presented-write", "new-folder-write", "leased-scan"]
    guard modes.contains(mode) else { fail("unknown mode \(mode)") }
    unsetenv("FILECOORD_LEASES")  // The settings a user gets: the client answers recalls (issue 38).
    let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
        "fc-instructions-\(ProcessIdentity.processID)"
    )
    do {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("x".utf8).write(to: folder.appendingPathComponent("item.txt"))
    } catch {
        fail("cannot make \(folder.path): \(error)")
    }
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("item.txt")
    // A presenter of the file that relinquishes to each writer at once (not the coordinator's own: it is asked).
    let presenter = mode == "presented-write" ? RelinquishingPresenter(url: url) : nil
    if let presenter { NSFileCoordinator.addFilePresenter(presenter) }
    // The warm-up: connection, caches, and for leases the grant, which follows the first claim's finish and is read
    // by the listener thread (a second is ample, even under valgrind); then the same 100 calls in every run.
    call(url, writing: writing)
    sleep(1)
    for _ in 0..<100 { call(url, writing: writing) }
    if mode == "new-folder-write" {
        // Each call in a folder no call has seen: the same folders are made whatever the count, so that making them
        // cancels out of the difference.
        let folders = (0..<2_000).map { folder.appendingPathComponent("new\($0)") }
        let items = folders.map { $0.appendingPathComponent("item.txt") }
        do {
            for (each, item) in zip(folders, items) {
                try FileManager.default.createDirectory(at: each, withIntermediateDirectories: true)
                try Data("x".utf8).write(to: item)
            }
        } catch {
            fail("cannot make the folders: \(error)")
        }
        guard count <= folders.count else { fail("at most \(folders.count) calls in new folders") }
        for item in items.prefix(count) { call(item, writing: true) }
    } else if mode == "leased-scan" {
        // A sync agent's scan: each read of another file, in 20 leased folders of 100 files, every file read once
        // and every lease granted before the count.
        let items = (0..<2_000).map { folder.appendingPathComponent("d\($0 / 100)/f\($0 % 100)") }
        do {
            for item in items {
                try FileManager.default.createDirectory(
                    at: item.deletingLastPathComponent(),
                    withIntermediateDirectories: true
                )
                try Data("x".utf8).write(to: item)
            }
        } catch {
            fail("cannot make the files: \(error)")
        }
        guard count <= items.count else { fail("at most \(items.count) calls in a scan") }
        for item in items { call(item, writing: false) }
        sleep(1)
        for item in items { call(item, writing: false) }
        for item in items.prefix(count) { call(item, writing: false) }
    } else {
        for _ in 0..<count { call(url, writing: writing) }
    }
    try? FileManager.default.removeItem(at: folder)
    exit(0)
}

let arguments = CommandLine.arguments
switch (arguments.count, arguments.count > 1 ? arguments[1] : "") {
case (3, "daemon"):
    serveDaemon(socketPath: arguments[2], grantsLeases: true)
case (4, "daemon") where arguments[3] == "no-leases":
    serveDaemon(socketPath: arguments[2], grantsLeases: false)
case (5, "client"):
    guard let count = Int(arguments[4]), count >= 0 else { fail("N must be a count, not \(arguments[4])") }
    runClient(socketPath: arguments[2], mode: arguments[3], count: count)
default:
    fail(
        "usage: InstructionCounts daemon SOCKET [no-leases] | InstructionCounts client SOCKET "
            + "read|write|leased-read|presented-write|new-folder-write N"
    )
}

/// Presents a file and relinquishes it to every writer at once, without a reacquirer (as the end-to-end benchmark's).
final class RelinquishingPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let presentedItemURL: URL?
    let presentedItemOperationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()

    init(url: URL) {
        presentedItemURL = url
    }

    var presentedItemCallbacks: FilePresenterCallbacks { [.relinquishToWriter] }

    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        writer(nil)
    }
}
