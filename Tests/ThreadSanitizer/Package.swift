// swift-tools-version: 6.1

import PackageDescription

// The library's own tests under the thread sanitizer (.ci/run, phase "thread sanitizer"), built without what they do
// not use. A package of its own because `swift build --build-tests` of the main package builds every target with
// TSan (the daemon, cluster mode's HTTP client with BoringSSL, the examples, every test target), about 420 s of the
// CI's critical path, while this phase runs only FileCoordinationTests and SourceCompatibilityTests, in process, and
// needs only the library's modules. The two test targets are the main package's (the folders here are links to
// Tests/FileCoordinationTests and Tests/SourceCompatibilityTests), with the same settings.
let package = Package(
    name: "thread-sanitizer",
    dependencies: [
        .package(name: "swift-file-coordination", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
    ],
    targets: [
        .testTarget(
            name: "FileCoordinationTests",
            dependencies: [
                .product(name: "FileCoordination", package: "swift-file-coordination"),
                .product(name: "FCTestSupport", package: "swift-file-coordination"),
                .product(name: "FCSystem", package: "swift-file-coordination"),
                .product(name: "FCFileSystemPolicy", package: "swift-file-coordination"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "FileCoordinationTests"
        ),
        .testTarget(
            name: "SourceCompatibilityTests",
            dependencies: [.product(name: "FileCoordination", package: "swift-file-coordination")],
            path: "SourceCompatibilityTests"
        ),
    ]
)

// The main package's settings for its test targets (Package.swift, at its end).
for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("NonisolatedNonsendingByDefault"))
    target.swiftSettings = settings
}
