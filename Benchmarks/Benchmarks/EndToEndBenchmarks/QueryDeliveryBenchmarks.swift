import Benchmark
import FileCoordination
import Foundation
@preconcurrency import Glibc

// Issue 44: an uncoordinated create's arrival at a live query against raw inotify delivery of the same create, in
// the shape of the watcher's benchmark (WatcherBenchmarks.swift): this process makes a file with open(O_CREAT) and
// close(), and a helper process that waits for the news writes one byte back. The raw helper is blocked in read() of
// its own inotify instance (IN_CREATE on the folder); the query helper runs an NSMetadataQuery of the folder
// (batching interval 0, its own operation queue) through the in-process daemon and writes a byte per item an update
// adds. Both cost the helper's wake-up and this process's; the query's path adds the daemon's watcher, its query
// service, the frame, the client's reader, the query's work queue and the operation queue. QueryArrivalBenchmarks.swift
// keeps the earlier pair, whose raw side reads in the creating thread with no wake-up at all.

private let deliveryNames = [
    "EndToEnd.rawInotifyCreateDelivery", "EndToEnd.queryCreateDelivery", "EndToEnd.queryCreateDeliveryAmong50000",
]
private let deliveryPauseMicroseconds: useconds_t = 3_000

private func deliveryConfiguration() -> Benchmark.Configuration {
    .init(scalingFactor: .one, maxDuration: .seconds(10), maxIterations: 1_000)
}

/// A new name for each create: the benchmark calls its closure again with the same iteration numbers.
private final class DeliveryNames: @unchecked Sendable {
    private var next = 0
    func take() -> String {
        next += 1
        return "d\(next)"
    }
}

/// One create per sample in `folder`, then the helper's `c`: the time between them. `names` lives as long as the
/// benchmark: a name made again creates nothing, and the helper would wait for an event that never comes.
private func measureCreates(
    _ benchmark: Benchmark,
    _ record: WallClockRecord,
    folder: String,
    names: DeliveryNames,
    helper: HelperProcess
) {
    for _ in benchmark.scaledIterations {
        let path = "\(folder)/\(names.take())"
        usleep(deliveryPauseMicroseconds)
        record.start()
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return benchmark.error("cannot create \(path): \(errnoText())") }
        close(fd)
        guard helper.receive() == UInt8(ascii: "c") else { return benchmark.error("the helper went away") }
        record.stop(operations: 1)
    }
}

/// open(O_CREAT) and close() here, `IN_CREATE` read by raw inotify in a helper process, one byte back.
func rawInotifyCreateDelivery() {
    let name = deliveryNames[0]
    let record = WallClockRecord()
    let names = DeliveryNames()
    let fixture = Slot<(directory: ScratchDirectory, folder: String, helper: HelperProcess)>()
    Benchmark(
        name,
        configuration: deliveryConfiguration(),
        closure: { benchmark in
            let value = fixture.value!
            measureCreates(benchmark, record, folder: value.folder, names: names, helper: value.helper)
        },
        setup: {
            let directory = try ScratchDirectory()
            let folder = directory.path + "/raw"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let helper = try HelperProcess(role: "inotifyCreate", environment: ["FC_E2E_PATH": folder])
            guard try helper.receiveLine() == "ready" else { throw BenchmarkFailure("the inotify helper failed") }
            fixture.value = (directory, folder, helper)
        },
        teardown: {
            if let value = fixture.value {
                value.helper.finish()
                value.directory.remove()
            }
            recordDeliveryResult(name, record)
        }
    )
}

/// open(O_CREAT) and close() here, seen by the daemon's watcher, told to a query in a helper process, one byte back;
/// with `among` files already in the tree (in folders of 1,000 below it): `queryCreateDeliveryAmong50000` against
/// `queryCreateDelivery` is what a create costs a query for the results it already holds (each batch places its
/// items among them; before stop 59 it sorted them all again).
func queryCreateDelivery(among existing: Int = 0) {
    let name = existing == 0 ? deliveryNames[1] : deliveryNames[2]
    let record = WallClockRecord()
    let names = DeliveryNames()
    let fixture = Slot<(directory: ScratchDirectory, daemon: InProcessDaemon, folder: String, helper: HelperProcess)>()
    Benchmark(
        name,
        configuration: deliveryConfiguration(),
        closure: { benchmark in
            let value = fixture.value!
            measureCreates(benchmark, record, folder: value.folder, names: names, helper: value.helper)
        },
        setup: {
            let directory = try ScratchDirectory()
            let daemon = try await InProcessDaemon.start(socketPath: directory.path + "/daemon/socket")
            let folder = directory.path + "/tree"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for number in 0..<existing {
                let subfolder = folder + "/existing\(number / 1_000)"
                if number % 1_000 == 0 {
                    try FileManager.default.createDirectory(atPath: subfolder, withIntermediateDirectories: true)
                }
                let fd = open(subfolder + "/f\(number)", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
                guard fd >= 0 else { throw BenchmarkFailure("cannot make the tree: \(errnoText())") }
                close(fd)
            }
            let helper = try HelperProcess(role: "queryCreates", environment: ["FC_E2E_PATH": folder])
            guard try helper.receiveLine(timeout: 120) == "ready" else {
                throw BenchmarkFailure("the query helper did not gather")
            }
            fixture.value = (directory, daemon, folder, helper)
        },
        teardown: {
            if let value = fixture.value {
                value.helper.finish()
                await value.daemon.stop()
                value.directory.remove()
            }
            recordDeliveryResult(name, record)
        }
    )
}

private func recordDeliveryResult(_ name: String, _ record: WallClockRecord) {
    RunResults.record(name, record)
    let results = RunResults.read()
    if name == deliveryNames[2], let small = results[deliveryNames[1]], let large = results[deliveryNames[2]] {
        RunResults.report(
            """

            ==== EndToEnd create delivery among 50,000 results (p50; reported, never gated) ====
            queryCreateDeliveryAmong50000 \(RunResults.format(large)), \(RunResults.ratio(large / small)) queryCreateDelivery
            ====================================================================================

            """
        )
    }
    guard name != deliveryNames[2], let raw = results[deliveryNames[0]], let query = results[deliveryNames[1]] else {
        return
    }
    RunResults.report(
        """

        ==== EndToEnd create delivery (issue 44; p50 wall clock from open(O_CREAT) to a helper's byte; reported, never gated) ====
        queryCreateDelivery (batching interval 0)   \(RunResults.format(query))
        rawInotifyCreateDelivery                    \(RunResults.format(raw))
        queryCreateDelivery / rawInotifyCreateDelivery = \(RunResults.ratio(query / raw)) (target <= 1.5x plus the interval)
        ========================================================================================================================

        """
    )
}

extension HelperRole {
    /// An NSMetadataQuery of the folder `folder` (batching interval 0, its own operation queue): `ready` once gathered,
    /// then one `c` per item an update adds, from the operation queue, until standard input closes.
    static func queryCreates(_ folder: String) {
        let query = NSMetadataQuery()
        query.searchScopes = [URL(fileURLWithPath: folder)]
        query.notificationBatchingInterval = 0
        query.operationQueue = OperationQueue()
        let gathered = DispatchSemaphore(value: 0)
        let center = NotificationCenter.default
        let observers = [
            center.addObserver(forName: .NSMetadataQueryDidFinishGathering, object: query, queue: nil) { _ in
                gathered.signal()
            },
            center.addObserver(forName: .NSMetadataQueryDidUpdate, object: query, queue: nil) { notification in
                let added = notification.userInfo?[NSMetadataQueryUpdateAddedItemsKey] as? [NSMetadataItem] ?? []
                for _ in added {
                    var reply = UInt8(ascii: "c")
                    guard BareSocket.writeAll(1, &reply, 1) else { exit(0) }
                }
            },
        ]
        guard query.start(), gathered.wait(timeout: .now() + 30) == .success else { fail("the query did not gather") }
        say("ready")
        while readLine() != nil {}
        query.stop()
        for observer in observers { center.removeObserver(observer) }
    }
}
