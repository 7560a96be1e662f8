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
        // For the in-process daemon of EndToEndBenchmarks (the root package's versions).
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
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
        ),
        // Coordination through a real daemon (FCDaemon, in process, on a private socket) against bare Unix-socket
        // round trips and open + flock + close measured in the same run; helper processes are this executable
        // re-run in a role. Prints the ratios at the end of the run.
        .executableTarget(
            name: "EndToEndBenchmarks",
            dependencies: [
                .product(name: "FileCoordination", package: "swift-file-coordination"),
                .product(name: "FCCore", package: "swift-file-coordination"),
                .product(name: "FCDaemon", package: "swift-file-coordination"),
                .product(name: "FCSystem", package: "swift-file-coordination"),
                // The cluster benchmarks (ClusterBenchmarks.swift, issue 40): two hosts' daemons with their cluster
                // adapters, and the bare etcd put and watch through the adapter's etcd client. It brings
                // AsyncHTTPClient (and swift-nio-ssl, swift-nio-http2, swift-nio-extras) into this release build.
                .product(name: "FCCluster", package: "swift-file-coordination"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/EndToEndBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Not a package-benchmark benchmark: the processes whose instructions per claim `instructions.sh` counts
        // under valgrind's callgrind (issue 23), a synchronous main without `dispatchMain()`. Under Tools/: the
        // benchmark plugin runs every executable target whose folder sits in a folder named Benchmarks.
        .executableTarget(
            name: "InstructionCounts",
            dependencies: [
                .product(name: "FileCoordination", package: "swift-file-coordination"),
                .product(name: "FCDaemon", package: "swift-file-coordination"),
                .product(name: "FCSystem", package: "swift-file-coordination"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tools/InstructionCounts"
        ),
        // Canonicalising a 16-component path (issue 14), cold and cached, against realpath(3) in the same run.
        .executableTarget(
            name: "CanonicalizationBenchmarks",
            dependencies: [
                .product(name: "FileCoordination", package: "swift-file-coordination"),
                .product(name: "FCSystem", package: "swift-file-coordination"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CanonicalizationBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
