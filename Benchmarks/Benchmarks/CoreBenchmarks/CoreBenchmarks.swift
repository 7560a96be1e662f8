import Benchmark
import FCCore

// Placeholder until the real FCCore benchmarks are written. Names use no spaces and no '/', so that threshold
// files match; CI gates on deterministic metrics only (malloc counts), never on wall time.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.mallocCountTotal, .wallClock], maxDuration: .seconds(1))

    Benchmark("ItemPath.parseAbsolute.depth3") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try ItemPath(absolute: "/a/b/c"))
        }
    }
}
