import Benchmark
import Foundation
@preconcurrency import Glibc

// CPU time per claim for claimsPerSecond8Clients (issue 12): throughput alone does not say whether the clients or
// the daemon pay for it. Both are read from the kernel's per-process and per-thread CPU clocks (nanoseconds, user and
// system time together), around each sample.

/// CPU time (user and system) in nanoseconds: of this process (`CLOCK_PROCESS_CPUTIME_ID`) or of the calling thread
/// (`CLOCK_THREAD_CPUTIME_ID`).
func cpuNanoseconds(_ clock: clockid_t) -> UInt64 {
    var time = timespec()
    clock_gettime(clock, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// The clients' and the daemon's CPU time per claim, per sample (custom metrics) and over the whole run (the ratios).
///
/// - Important: Used from the benchmark's own thread only (closure and teardown).
final class CPUPerClaimRecord: @unchecked Sendable {
    /// The eight clients' CPU time per claim, each client measuring its whole process around its reads.
    static let clientMetric = BenchmarkMetric.custom("clientCPUNanosecondsPerClaim", useScalingFactor: false)
    /// The in-process daemon's CPU time per claim: this process's, less the measuring thread's (which only waits).
    static let daemonMetric = BenchmarkMetric.custom("daemonCPUNanosecondsPerClaim", useScalingFactor: false)

    private var claims = 0
    private var client: UInt64 = 0
    private var daemon: UInt64 = 0

    /// This process's CPU time but the calling thread's: the daemon's threads, and whatever else runs here.
    static func daemonNanoseconds() -> UInt64 {
        cpuNanoseconds(CLOCK_PROCESS_CPUTIME_ID) &- cpuNanoseconds(CLOCK_THREAD_CPUTIME_ID)
    }

    /// One sample: `claims` claims that cost the clients `client` and the daemon `daemon` nanoseconds of CPU.
    func add(_ benchmark: Benchmark, claims: Int, client: UInt64, daemon: UInt64) {
        guard claims > 0 else { return }
        self.claims += claims
        self.client += client
        self.daemon += daemon
        benchmark.measurement(Self.clientMetric, Int(client) / claims)
        benchmark.measurement(Self.daemonMetric, Int(daemon) / claims)
    }

    /// Records the run's means with ``RunResults`` (as `NAME.clientCPUPerClaim` and `NAME.daemonCPUPerClaim`).
    func recordTotals(_ name: String) {
        guard claims > 0 else { return }
        RunResults.append("\(name).clientCPUPerClaim", Double(client) / Double(claims))
        RunResults.append("\(name).daemonCPUPerClaim", Double(daemon) / Double(claims))
    }
}
