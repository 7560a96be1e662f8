import Benchmark
import FileCoordination
import Foundation

// Presenters across hosts (issue 41; docs/ARCHITECTURE.md §15.1), against a baseline measured in the same run:
//
//   cluster.writeWithLocalPresenter   a coordinated write in the shared folder, which host A holds, of a file that a
//                                     presenter in another process of host A presents and relinquishes (the
//                                     baseline: both processes on one host)
//   cluster.writeWithRemotePresenter  the same write of a file that a presenter on host B presents: host A's arbiter
//                                     asks it through etcd (a letter each way) and tells it after. Target <= 3x the
//                                     baseline plus one bareEtcdPutWatch
//
// The presenters are the `clusterHost` helpers' own (ClusterBenchmarks.swift), clients of their hosts' daemons; the
// write is this process's, a client of host A.

/// A coordinated write of a file presented on host A (`remote` false) or on host B.
func clusterPresenterWrite(remote: Bool) {
    let name = remote ? "EndToEnd.cluster.writeWithRemotePresenter" : "EndToEnd.cluster.writeWithLocalPresenter"
    let record = WallClockRecord()
    let fixture = Slot<(cluster: ClusterFixture, url: URL)>()
    Benchmark(
        name,
        configuration: .init(scalingFactor: .one, maxDuration: .seconds(3), maxIterations: 300),
        closure: { benchmark in
            let url = fixture.value!.url
            for _ in benchmark.scaledIterations {
                record.start()
                if let error = coordinatedCall(url, writing: true) {
                    return benchmark.error("\(name) failed: \(error)")
                }
                record.stop(operations: 1)
            }
        },
        setup: {
            let cluster = try ClusterFixture(minimumHold: .milliseconds(100))
            let url = try cluster.file("subtree/presented.txt")
            fixture.value = (cluster, url)
            let presenterHost = remote ? cluster.hostB : cluster.hostA
            guard presenterHost.send(line: "present " + url.path), try presenterHost.receiveLine(timeout: 30) == "ready"
            else { throw BenchmarkFailure("the presenter did not start") }
            // Writes until the presenter is asked (host A has its stand-in once the watch reported its key).
            let deadline = Date().addingTimeInterval(20)
            var asked = 0
            while asked == 0 {
                guard Date() < deadline else { throw BenchmarkFailure("the presenter was never asked") }
                if let error = coordinatedCall(url, writing: true) { throw BenchmarkFailure("a write: \(error)") }
                guard presenterHost.send(line: "count"), let count = Int(try presenterHost.receiveLine(timeout: 30))
                else { throw BenchmarkFailure("the presenter's host went away") }
                asked = count
            }
            try cluster.checkClientOfHostA()
            for _ in 0..<20 { _ = coordinatedCall(url, writing: true) }
        },
        teardown: {
            fixture.value?.cluster.finish()
            ClusterResults.record(name, record)
        }
    )
}
