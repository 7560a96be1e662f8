// swift-tools-version: 6.1

import PackageDescription

// Coverage-guided fuzzing of swift-file-coordination with libFuzzer (issue 28), in a package of its own so that the
// shipped manifest stays free of what SwiftPM refuses in a dependency fetched by URL. Built with
// `-sanitize=fuzzer` passed on the command line (Fuzz/run.sh), never by this manifest. Each executable is one
// libFuzzer target; its committed seeds are in Fuzz/Corpus/<target without the fuzz- prefix>.
let package = Package(
    name: "swift-file-coordination-fuzz",
    dependencies: [
        .package(name: "swift-file-coordination", path: "..")
    ],
    targets: [
        // libFuzzer's driver, shared by the targets' entry points.
        .target(name: "FuzzDriver"),
        // FrameDecoder (both directions, bytes in any chunks) and the conversions of every decoded frame.
        .executableTarget(
            name: "fuzz-frame-decoder",
            dependencies: [
                "FuzzDriver", .product(name: "FCProtocol", package: "swift-file-coordination"),
                .product(name: "FCCore", package: "swift-file-coordination"),
            ]
        ),
        // The handshake, both sides: the daemon's own pipeline on a client's first bytes, the client's rule on the
        // answer.
        .executableTarget(
            name: "fuzz-handshake",
            dependencies: [
                "FuzzDriver", .product(name: "FCProtocol", package: "swift-file-coordination"),
                .product(name: "FCCore", package: "swift-file-coordination"),
                .product(name: "FCDaemon", package: "swift-file-coordination"),
            ]
        ),
        // The version store's repair at open, after changes and damage the input chooses.
        .executableTarget(
            name: "fuzz-version-store-repair",
            dependencies: [
                "FuzzDriver", .product(name: "FCVersionStore", package: "swift-file-coordination"),
                .product(name: "FCSystem", package: "swift-file-coordination"),
            ]
        ),
    ]
)
