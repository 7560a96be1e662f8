import Benchmark
import FileCoordination
import Foundation
@preconcurrency import Glibc

// Issue 44: how long an uncoordinated create takes to reach a live query, against raw inotify delivery of the same
// create to this process. Both make a file with open(O_CREAT) and close() in a folder and wait for the news of it:
// the raw one a blocking read() of its own inotify instance (IN_CREATE), the query the NSMetadataQueryDidUpdate
// naming the file among the added items, through the in-process daemon (its watcher, its query service, the frame,
// the client, the query's work queue, the notification on the query's operation queue), with
// notificationBatchingInterval 0 so that the ratio is the path's own cost (the target is 1.5x plus the interval).

private let arrivalNames = ["EndToEnd.rawInotifyCreate", "EndToEnd.queryCreateArrival"]
private func arrivalConfiguration() -> Benchmark.Configuration {
    .init(scalingFactor: .one, maxDuration: .seconds(10), maxIterations: 300)
}

/// A new name for each create of a run: the benchmark calls its closure again and again with the same iteration
/// numbers, and a second open(O_CREAT) of an existing file creates nothing.
private final class Names: @unchecked Sendable {
    private var next = 0
    func take() -> String {
        next += 1
        return "f\(next)"
    }
}

/// Makes an empty file at `path` without coordination.
private func createFile(_ path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw BenchmarkFailure("cannot create \(path): \(errnoText())") }
    close(fd)
}

func rawInotifyCreate() {
    let name = arrivalNames[0]
    let record = WallClockRecord()
    let names = Names()
    let fixture = Slot<(directory: ScratchDirectory, inotify: Int32)>()
    Benchmark(
        name,
        configuration: arrivalConfiguration(),
        closure: { benchmark in
            let (directory, inotify) = fixture.value!
            var buffer = [UInt8](repeating: 0, count: 4096)
            for _ in benchmark.scaledIterations {
                let path = "\(directory.path)/raw/\(names.take())"
                record.start()
                try createFile(path)
                // Read until the create's event (one event per create here: IN_CREATE only).
                let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
                record.stop(operations: 1)
                guard count > 0 else { return benchmark.error("inotify read failed: \(errnoText())") }
            }
        },
        setup: {
            let directory = try ScratchDirectory()
            try FileManager.default.createDirectory(atPath: directory.path + "/raw", withIntermediateDirectories: true)
            let inotify = inotify_init1(Int32(IN_CLOEXEC))
            guard inotify >= 0, inotify_add_watch(inotify, directory.path + "/raw", UInt32(IN_CREATE)) >= 0 else {
                throw BenchmarkFailure("cannot watch the folder: \(errnoText())")
            }
            fixture.value = (directory, inotify)
        },
        teardown: {
            if let value = fixture.value {
                close(value.inotify)
                value.directory.remove()
            }
            recordArrivalResult(name, record)
        }
    )
}

/// A query of `folder` whose updates signal `arrived` with the paths they add.
private final class ArrivalQuery: @unchecked Sendable {
    let query = NSMetadataQuery()
    let arrived = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var added: Set<String> = []
    private var observers: [any NSObjectProtocol] = []

    init(folder: String) throws {
        query.searchScopes = [URL(fileURLWithPath: folder)]
        query.notificationBatchingInterval = 0
        query.operationQueue = OperationQueue()
        let gathered = DispatchSemaphore(value: 0)
        observers.append(
            NotificationCenter.default.addObserver(
                forName: .NSMetadataQueryDidFinishGathering,
                object: query,
                queue: nil
            ) { _ in gathered.signal() }
        )
        observers.append(
            NotificationCenter.default.addObserver(
                forName: .NSMetadataQueryDidUpdate,
                object: query,
                queue: nil
            ) { [weak self] notification in
                guard let self else { return }
                let items = notification.userInfo?[NSMetadataQueryUpdateAddedItemsKey] as? [NSMetadataItem] ?? []
                let paths = items.compactMap { $0.value(forAttribute: NSMetadataItemPathKey) as? String }
                guard !paths.isEmpty else { return }
                self.lock.withLock { self.added.formUnion(paths) }
                self.arrived.signal()
            }
        )
        guard query.start(), gathered.wait(timeout: .now() + 30) == .success else {
            throw BenchmarkFailure("the arrival query did not gather")
        }
    }

    /// Waits until an update has added `path`.
    func waitFor(_ path: String) -> Bool {
        while !lock.withLock({ added.contains(path) }) {
            guard arrived.wait(timeout: .now() + 10) == .success else { return false }
        }
        return true
    }

    func stop() {
        query.stop()
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
    }
}

func queryCreateArrival() {
    let name = arrivalNames[1]
    let record = WallClockRecord()
    let names = Names()
    let fixture = Slot<(directory: ScratchDirectory, daemon: InProcessDaemon, query: ArrivalQuery)>()
    Benchmark(
        name,
        configuration: arrivalConfiguration(),
        closure: { benchmark in
            let (directory, _, query) = fixture.value!
            // The query names items by their canonical paths.
            let folder = URL(fileURLWithPath: directory.path + "/tree").resolvingSymlinksInPath().path
            for _ in benchmark.scaledIterations {
                let path = "\(folder)/\(names.take())"
                record.start()
                try createFile(path)
                let arrived = query.waitFor(path)
                record.stop(operations: 1)
                guard arrived else { return benchmark.error("the create of \(path) never reached the query") }
            }
        },
        setup: {
            let directory = try ScratchDirectory()
            let daemon = try await InProcessDaemon.start(socketPath: directory.path + "/daemon/socket")
            try FileManager.default.createDirectory(atPath: directory.path + "/tree", withIntermediateDirectories: true)
            fixture.value = (directory, daemon, try ArrivalQuery(folder: directory.path + "/tree"))
        },
        teardown: {
            if let value = fixture.value {
                value.query.stop()
                await value.daemon.stop()
                value.directory.remove()
            }
            recordArrivalResult(name, record)
        }
    )
}

private func recordArrivalResult(_ name: String, _ record: WallClockRecord) {
    RunResults.record(name, record)
    let results = RunResults.read()
    guard let raw = results[arrivalNames[0]], let query = results[arrivalNames[1]] else { return }
    RunResults.report(
        """

        ==== EndToEnd create arrival (issue 44; p50 wall clock from open(O_CREAT) to the news; reported, never gated) ====
        queryCreateArrival (batching interval 0)   \(RunResults.format(query))
        rawInotifyCreate                           \(RunResults.format(raw))
        queryCreateArrival / rawInotifyCreate = \(RunResults.ratio(query / raw)) (target <= 1.5x plus the interval)
        ==================================================================================================================

        """
    )
}
