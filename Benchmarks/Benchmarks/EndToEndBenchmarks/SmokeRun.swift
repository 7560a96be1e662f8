import Benchmark
import Foundation

/// `FC_BENCHMARK_SMOKE=1`: every benchmark registered takes at most three samples within about a second (its setup
/// and teardown run as always), so that a run shows that each still runs and prints what it prints, in a fraction of
/// the time. CI runs the benchmarks that have no threshold file this way (.ci/run): they are not gated, so their
/// full samples only ever showed that. Never for a measurement: three samples say nothing of a median.
///
/// - Important: Called at the end of the `benchmarks` closure, once every benchmark is registered (package-benchmark
///   reads each one's configuration when it runs it).
func applySmokeRunIfAsked() {
    guard ProcessInfo.processInfo.environment["FC_BENCHMARK_SMOKE"] == "1" else { return }
    for benchmark in Benchmark.benchmarks {
        benchmark.configuration.maxIterations = min(benchmark.configuration.maxIterations, 3)
        benchmark.configuration.maxDuration = min(benchmark.configuration.maxDuration, .seconds(1))
    }
}
