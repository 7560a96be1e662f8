/// The process's leases, for the benchmark suite only (Benchmarks/, the leased benchmarks' set-up): not API.
///
/// - Important: Thread-safe, as ``LeaseTable``.
@_spi(Benchmarking)
public enum LeaseBenchmarkSPI {
    /// How many claims this process's client decided in a lease so far: a benchmark of the leased path checks that
    /// its claims are decided there, not by the daemon.
    public static var decidedInProcess: Int { CoordinationClient.shared.leases.decidedInProcess }
}
