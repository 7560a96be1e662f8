import Benchmark
@_spi(Benchmarking) import FileCoordination
import Foundation
@preconcurrency import Glibc

// Issue 12: what the client costs on its own.
//
//   clientHotPath.uncontendedRead    the mallocs of one coordinated read in a process that is only a client: the
//   clientHotPath.uncontendedWrite   daemon runs in a helper process (role `daemon`), so that the count is the
//                                    client's alone and repeats from run to run (gated: Thresholds/6.3)
//
//   clientHotPath.uncontendedReadAnsweringRecalls
//                                    the same read by a client that answers lease recalls (the library's default)
//                                    from a daemon that grants no lease (`--no-leases`): the daemon's path as a
//                                    leasing client takes it in a folder it shares; its wall clock against
//                                    clientHotPath.uncontendedRead's, in the same run (no threshold file)
//
//   clientHotPath.leasedRead         the mallocs of one coordinated read decided in a lease this process holds
//                                    (issue 39), from the same helper's daemon granting leases (gated: Thresholds/6.3)
//
// Wall clock of the clientHotPath benchmarks is reported, never gated; their threshold files hold `mallocCountTotal`
// only.

/// The client's hot path, `read` or `write`: `mallocCountTotal` per 1,000 uncontended coordinated calls in a
/// process whose only other party is a daemon in a helper process.
///
/// Tolerance: the counts repeat exactly from run to run (75,000 per 1,000 reads and 78,000 per 1,000 writes in four
/// runs each, README), so the committed p90 is the measured one and the margin is the tolerance: ±2,000 per 1,000
/// calls, so that three mallocs more (or fewer) per call fail the check. The tool's check fails on an improvement
/// too: re-measure with `thresholds update` (README) when the client changes.
/// The configuration of every clientHotPath benchmark: mallocs per 1,000 calls, gated within 2,000 of the threshold.
var clientHotPathConfiguration: Benchmark.Configuration {
    .init(
        metrics: [.mallocCountTotal, .wallClock],
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 2_000])]
    )
}

func clientHotPath(_ operation: String, answeringRecalls: Bool = false) {
    let name =
        "EndToEnd.clientHotPath.uncontended\(operation == "read" ? "Read" : "Write")"
        + (answeringRecalls ? "AnsweringRecalls" : "")
    let record = WallClockRecord()
    let fixture = Slot<(directory: ScratchDirectory, daemon: HelperProcess, url: URL)>()
    let coordinate: @Sendable (URL) -> NSError? = { coordinatedCall($0, writing: operation != "read") }
    Benchmark(
        name,
        configuration: clientHotPathConfiguration,
        closure: { benchmark in
            let url = fixture.value!.url
            record.start()
            for _ in benchmark.scaledIterations {
                if let error = coordinate(url) { return benchmark.error("coordinated \(operation) failed: \(error)") }
            }
            record.stop(operations: benchmark.scaledIterations.count)
        },
        setup: {
            let directory = try ScratchDirectory()
            let socketPath = directory.path + "/daemon/socket"
            let daemon = try HelperProcess(
                role: "daemon",
                environment: ["FC_E2E_SOCKET": socketPath, "FC_E2E_NO_LEASES": answeringRecalls ? "1" : "0"]
            )
            fixture.value = (directory, daemon, URL(fileURLWithPath: try directory.file("\(operation).txt")))
            guard try daemon.receiveLine() == "ready" else { throw BenchmarkFailure("the daemon did not start") }
            // This process is a client of the helper's daemon only: no daemon of its own, none started, never the
            // in-process arbiter, and no lease (each call takes the daemon's path): either it asks for none, or it
            // answers recalls and the daemon grants none.
            setenv("FILECOORDD_SOCKET", socketPath, 1)
            setenv("FILECOORDD_PATH", "/nonexistent/filecoordd", 1)
            setenv("FILECOORD_LEASES", answeringRecalls ? "1" : "0", 1)
            unsetenv("FILECOORD_ARBITER")
            if let error = coordinate(fixture.value!.url) {
                throw BenchmarkFailure("the first coordinated \(operation) failed: \(error)")
            }
            guard daemon.send(line: "clients"), try daemon.receiveLine() == "1" else {
                throw BenchmarkFailure("\(name): the call did not reach the helper's daemon (in-process fallback?)")
            }
        },
        teardown: {
            if let value = fixture.value {
                value.daemon.finish()
                value.directory.remove()
            }
            RunResults.record(name, record)
        }
    )
}

/// The client's leased path: `mallocCountTotal` per 1,000 coordinated reads that a lease held by this process decides,
/// the lease granted by a daemon in a helper process. Per read: the coordinator, its purpose, the URL's path and the
/// claim's one item (issue 39, Benchmarks/README.md). Tolerance as ``clientHotPath(_:answeringRecalls:)``'s.
func clientHotPathLeasedRead() {
    let name = "EndToEnd.clientHotPath.leasedRead"
    let record = WallClockRecord()
    let fixture = Slot<(directory: ScratchDirectory, daemon: HelperProcess, url: URL)>()
    Benchmark(
        name,
        configuration: clientHotPathConfiguration,
        closure: { benchmark in
            let url = fixture.value!.url
            let decided = LeaseBenchmarkSPI.decidedInProcess
            record.start()
            for _ in benchmark.scaledIterations {
                if let error = coordinatedCall(url, writing: false) {
                    return benchmark.error("coordinated read failed: \(error)")
                }
            }
            record.stop(operations: benchmark.scaledIterations.count)
            let inLease = LeaseBenchmarkSPI.decidedInProcess - decided
            if inLease != benchmark.scaledIterations.count {
                return benchmark.error(
                    "\(name): \(inLease) of \(benchmark.scaledIterations.count) reads were decided in the lease"
                )
            }
        },
        setup: {
            let directory = try ScratchDirectory()
            let socketPath = directory.path + "/daemon/socket"
            let daemon = try HelperProcess(role: "daemon", environment: ["FC_E2E_SOCKET": socketPath])
            try FileManager.default.createDirectory(
                atPath: directory.path + "/leased",
                withIntermediateDirectories: true
            )
            fixture.value = (directory, daemon, URL(fileURLWithPath: try directory.file("leased/read.txt")))
            guard try daemon.receiveLine() == "ready" else { throw BenchmarkFailure("the daemon did not start") }
            setenv("FILECOORDD_SOCKET", socketPath, 1)
            setenv("FILECOORDD_PATH", "/nonexistent/filecoordd", 1)
            setenv("FILECOORD_LEASES", "1", 1)
            unsetenv("FILECOORD_ARBITER")
            // The grant follows the first read's finish and is read by the listener: read until a read is decided
            // in the lease (each one a round trip to the daemon until then), for at most 10 s.
            let deadline = Date().addingTimeInterval(10)
            while LeaseBenchmarkSPI.decidedInProcess == 0 {
                if let error = coordinatedCall(fixture.value!.url, writing: false) {
                    throw BenchmarkFailure("a coordinated read failed: \(error)")
                }
                guard Date() < deadline else { throw BenchmarkFailure("\(name): no lease was granted within 10 s") }
            }
        },
        teardown: {
            if let value = fixture.value {
                value.daemon.finish()
                value.directory.remove()
            }
            RunResults.record(name, record)
        }
    )
}

extension HelperRole {
    /// The `daemon` role: `FCDaemon` on FC_E2E_SOCKET in this process (granting no lease with FC_E2E_NO_LEASES=1);
    /// prints `ready`, answers the line `clients` with how many clients connected so far, and stops gracefully when
    /// standard input closes.
    static func serveDaemon(socketPath: String, grantsLeases: Bool) {
        let daemon = Slot<InProcessDaemon>()
        let failure = Slot<String>()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                daemon.value = try await InProcessDaemon.start(socketPath: socketPath) {
                    $0.grantsLeases = grantsLeases
                }
            } catch {
                failure.value = "\(error)"
            }
            done.signal()
        }
        done.wait()
        guard let running = daemon.value else { fail("the daemon did not start: \(failure.value ?? "?")") }
        say("ready")
        while let line = readLine() {
            if line == "clients" { say("\(running.clients)") }
        }
        Task.detached {
            await running.stop()
            done.signal()
        }
        done.wait()
    }
}
