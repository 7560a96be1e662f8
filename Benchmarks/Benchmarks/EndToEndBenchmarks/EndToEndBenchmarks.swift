import Benchmark
import FileCoordination
import Foundation
@preconcurrency import Glibc

// Coordination through a real daemon, each number next to a bare baseline measured in the same run
// (docs/ARCHITECTURE.md §7, "Performance targets"):
//
//   uncontendedRead                  against bareSocketRoundTrip (target: within 2x) and openFlockClose plus one
//                                    bare round trip (target: faster)
//   writeWithRelinquishingPresenter  against bareThreePartyRoundTrip (target: within 2x)
//   uncontendedWrite                 the read's twin, against bareSocketRoundTrip (target: within 2x)
//   claimsPerSecond8Clients          8 client processes' coordinated reads per second, with the CPU time per claim
//                                    of the clients and of the daemon, reported
//   clientHotPath.*                  the client's mallocs per read and per write, the daemon in another process
//                                    (gated: the only end-to-end thresholds), and the read of a client that answers
//                                    lease recalls from a daemon that grants none (not gated)
//   cluster.*                        cluster mode across two hosts through a real etcd cluster (ClusterBenchmarks.swift,
//                                    issue 40), printing ratios of their own
//
// The daemon is `FCDaemon.DaemonService` under a `ServiceGroup` in the benchmark process, on a private socket; the
// other parties are this executable re-run as helpers (HelperRoles.swift). Every benchmark runs in a process of its
// own, so each records its median in a file of the run and the last one prints the ratios (`RunResults`).
//
// Wall clock is reported, never gated. No thresholds but for clientHotPath.*: elsewhere the daemon runs in the
// measured process, so its allocations (NIO, other threads) are counted and vary from run to run; the bare baselines
// allocate nothing and measure no code of ours. Names use no spaces and no '/'.

/// A value built in `setup:` and used by the benchmark and its `teardown:` (each benchmark runs in its own process).
final class Slot<Value>: @unchecked Sendable {
    var value: Value?
}

let benchmarks: @Sendable () -> Void = {
    // A helper process (this executable, re-run by a benchmark's setup) plays its part and never registers benchmarks.
    if let role = ProcessInfo.processInfo.environment[HelperProcess.roleVariable] {
        HelperRole.run(role)
    }

    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        thresholds: nil
    )

    bareSocketRoundTrip()
    openFlockClose()
    uncontendedClaim(writing: false)
    uncontendedClaim(writing: true)
    clientHotPath("read")
    clientHotPath("write")
    clientHotPath("read", answeringRecalls: true)
    clientHotPathLeasedRead()
    bareThreePartyRoundTrip()
    writeWithRelinquishingPresenter()
    claimsPerSecond8Clients()
    rawInotifyDelivery()
    uncoordinatedChangeToPresenter()
    leasedClaim(writing: false)
    leasedClaim(writing: true)
    leaseRecall()
    bareThreePartyRoundTrip(afterIdle: true)
    syncScan(coordinated: true)
    syncScan(coordinated: false)
    clusterClaim(shared: false)
    clusterClaim(shared: true)
    bareEtcdPutWatch()
    hostLeaseRecall()
    clusterPresenterWrite(remote: false)
    clusterPresenterWrite(remote: true)
    contendedClaimsPerSecond()
    plainRecursiveListing()
    queryGathering()
    rawInotifyCreate()
    queryCreateArrival()
    rawInotifyCreateDelivery()
    queryCreateDelivery()
    queryCreateDelivery(among: 50_000)
}

// MARK: - Baselines

/// A 32-byte message written to a Unix socket and echoed by a server thread of this process: the same two parties as
/// a coordinated call to the in-process daemon.
private func bareSocketRoundTrip() {
    let name = "EndToEnd.bareSocketRoundTrip"
    let record = WallClockRecord()
    let fixture = Slot<(directory: ScratchDirectory, client: BareClient)>()
    Benchmark(
        name,
        closure: { benchmark in
            let client = fixture.value!.client
            record.start()
            for _ in benchmark.scaledIterations {
                guard client.roundTrip() else { return benchmark.error("the echo server went away") }
            }
            record.stop(operations: benchmark.scaledIterations.count)
        },
        setup: {
            let directory = try ScratchDirectory()
            let listener = try BareSocket.listen(at: directory.path + "/echo.sock")
            let client = try BareSocket.connect(to: directory.path + "/echo.sock")
            let server = try BareSocket.accept(on: listener)
            startThread("echo") { BareSocket.echo(server) }
            fixture.value = (directory, BareClient(socket: client))
        },
        teardown: {
            fixture.value?.client.close()
            fixture.value?.directory.remove()
            RunResults.record(name, record)
        }
    )
}

/// `open`, `flock(LOCK_SH)`, `flock(LOCK_UN)`, `close` on a file: what a cooperative lock costs without a daemon.
private func openFlockClose() {
    let name = "EndToEnd.openFlockClose"
    let record = WallClockRecord()
    let fixture = Slot<(directory: ScratchDirectory, path: UnsafeMutablePointer<CChar>)>()
    Benchmark(
        name,
        closure: { benchmark in
            let path = fixture.value!.path
            record.start()
            for _ in benchmark.scaledIterations {
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0, flock(fd, LOCK_SH) == 0, flock(fd, LOCK_UN) == 0 else {
                    return benchmark.error("open/flock failed: \(errnoText())")
                }
                close(fd)
            }
            record.stop(operations: benchmark.scaledIterations.count)
        },
        setup: {
            let directory = try ScratchDirectory()
            fixture.value = (directory, strdup(try directory.file("locked.txt"))!)
        },
        teardown: {
            if let value = fixture.value {
                free(value.path)
                value.directory.remove()
            }
            RunResults.record(name, record)
        }
    )
}

/// Client to relay thread to responder process and back, 32 bytes each way: the shape of a write whose one
/// presenter, in another process, must relinquish (client and daemon in this process, presenter in a helper).
///
/// `afterIdle`: each sample's round trip comes 20 ms after the last, as `leaseRecall`'s claim comes 20 ms after the
/// holder's read (its cores asleep meanwhile): its baseline in the same regime (`bareThreePartyRoundTripAfterIdle`).
func bareThreePartyRoundTrip(afterIdle: Bool = false) {
    let name = afterIdle ? "EndToEnd.bareThreePartyRoundTripAfterIdle" : "EndToEnd.bareThreePartyRoundTrip"
    let record = WallClockRecord()
    let fixture = Slot<(directory: ScratchDirectory, client: BareClient, responder: HelperProcess)>()
    Benchmark(
        name,
        // One operation per sample for both of the pair: compared p50 to p50.
        configuration: .init(scalingFactor: .one),
        closure: { benchmark in
            let client = fixture.value!.client
            if afterIdle { usleep(20_000) }
            record.start()
            for _ in benchmark.scaledIterations {
                guard client.roundTrip() else { return benchmark.error("the relay went away") }
            }
            record.stop(operations: benchmark.scaledIterations.count)
        },
        setup: {
            let directory = try ScratchDirectory()
            let socketPath = directory.path + "/relay.sock"
            let listener = try BareSocket.listen(at: socketPath)
            let responderProcess = try HelperProcess(role: "echo", environment: ["FC_E2E_SOCKET": socketPath])
            let responder = try BareSocket.accept(on: listener)
            let client = try BareSocket.connect(to: socketPath)
            let relayed = try BareSocket.accept(on: listener)
            startThread("relay") { BareSocket.relay(client: relayed, responder: responder) }
            fixture.value = (directory, BareClient(socket: client), responderProcess)
        },
        teardown: {
            if let value = fixture.value {
                value.client.close()
                value.responder.finish()
                value.directory.remove()
            }
            if afterIdle { LeaseResults.record(name, record) } else { RunResults.record(name, record) }
        }
    )
}

// MARK: - Through the daemon

/// One coordinated read or write (`writing`), nobody else interested: request, grant, accessor, finish.
private func uncontendedClaim(writing: Bool) {
    let name = writing ? "EndToEnd.uncontendedWrite" : "EndToEnd.uncontendedRead"
    let what = writing ? "write" : "read"
    let record = WallClockRecord()
    let fixture = Slot<(directory: ScratchDirectory, daemon: InProcessDaemon, url: URL)>()
    let claim = { @Sendable (url: URL) -> NSError? in coordinatedCall(url, writing: writing) }
    Benchmark(
        name,
        closure: { benchmark in
            let url = fixture.value!.url
            record.start()
            for _ in benchmark.scaledIterations {
                if let error = claim(url) { return benchmark.error("coordinated \(what) failed: \(error)") }
            }
            record.stop(operations: benchmark.scaledIterations.count)
        },
        setup: {
            let directory = try ScratchDirectory()
            let daemon = try await InProcessDaemon.start(socketPath: directory.path + "/daemon/socket")
            let url = URL(fileURLWithPath: try directory.file(writing ? "written.txt" : "read.txt"))
            fixture.value = (directory, daemon, url)
            if let error = claim(url) { throw BenchmarkFailure("the first coordinated \(what) failed: \(error)") }
            try daemon.waitForClients(1, what: name)
        },
        teardown: {
            if let value = fixture.value {
                await value.daemon.stop()
                value.directory.remove()
            }
            RunResults.record(name, record)
        }
    )
}

/// A coordinated write of an item that a presenter in another process presents: the daemon asks it to relinquish,
/// it answers at once, the write is granted.
private func writeWithRelinquishingPresenter() {
    let name = "EndToEnd.writeWithRelinquishingPresenter"
    let record = WallClockRecord()
    final class Fixture: @unchecked Sendable {
        let directory: ScratchDirectory
        let daemon: InProcessDaemon
        let presenter: HelperProcess
        let url: URL
        /// Relinquishes counted before the measurement, and writes made since.
        var relinquishedBefore = 0
        var writes = 0

        init(directory: ScratchDirectory, daemon: InProcessDaemon, presenter: HelperProcess, url: URL) {
            self.directory = directory
            self.daemon = daemon
            self.presenter = presenter
            self.url = url
        }

        func write() -> NSError? {
            var error: NSError?
            NSFileCoordinator().coordinate(writingItemAt: url, options: [], error: &error) { _ in }
            return error
        }

        func relinquished() throws -> Int {
            guard presenter.send(line: "count"), let count = Int(try presenter.receiveLine()) else {
                throw BenchmarkFailure("the presenter process did not report its count")
            }
            return count
        }
    }
    let fixture = Slot<Fixture>()
    Benchmark(
        name,
        // One operation per sample for both of the pair: compared p50 to p50.
        configuration: .init(scalingFactor: .one),
        closure: { benchmark in
            let fixture = fixture.value!
            record.start()
            for _ in benchmark.scaledIterations {
                if let error = fixture.write() { return benchmark.error("coordinated write failed: \(error)") }
            }
            record.stop(operations: benchmark.scaledIterations.count)
            fixture.writes += benchmark.scaledIterations.count
        },
        setup: {
            let directory = try ScratchDirectory()
            let daemon = try await InProcessDaemon.start(socketPath: directory.path + "/daemon/socket")
            let path = try directory.file("presented.txt")
            let presenter = try HelperProcess(role: "presenter", environment: ["FC_E2E_PATH": path])
            let value = Fixture(
                directory: directory,
                daemon: daemon,
                presenter: presenter,
                url: URL(fileURLWithPath: path)
            )
            fixture.value = value
            guard try presenter.receiveLine() == "ready" else { throw BenchmarkFailure("the presenter did not start") }
            // The registration travels on the presenter's own connection: write until the daemon asks it.
            for _ in 0..<1_000 {
                if let error = value.write() { throw BenchmarkFailure("coordinated write failed: \(error)") }
                if try value.relinquished() > 0 { break }
                usleep(1_000)
            }
            value.relinquishedBefore = try value.relinquished()
            guard value.relinquishedBefore > 0 else { throw BenchmarkFailure("the presenter was never asked") }
            try daemon.waitForClients(2, what: name)
        },
        teardown: {
            var note = ""
            if let value = fixture.value {
                let relinquished = (try? value.relinquished()).map { $0 - value.relinquishedBefore } ?? -1
                note = "; the presenter relinquished \(relinquished) times for \(value.writes) writes"
                if relinquished != value.writes { note += " (MISMATCH: not every write reached the presenter)" }
                value.presenter.finish()
                await value.daemon.stop()
                value.directory.remove()
            }
            RunResults.record(name, record, note: note)
        }
    )
}

/// Eight client processes, each with its own connection, making coordinated reads of files of their own as fast as
/// they can; one sample is 125 reads by each, 1,000 in all. Reported as claims per second (throughput), and the CPU
/// time per claim of the clients (each measures its own process around its reads) and of the daemon (this process's
/// CPU time but the measuring thread's: the daemon's threads), as custom metrics in nanoseconds and in the ratios.
private func claimsPerSecond8Clients() {
    let name = "EndToEnd.claimsPerSecond8Clients"
    let clientCount = 8
    let record = WallClockRecord()
    let cpu = CPUPerClaimRecord()
    let fixture = Slot<(directory: ScratchDirectory, daemon: InProcessDaemon, clients: [HelperProcess])>()
    Benchmark(
        name,
        configuration: .init(
            metrics: [
                .wallClock, .throughput, .mallocCountTotal, CPUPerClaimRecord.clientMetric,
                CPUPerClaimRecord.daemonMetric,
            ],
            scalingFactor: .kilo
        ),
        closure: { benchmark in
            let clients = fixture.value!.clients
            let daemonBefore = CPUPerClaimRecord.daemonNanoseconds()
            record.start()
            for client in clients where !client.send(UInt8(ascii: "g")) {
                return benchmark.error("client \(client.pid) went away")
            }
            var clientNanoseconds: UInt64 = 0
            for client in clients {
                let reply = client.receive()
                var used: UInt64 = 0
                guard reply == UInt8(ascii: "d"), BareSocket.readExactly(client.output, &used, 8) else {
                    return benchmark.error("client \(client.pid): a coordinated read failed (see its standard error)")
                }
                clientNanoseconds += UInt64(littleEndian: used)
            }
            record.stop(operations: benchmark.scaledIterations.count)
            let daemonNanoseconds = CPUPerClaimRecord.daemonNanoseconds() &- daemonBefore
            cpu.add(
                benchmark,
                claims: benchmark.scaledIterations.count,
                client: clientNanoseconds,
                daemon: daemonNanoseconds
            )
        },
        setup: {
            let directory = try ScratchDirectory()
            let daemon = try await InProcessDaemon.start(socketPath: directory.path + "/daemon/socket")
            var clients: [HelperProcess] = []
            fixture.value = (directory, daemon, clients)
            let perClient = BenchmarkScalingFactor.kilo.rawValue / clientCount
            for index in 0..<clientCount {
                let path = try directory.file("client\(index).txt")
                clients.append(
                    try HelperProcess(
                        role: "claimer",
                        environment: ["FC_E2E_PATH": path, "FC_E2E_CLAIMS": "\(perClient)"]
                    )
                )
                fixture.value = (directory, daemon, clients)
            }
            for client in clients {
                guard try client.receiveLine() == "ready" else {
                    throw BenchmarkFailure("client \(client.pid) did not start")
                }
            }
            try daemon.waitForClients(clientCount, what: name)
        },
        teardown: {
            if let value = fixture.value {
                for client in value.clients { client.finish() }
                await value.daemon.stop()
                value.directory.remove()
            }
            cpu.recordTotals(name)
            RunResults.record(name, record)
        }
    )
}
