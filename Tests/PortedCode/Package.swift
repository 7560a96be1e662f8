// swift-tools-version: 6.1

import PackageDescription

// Code written as macOS code is written, compiled in both language modes against the package in this checkout.
//
// A package of its own because macOS compiles this code with warnings (Apple's NSFilePresenter and NSFileCoordinator
// are `@preconcurrency`, so a sendability mismatch is a warning there, not an error), and every build of the main
// package treats warnings as errors (scripts/build-flags.sh). Here, as in an app, warnings stay warnings; an error is
// a failure to compile what macOS compiles. scripts/test.sh builds and runs it after the main package's tests.
//
// Both test targets compile the same files (Shared/, linked into each target's folder).
let package = Package(
    name: "ported-code",
    dependencies: [.package(name: "swift-file-coordination", path: "../..")],
    targets: [
        .testTarget(
            name: "Swift5ModeTests",
            dependencies: [.product(name: "FileCoordination", package: "swift-file-coordination")],
            path: "Swift5ModeTests",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "Swift6ModeTests",
            dependencies: [.product(name: "FileCoordination", package: "swift-file-coordination")],
            path: "Swift6ModeTests",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
