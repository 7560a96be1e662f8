import Benchmark
import FCDaemon
import FileCoordination
import Foundation
@preconcurrency import Glibc

// Issue 13: a change made without coordination, from `close()` in this process (which does not coordinate) to
// `presentedItemDidChange` on the queue of a presenter in another process, through the in-process daemon's inotify
// watcher; against the raw inotify delivery of the same `close()` to another process measured in the same run. Both
// helpers answer with one byte on a pipe, so both paths end with the same hop. Each sample is one change, made after
// a pause longer than the daemon's coalescing window (set to 2 ms here), so that every change opens a window and is
// delivered at once (a burst inside a window is coalesced by design: that is not what is measured). Also reported:
// the inotify watches the daemon uses for N presenters in one folder and in N folders, read from the kernel
// (/proc/self/fdinfo of the daemon's inotify descriptor, this process's).

private let watcherNames = ["EndToEnd.rawInotifyDelivery", "EndToEnd.uncoordinatedChangeToPresenter"]
private let coalescingWindow: Duration = .milliseconds(2)
private let pauseMicroseconds: useconds_t = 3_000

/// Truncates and writes one byte, then closes: a change made without coordination.
private func change(_ path: UnsafeMutablePointer<CChar>) -> Bool {
    let fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
    guard fd >= 0 else { return false }
    var byte = UInt8(ascii: "x")
    let written = write(fd, &byte, 1)
    close(fd)
    return written == 1
}

/// One change, then the helper's `c`: the time between them, per sample.
private func measureChanges(
    _ benchmark: Benchmark,
    _ record: WallClockRecord,
    path: UnsafeMutablePointer<CChar>,
    helper: HelperProcess
) {
    for _ in benchmark.scaledIterations {
        usleep(pauseMicroseconds)
        record.start()
        guard change(path) else { return benchmark.error("write failed: \(errnoText())") }
        guard helper.receive() == UInt8(ascii: "c") else { return benchmark.error("the helper went away") }
        record.stop(operations: 1)
    }
}

/// `close()` here, `IN_CLOSE_WRITE` read by raw inotify in a helper process, one byte back.
func rawInotifyDelivery() {
    let name = "EndToEnd.rawInotifyDelivery"
    let record = WallClockRecord()
    let fixture = Slot<(directory: ScratchDirectory, path: UnsafeMutablePointer<CChar>, helper: HelperProcess)>()
    Benchmark(
        name,
        configuration: .init(scalingFactor: .one),
        closure: { benchmark in
            let value = fixture.value!
            measureChanges(benchmark, record, path: value.path, helper: value.helper)
        },
        setup: {
            let directory = try ScratchDirectory()
            let file = try directory.file("watched.txt")
            let helper = try HelperProcess(role: "inotify", environment: ["FC_E2E_PATH": file])
            guard try helper.receiveLine() == "ready" else { throw BenchmarkFailure("the inotify helper failed") }
            fixture.value = (directory, strdup(file)!, helper)
        },
        teardown: {
            if let value = fixture.value {
                value.helper.finish()
                free(value.path)
                value.directory.remove()
            }
            recordWatcherResult(name, record)
        }
    )
}

/// `close()` here, seen by the daemon's watcher, `presentedItemDidChange` on the presenter's queue in a helper
/// process, one byte back.
func uncoordinatedChangeToPresenter() {
    let name = "EndToEnd.uncoordinatedChangeToPresenter"
    let record = WallClockRecord()
    let fixture = Slot<
        (directory: ScratchDirectory, daemon: InProcessDaemon, path: UnsafeMutablePointer<CChar>, helper: HelperProcess)
    >()
    Benchmark(
        name,
        configuration: .init(scalingFactor: .one),
        closure: { benchmark in
            let value = fixture.value!
            measureChanges(benchmark, record, path: value.path, helper: value.helper)
        },
        setup: {
            let directory = try ScratchDirectory()
            let daemon = try await InProcessDaemon.start(socketPath: directory.path + "/daemon/socket") {
                $0.coalescingWindow = coalescingWindow
            }
            let before = inotifyWatches()
            let file = try directory.file("watched.txt")
            let helper = try HelperProcess(role: "watched", environment: ["FC_E2E_PATH": file])
            guard try helper.receiveLine() == "ready" else { throw BenchmarkFailure("the presenter helper failed") }
            try daemon.waitForClients(1, what: name)
            // The watch is added on the watcher's thread after the registration: wait for it.
            try waitForWatches(before + 1, what: name)
            // A first change, not measured: the path is warm and the presenter is known to hear.
            usleep(pauseMicroseconds)
            guard change(strdup(file)!), helper.receive() == UInt8(ascii: "c") else {
                throw BenchmarkFailure("the presenter did not hear a change made without coordination")
            }
            try reportWatchesForPresenters(directory: directory)
            fixture.value = (directory, daemon, strdup(file)!, helper)
        },
        teardown: {
            if let value = fixture.value {
                value.helper.finish()
                await value.daemon.stop()
                free(value.path)
                value.directory.remove()
            }
            recordWatcherResult(name, record)
        }
    )
}

/// Watches of every inotify descriptor of this process (the in-process daemon's, plus its wake file's watch).
private func inotifyWatches() -> Int {
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    var total = 0
    for name in descriptors {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name),
            target.contains("inotify"),
            let info = try? String(contentsOfFile: "/proc/self/fdinfo/" + name, encoding: .utf8)
        else { continue }
        total += info.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
    }
    return total
}

private func waitForWatches(_ count: Int, what: String) throws {
    let deadline = Date().addingTimeInterval(10)
    while inotifyWatches() != count {
        guard Date() < deadline else {
            throw BenchmarkFailure("\(what): \(inotifyWatches()) inotify watches, expected \(count)")
        }
        usleep(1_000)
    }
}

/// Registers N presenters of files in one folder, then N presenters of files in N folders (in this process, through
/// the daemon), and reports the watches each costs (docs/ARCHITECTURE.md §7: watches equal the distinct watched
/// directories).
private func reportWatchesForPresenters(directory: ScratchDirectory) throws {
    let count = 100
    let before = inotifyWatches()
    let one = directory.path + "/one"
    try FileManager.default.createDirectory(atPath: one, withIntermediateDirectories: true)
    var presenters: [QuietPresenter] = []
    for index in 0..<count {
        let presenter = QuietPresenter(url: URL(fileURLWithPath: "\(one)/f\(index)"))
        NSFileCoordinator.addFilePresenter(presenter)
        presenters.append(presenter)
    }
    try waitForWatches(before + 1, what: "\(count) presenters in one folder")
    let inOne = inotifyWatches() - before
    for presenter in presenters { NSFileCoordinator.removeFilePresenter(presenter) }
    try waitForWatches(before, what: "presenters removed")
    presenters = []
    for index in 0..<count {
        let folder = directory.path + "/many/d\(index)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let presenter = QuietPresenter(url: URL(fileURLWithPath: folder + "/f"))
        NSFileCoordinator.addFilePresenter(presenter)
        presenters.append(presenter)
    }
    try waitForWatches(before + count, what: "\(count) presenters in \(count) folders")
    let inMany = inotifyWatches() - before
    for presenter in presenters { NSFileCoordinator.removeFilePresenter(presenter) }
    try waitForWatches(before, what: "presenters removed")
    RunResults.report(
        "EndToEnd watches: \(count) presenters in one folder use \(inOne) inotify watch(es); \(count) presenters in "
            + "\(count) folders use \(inMany)"
    )
}

/// Records a median and prints the watcher's ratio once both of its benchmarks ran in this run.
private func recordWatcherResult(_ name: String, _ record: WallClockRecord) {
    RunResults.record(name, record)
    let results = RunResults.read()
    guard let raw = results[watcherNames[0]], let watched = results[watcherNames[1]] else { return }
    RunResults.report(
        """

        ==== EndToEnd watcher (issue 13; p50 wall clock per change; reported, never gated) ====
        uncoordinatedChangeToPresenter   \(RunResults.format(watched))
        rawInotifyDelivery               \(RunResults.format(raw))
        uncoordinatedChangeToPresenter / rawInotifyDelivery = \(RunResults.ratio(watched / raw))
        ========================================================================================

        """
    )
}

/// A presenter that implements no callback: it costs its registration and its watches, and hears nothing.
private final class QuietPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let presentedItemURL: URL?
    let presentedItemOperationQueue = OperationQueue()

    init(url: URL) {
        presentedItemURL = url
    }

    var presentedItemCallbacks: FilePresenterCallbacks { [] }
}
