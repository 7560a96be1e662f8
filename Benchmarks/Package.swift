// swift-tools-version: 6.1

import PackageDescription

// The benchmark suite, a nested package so that `swift build` / `swift test` at the root never compile
// package-benchmark (swift-nio's layout). Run from the repository root:
//
//     swift package --package-path Benchmarks benchmark
//
// ordo-one/benchmark needs `traits: ["MallocInterposer"]`: its default `RuntimeInterposer` trait pulls in a package
// that is not available here. Benchmark names must have no spaces and no '/' (threshold files are not found
// otherwise), and thresholds hold deterministic metrics only.
let package = Package(
    name: "Benchmarks",
    dependencies: [
        // The root package. Its identity is the name of the clone's directory, which this manifest cannot know, so
        // products are looked up by the root manifest's `name:`, given here (see `fileCoordination` below).
        .package(name: "swift-file-coordination", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // Arbitration model: paths, claims, the arbiter state machine.
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                .product(name: "FCCore", package: "swift-file-coordination"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
