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
        // The root package. A path dependency's identity is its directory's name, which differs between clones, so
        // `name:` gives the root manifest's name and the product below is looked up by it. (Without `name:`,
        // `package: "swift-file-coordination"` fails unless the clone's directory has that name.)
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
