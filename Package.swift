// swift-tools-version: 6.1

import PackageDescription

// swift-file-coordination: NSFileCoordinator / NSFilePresenter for Linux.
//
// Module map (see docs/ARCHITECTURE.md). Modules of DESIGN.md that have no code yet are added by the issue that
// gives them some; nothing here is a placeholder.
let package = Package(
    name: "swift-file-coordination",
    products: [
        .library(name: "FCCore", targets: ["FCCore"]),
        .library(name: "FileCoordination", targets: ["FileCoordination"]),
        .library(name: "FCTestSupport", targets: ["FCTestSupport"]),
        .executable(name: "fcdemo", targets: ["fcdemo"]),
    ],
    targets: [
        // The pure arbitration model: paths, access-node tree, claims, the arbiter state machine.
        // Stdlib only: no Foundation, no Glibc, no clocks.
        .target(name: "FCCore"),
        // The library apps import: NSFileCoordinator, NSFilePresenter, NSFileAccessIntent with Apple's signatures.
        .target(name: "FileCoordination", dependencies: ["FCCore"]),
        // Harnesses for tests, benchmarks and the demonstration (not for apps).
        .target(name: "FCTestSupport", dependencies: ["FCCore"]),
        // A demonstration of the in-process arbiter, run by the README's first command.
        .executableTarget(name: "fcdemo", dependencies: ["FCCore", "FCTestSupport"]),
        // Unit tests for every rule, and the seeded simulator.
        .testTarget(name: "FCCoreTests", dependencies: ["FCCore", "FCTestSupport"]),
        // Behaviour tests of the library, in one process.
        .testTarget(name: "FileCoordinationTests", dependencies: ["FileCoordination"]),
        // Code written exactly as for macOS, which must compile unchanged and behave the same.
        .testTarget(name: "SourceCompatibilityTests", dependencies: ["FileCoordination"]),
    ]
)

// --- Strict settings for every target, in one place (swift-log / swift-nio style). --- //
for target in package.targets where [.executable, .test, .regular].contains(target.type) {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("NonisolatedNonsendingByDefault"))
    settings.append(.unsafeFlags(["-require-explicit-sendable"]))
    target.swiftSettings = settings
}
