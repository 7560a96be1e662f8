import Benchmark
import FCCore
import FCDaemon
import FileCoordination
import Foundation
@preconcurrency import Glibc

// Leases (issue 23; docs/SEMANTICS.md §13), each against a baseline measured in the same run:
//
//   leasedRead, leasedWrite  a process alone in a folder, after its lease is granted (FILECOORD_LEASES=1): against
//                            bareSocketRoundTrip (target <= 0.3x) and openFlockClose (target <= 1x, issue 39)
//   leaseRecall              the first claim of a second process on a file a helper process holds a lease on:
//                            recall, return, grant; against bareThreePartyRoundTrip (target <= 3x), and against
//                            bareThreePartyRoundTripAfterIdle, the same round trip 20 ms after the last, as each
//                            recall comes 20 ms after the holder's read (the same regime: cores that slept; target
//                            <= 2x, issue 39)
//   syncScan                 coordinated reads of 10,000 files in 100 folders under leases, as a sync agent hashes
//                            them, against syncScanUncoordinated (the same reads without coordination; target <= 1.5x)
//
// The lease ratios are printed by whichever of these benchmarks runs last once their baselines are known
// (`LeaseResults`); run them with `--filter 'EndToEnd\.(lease|leased|syncScan|bare|openFlock).*'`.

/// The names whose results the lease ratios need.
enum LeaseResults {
    static let names = [
        "EndToEnd.bareSocketRoundTrip", "EndToEnd.openFlockClose", "EndToEnd.bareThreePartyRoundTrip",
        "EndToEnd.leasedRead", "EndToEnd.leasedWrite", "EndToEnd.leaseRecall", "EndToEnd.syncScan",
        "EndToEnd.syncScanUncoordinated", "EndToEnd.bareThreePartyRoundTripAfterIdle",
    ]

    /// Records `name`'s median, and prints the lease ratios once every name is known.
    static func record(_ name: String, _ record: WallClockRecord) {
        guard let median = record.median else { return }
        RunResults.append(name, median)
        RunResults.report("\(name): p50 \(RunResults.format(median)) per operation over \(record.samples) samples")
        printIfComplete()
    }

    static func printIfComplete() {
        let results = RunResults.read()
        guard names.allSatisfy({ results[$0] != nil }) else { return }
        func value(_ name: String) -> Double { results["EndToEnd." + name]! }
        let bare = value("bareSocketRoundTrip")
        let flock = value("openFlockClose")
        let three = value("bareThreePartyRoundTrip")
        func line(_ name: String, _ baseline: String, _ ratio: Double, _ target: String, _ met: Bool) -> String {
            "\(name) / \(baseline) = \(RunResults.ratio(ratio))  (target \(target): \(met ? "met" : "MISSED"))"
        }
        let read = value("leasedRead") / bare
        let write = value("leasedWrite") / bare
        let readFlock = value("leasedRead") / flock
        let writeFlock = value("leasedWrite") / flock
        let recall = value("leaseRecall") / three
        let idle = value("bareThreePartyRoundTripAfterIdle")
        let recallIdle = value("leaseRecall") / idle
        let scan = value("syncScan") / value("syncScanUncoordinated")
        RunResults.report(
            """

            ==== EndToEnd lease ratios (this run; p50 wall clock per operation; reported, never gated) ====
            leasedRead                       \(RunResults.format(value("leasedRead")))
            leasedWrite                      \(RunResults.format(value("leasedWrite")))
            leaseRecall                      \(RunResults.format(value("leaseRecall")))
            syncScan (10,000 files)          \(RunResults.format(value("syncScan")))
            syncScanUncoordinated            \(RunResults.format(value("syncScanUncoordinated")))
            bareSocketRoundTrip              \(RunResults.format(bare))
            openFlockClose                   \(RunResults.format(flock))
            bareThreePartyRoundTrip          \(RunResults.format(three))
            bareThreePartyRoundTripAfterIdle \(RunResults.format(idle))
            \(line("leasedRead", "bareSocketRoundTrip", read, "<= 0.3", read <= 0.3))
            \(line("leasedWrite", "bareSocketRoundTrip", write, "<= 0.3", write <= 0.3))
            \(line("leasedRead", "openFlockClose", readFlock, "<= 1", readFlock <= 1))
            \(line("leasedWrite", "openFlockClose", writeFlock, "<= 1", writeFlock <= 1))
            leaseRecall / bareThreePartyRoundTrip = \(RunResults.ratio(recall))  (reported)
            \(line("leaseRecall", "bareThreePartyRoundTripAfterIdle", recallIdle, "<= 2", recallIdle <= 2))
            \(line("syncScan", "syncScanUncoordinated", scan, "<= 1.5", scan <= 1.5))
            ===============================================================================================

            """
        )
    }
}

/// Turns leases on for this process's client: before its first coordinated call (each benchmark runs in a process of
/// its own), with a daemon that recalls at once and never backs off, so that every sample measures the same thing.
private func startLeasingDaemon(_ directory: ScratchDirectory) async throws -> InProcessDaemon {
    try await InProcessDaemon.start(socketPath: directory.path + "/daemon/socket", leases: true) { configuration in
        configuration.leasePolicy.minimumHold = .zero
        configuration.leasePolicy.initialBackoff = .zero
        configuration.leasePolicy.maximumBackoff = .zero
    }
}

/// A coordinated read or write by a process alone in its folder, after the lease is granted.
func leasedClaim(writing: Bool) {
    let name = writing ? "EndToEnd.leasedWrite" : "EndToEnd.leasedRead"
    let record = WallClockRecord()
    let fixture = Slot<(directory: ScratchDirectory, daemon: InProcessDaemon, url: URL)>()
    Benchmark(
        name,
        closure: { benchmark in
            let url = fixture.value!.url
            record.start()
            for _ in benchmark.scaledIterations {
                if let error = coordinatedCall(url, writing: writing) {
                    return benchmark.error("\(name) failed: \(error)")
                }
            }
            record.stop(operations: benchmark.scaledIterations.count)
        },
        setup: {
            let directory = try ScratchDirectory()
            let daemon = try await startLeasingDaemon(directory)
            try FileManager.default.createDirectory(
                atPath: directory.path + "/leased",
                withIntermediateDirectories: true
            )
            let url = URL(fileURLWithPath: try directory.file("leased/item.txt"))
            fixture.value = (directory, daemon, url)
            if let error = coordinatedCall(url, writing: writing) { throw BenchmarkFailure("first claim: \(error)") }
            // The grant travels after the first claim's finish; the listener takes it. A few more claims let it land.
            usleep(100_000)
            for _ in 0..<100 { _ = coordinatedCall(url, writing: writing) }
        },
        teardown: {
            if let value = fixture.value {
                await value.daemon.stop()
                value.directory.remove()
            }
            LeaseResults.record(name, record)
        }
    )
}

/// The first claim of this process on a file another process (a `holder` helper, FILECOORD_LEASES=1) holds a lease
/// on: the daemon recalls the lease, the holder returns it, the claim is granted. One operation per sample; each
/// sample's file lies in a folder of its own, leased to the helper just before (untimed).
func leaseRecall() {
    let name = "EndToEnd.leaseRecall"
    let record = WallClockRecord()
    final class Fixture: @unchecked Sendable {
        let directory: ScratchDirectory
        let daemon: InProcessDaemon
        let holder: HelperProcess
        var next = 0
        init(directory: ScratchDirectory, daemon: InProcessDaemon, holder: HelperProcess) {
            self.directory = directory
            self.daemon = daemon
            self.holder = holder
        }
    }
    let fixture = Slot<Fixture>()
    Benchmark(
        name,
        configuration: .init(scalingFactor: .one),
        closure: { benchmark in
            let value = fixture.value!
            for _ in benchmark.scaledIterations {
                value.next += 1
                let folder = value.directory.path + "/recall\(value.next)"
                do {
                    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                    _ = try value.directory.file("recall\(value.next)/item.txt")
                    guard value.holder.send(line: folder + "/item.txt"), try value.holder.receiveLine() == "leased"
                    else { return benchmark.error("the holder did not take its lease") }
                } catch {
                    return benchmark.error("\(error)")
                }
                let url = URL(fileURLWithPath: folder + "/item.txt")
                record.start()
                if let error = coordinatedCall(url, writing: true) {
                    return benchmark.error("\(name) failed: \(error)")
                }
                record.stop(operations: 1)
            }
        },
        setup: {
            let directory = try ScratchDirectory()
            // The daemon grants the helper its leases; this process takes none itself (it says it answers no
            // recall), so that each sample's write finds the helper's lease alone.
            let daemon = try await InProcessDaemon.start(
                socketPath: directory.path + "/daemon/socket",
                leases: true
            ) { configuration in
                configuration.leasePolicy.minimumHold = .zero
                configuration.leasePolicy.initialBackoff = .zero
                configuration.leasePolicy.maximumBackoff = .zero
            }
            setenv("FILECOORD_LEASES", "0", 1)
            let holder = try HelperProcess(role: "holder", environment: ["FILECOORD_LEASES": "1"])
            guard try holder.receiveLine() == "ready" else { throw BenchmarkFailure("the holder did not start") }
            fixture.value = Fixture(directory: directory, daemon: daemon, holder: holder)
        },
        teardown: {
            if let value = fixture.value {
                value.holder.finish()
                await value.daemon.stop()
                value.directory.remove()
            }
            LeaseResults.record(name, record)
        }
    )
}

/// Coordinated reads of 10,000 files in 100 folders, as a sync agent hashes a tree (`coordinated`), or the same reads
/// without coordination. Per file: one coordinated read that opens and reads it.
func syncScan(coordinated coordinating: Bool) {
    let name = coordinating ? "EndToEnd.syncScan" : "EndToEnd.syncScanUncoordinated"
    let record = WallClockRecord()
    let fixture = Slot<(directory: ScratchDirectory, daemon: InProcessDaemon?, files: [URL])>()
    func read(_ url: URL) -> Bool {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        _ = withUnsafeMutableBytes(of: &buffer) { Glibc.read(fd, $0.baseAddress, $0.count) }
        close(fd)
        return true
    }
    Benchmark(
        name,
        configuration: .init(scalingFactor: .one, maxDuration: .seconds(10), maxIterations: 5),
        closure: { benchmark in
            let files = fixture.value!.files
            for _ in benchmark.scaledIterations {
                record.start()
                for url in files {
                    if coordinating {
                        var error: NSError?
                        var ok = true
                        NSFileCoordinator().coordinate(readingItemAt: url, options: [], error: &error) { ok = read($0) }
                        if let error { return benchmark.error("coordinated read failed: \(error)") }
                        if !ok { return benchmark.error("cannot read \(url.path)") }
                    } else if !read(url) {
                        return benchmark.error("cannot read \(url.path)")
                    }
                }
                // Per operation: the whole scan.
                record.stop(operations: 1)
            }
        },
        setup: {
            let directory = try ScratchDirectory()
            let daemon = coordinating ? try await startLeasingDaemon(directory) : nil
            var files: [URL] = []
            files.reserveCapacity(10_000)
            for folder in 0..<100 {
                try FileManager.default.createDirectory(
                    atPath: directory.path + "/tree/d\(folder)",
                    withIntermediateDirectories: true
                )
                for file in 0..<100 {
                    files.append(URL(fileURLWithPath: try directory.file("tree/d\(folder)/f\(file)")))
                }
            }
            fixture.value = (directory, daemon, files)
        },
        teardown: {
            if let value = fixture.value {
                await value.daemon?.stop()
                value.directory.remove()
            }
            LeaseResults.record(name, record)
        }
    )
}

extension HelperRole {
    /// `holder`: a client with leases (FILECOORD_LEASES=1). Prints `ready`; then for each line (a path) makes one
    /// coordinated read of it, waits until a second read of it needs no round trip (its lease is granted), and prints
    /// `leased`.
    static func holdLeases() {
        say("ready")
        while let line = readLine() {
            let url = URL(fileURLWithPath: line)
            if let error = coordinatedCall(url, writing: false) { fail("read of \(line) failed: \(error)") }
            // The grant comes after the read's finish, read by the listener: let it land.
            usleep(20_000)
            say("leased")
        }
    }
}
