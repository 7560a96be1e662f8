// swift-tools-version: 6.1

import PackageDescription

// swift-file-coordination: NSFileCoordinator / NSFilePresenter for Linux.
//
// Module map: docs/ARCHITECTURE.md §1. A module is added by the issue that gives it code; nothing here is a
// placeholder.
let package = Package(
    name: "swift-file-coordination",
    products: [
        .library(name: "FCCore", targets: ["FCCore"]),
        .library(name: "FileCoordination", targets: ["FileCoordination"]),
        .library(name: "FCTestSupport", targets: ["FCTestSupport"]),
        .library(name: "FCProtocol", targets: ["FCProtocol"]),
        // The daemon as a library: the end-to-end benchmarks run it in process (Benchmarks/).
        .library(name: "FCDaemon", targets: ["FCDaemon"]),
        // The syscall layer: the benchmarks' bare sockets use the package's one socket type.
        .library(name: "FCSystem", targets: ["FCSystem"]),
        // The case rule and device parsers: the thread sanitizer's package of the library's tests (Tests/ThreadSanitizer)
        // tests them directly, as FileCoordinationTests does here.
        .library(name: "FCFileSystemPolicy", targets: ["FCFileSystemPolicy"]),
        // Cluster mode's adapter and etcd client (issue 40): the cluster benchmarks run two hosts' daemons (FCDaemon with
        // its ClusterHost, in helper processes) and time a bare etcd put and watch through the daemon's own client
        // (Benchmarks/; the client is SPI, `EtcdRoundTrip`).
        .library(name: "FCCluster", targets: ["FCCluster"]),
        // The version store: the fuzzing package (Fuzz/) reaches its repair through it.
        .library(name: "FCVersionStore", targets: ["FCVersionStore"]),
        // A document class for Linux apps (issue 27): coordinated open, save, autosave, reload, moves, conflicts.
        .library(name: "CoordinatedDocument", targets: ["FileCoordinationDocument"]),
        .executable(name: "fcdemo", targets: ["fcdemo"]),
        // Examples (issue 27): a terminal notes editor on CoordinatedDocument, and a folder sync agent.
        .executable(name: "notes", targets: ["notes"]),
        .executable(name: "mirror", targets: ["mirror"]),
        .executable(name: "filecoordd", targets: ["filecoordd"]),
        .executable(name: "fcdump", targets: ["fcdump"]),
        .executable(name: "fc-load", targets: ["fc-load"]),
        // Coordination for shell scripts (issue 24): `fccoord read|write PATH... -- COMMAND`, move, delete, present.
        .executable(name: "fccoord", targets: ["fccoord"]),
        // libfilecoord (issue 24): the C API (`filecoord.h`), as `libfilecoord.so`, for C, Python (Languages/python)
        // and anything with a C FFI; installed with scripts/install-libfilecoord.sh.
        .library(name: "filecoord", type: .dynamic, targets: ["FileCoordinationC"]),
    ],
    dependencies: [
        // None of its traits (BinaryDelimitedStreams, FieldMaskUtilities: APIs we do not use). With both, SwiftPM 6.3
        // passes their `-D`s in an order that changes from one run to the next, so every other `swift build` or
        // `swift test` compiled SwiftProtobuf again (about 25 s each in CI).
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0", traits: []),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // The version store's index (issue 15): SQLite (Debian libsqlite3-dev) in WAL mode.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // `.forUploading` snapshots of directories and packages (issue 15).
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
        // The daemon's deadline heap (issue 12): swift-collections' Heap (already resolved through swift-nio).
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // DocC catalogs of FileCoordination and FileCoordinationDocument (issue 27): `swift package
        // generate-documentation`. A plugin only: nothing of it is linked into apps.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Cluster mode (issue 40): the daemon talks to etcd's JSON gateway over HTTP. Only FCCluster links it (so
        // filecoordd and the cluster benchmarks), and only a daemon started with --cluster-endpoints makes a client.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Cluster mode's direct mail between daemons (issue 41): length-prefixed frames over TCP (already resolved
        // through async-http-client).
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    ],
    targets: [
        // C shims for what Swift cannot import from glibc (macros, flexible array members). Only FCSystem uses it.
        .target(name: "CFCLinux"),
        // The syscall layer (docs/ARCHITECTURE.md §8.2): swift-system's types, EINTR retry in one place, owning
        // descriptor types.
        .target(
            name: "FCSystem",
            dependencies: ["CFCLinux", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // Rules about file systems on top of the syscall layer, shared by the client's canonicalisation and the
        // daemon's watcher: case folding, which directories compare names case-insensitively, FUSE device probing.
        .target(name: "FCFileSystemPolicy", dependencies: ["FCSystem"]),
        // FCSystem against the kernel: real sockets, locks, files, signals and errors.
        .testTarget(
            name: "FCSystemTests",
            dependencies: ["FCSystem", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // The small toolkit the library and the daemon share: `Locked` (the package's one lock type, also FCBridge's,
        // libfilecoord's and CoordinatedDocument's) and the arbiter's log records to swift-log (one mapping of its
        // levels, metadata kept).
        .target(name: "FCToolkit", dependencies: ["FCCore", .product(name: "Logging", package: "swift-log")]),
        // The pure arbitration model: paths, access-node tree, claims, the arbiter state machine.
        // Stdlib only: no Foundation, no Glibc, no clocks.
        .target(name: "FCCore"),
        // The library apps import: NSFileCoordinator, NSFilePresenter, NSFileAccessIntent with Apple's signatures.
        .target(
            name: "FileCoordination",
            dependencies: [
                "FCCore", "FCProtocol", "FCSystem", "FCFileSystemPolicy", "FCToolkit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
                "FCVersionStore", .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ]
        ),
        // CoordinatedDocument: a document class built only on FileCoordination's public API (issue 27), its locks
        // FCToolkit's `Locked`.
        .target(name: "FileCoordinationDocument", dependencies: ["FileCoordination", "FCToolkit"]),
        // The version store (NSFileVersion, docs/SEMANTICS.md §8): a crash-safe SQLite index (GRDB, WAL) and the
        // versions' contents, used by the daemon and by the library's in-process mode alike (docs/ARCHITECTURE.md).
        .target(
            name: "FCVersionStore",
            dependencies: [
                "FCSystem", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // The wire protocol between clients and filecoordd: messages (filecoord.proto, generated Swift committed),
        // framing, version handshake, limits, and conversions to FCCore's types. Bytes in, messages out; no I/O.
        .target(
            name: "FCProtocol",
            dependencies: ["FCCore", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["filecoord.proto"]
        ),
        // libinotifytools (no pkg-config file: a module map that links it). Only the daemon's watcher uses it; the
        // library apps import does not depend on it.
        .systemLibrary(
            name: "CInotifyTools",
            providers: [.apt(["libinotifytools0-dev"])]
        ),
        // The daemon as a library: id mapping and routing, runtime folder, lock, listener and sessions.
        .target(
            name: "FCDaemon",
            dependencies: [
                "FCCore", "FCProtocol", "FCDumpModel", "CInotifyTools", "FCSystem", "FCFileSystemPolicy", "FCToolkit",
                "FCVersionStore",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // HandshakeProbe: the handshake's fuzz target drives the real pipeline on an EmbeddedChannel.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        // Cluster mode (issue 40): the daemon's cluster adapter (host leases on shared folders carried out against the
        // arbiter's host gates) and its etcd client, AsyncHTTPClient on etcd's JSON gateway. Only filecoordd and the
        // cluster benchmarks (Benchmarks/, EndToEndBenchmarks) link it, so that FCDaemon (and the fuzzers that link it)
        // carries no HTTP client.
        .target(
            name: "FCCluster",
            dependencies: [
                "FCCore", "FCDaemon", "FCDumpModel", "FCSystem", "FCFileSystemPolicy", "FCToolkit",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "FCClusterTests", dependencies: ["FCCluster", "FCCore"]),
        // The per-user arbiter daemon: a thin command over FCDaemon.
        .executableTarget(
            name: "filecoordd",
            dependencies: [
                "FCCore", "FCDaemon", "FCCluster", "FCSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The daemon's state as `fcdump` sees it: Codable types shared by filecoordd and fcdump
        // (docs/FCDUMP-SCHEMA.md).
        .target(name: "FCDumpModel"),
        // Shows a running filecoordd's state (read-only; never starts a daemon).
        .executableTarget(
            name: "fcdump",
            dependencies: [
                "FCProtocol", "FCDumpModel", "FCSystem", .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // FileCoordination's public API by plain paths, for the tools and bindings of other languages (issue 24):
        // coordinated calls, move and delete, a presenter made of one closure, errors classified once. In Sources, not
        // Languages/: a Swift module shared by fccoord and libfilecoord, which no other language sees.
        .target(
            name: "FCBridge",
            dependencies: [
                "FileCoordination", "FCSystem", "FCToolkit", .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // `fccoord`: coordination for shell scripts (README, "Other languages"; docs/man/fccoord.1).
        .executableTarget(
            name: "fccoord",
            dependencies: [
                "FCBridge", "FileCoordination", "FCSystem", "FCToolkit",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The surfaces for other languages are in Languages/ (Languages/README.md): the C API's two targets in
        // Languages/c, beside its pkg-config template and C test. The public header of libfilecoord
        // (include/filecoord.h) and its ABI version; the functions are FileCoordinationC's.
        .target(name: "CFileCoord", path: "Languages/c/CFileCoord"),
        // libfilecoord's functions: `@_cdecl` exports over FCBridge (filecoord.h documents them).
        .target(
            name: "FileCoordinationC",
            dependencies: ["CFileCoord", "FCBridge", "FCSystem", "FileCoordination", "FCToolkit"],
            path: "Languages/c/FileCoordinationC"
        ),
        // Harnesses for tests, benchmarks and the demonstration (not for apps).
        .target(
            name: "FCTestSupport",
            dependencies: [
                "FCCore", "FCProtocol", "FCSystem", .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // A process that presents and coordinates on command: for multi-process tests and the README's demonstration.
        .executableTarget(
            name: "fc-testhost",
            dependencies: [
                "FileCoordination", "FileCoordinationDocument", "FCSystem", "FCToolkit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // The load, soak and fault suite: client processes coordinating through filecoordd while faults are injected
        // (README, "Load, faults and bad input").
        .executableTarget(
            name: "fc-load",
            dependencies: ["FileCoordination", "FCDumpModel", "FCProtocol", "FCTestSupport", "FCSystem", "FCToolkit"]
        ),
        // Examples/ (issue 27), run by the README's run command: `notes`, a full-screen terminal editor built on
        // CoordinatedDocument (raw mode through a small C shim), and `mirror`, a folder sync agent.
        .target(name: "CNotesTerminal", path: "Examples/CNotesTerminal"),
        .executableTarget(
            name: "notes",
            dependencies: ["FileCoordination", "FileCoordinationDocument", "CNotesTerminal"],
            path: "Examples/notes"
        ),
        .executableTarget(name: "mirror", dependencies: ["FileCoordination"], path: "Examples/mirror"),
        // A demonstration of the in-process arbiter, run by the README's first command.
        .executableTarget(name: "fcdemo", dependencies: ["FCCore", "FCTestSupport"]),
        // Unit tests for every rule, and the seeded simulator.
        .testTarget(name: "FCCoreTests", dependencies: ["FCCore", "FCTestSupport"]),
        // Round trips, framing edge cases and a seeded fuzz test of the wire protocol.
        .testTarget(
            name: "FCProtocolTests",
            dependencies: [
                "FCProtocol", "FCCore", "FCTestSupport", .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // The version store: its rules, its crash-safe ordering and its repair at start.
        .testTarget(name: "FCVersionStoreTests", dependencies: ["FCVersionStore"]),
        // The daemon's pieces, tested without and with sockets.
        .testTarget(
            name: "FCDaemonTests",
            dependencies: [
                "FCDaemon", "FCCore", "FCDumpModel", "FCFileSystemPolicy", "FCProtocol", "FCSystem", "FCTestSupport",
                "FCToolkit",
                .product(name: "Logging", package: "swift-log"),
                // A watcher's inotify descriptor replaced under it (InotifyWatcherTests).
                .product(name: "SystemPackage", package: "swift-system"),
                // The connection's handlers and the host's write batching, on embedded channels (issues 12, 22).
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        // Behaviour tests of the library, in one process.
        .testTarget(
            name: "FileCoordinationTests",
            dependencies: [
                "FileCoordination", "FCTestSupport",
                // The case rule and the device parsers of canonical identity (issue 14), tested directly.
                "FCSystem", "FCFileSystemPolicy",
                // Reads the zip archives of `.forUploading` snapshots (issue 15).
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                // Captures a client's warnings (PrepareTests).
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The document class's folder storage on real files (issue 27).
        .testTarget(name: "FileCoordinationDocumentTests", dependencies: ["FileCoordinationDocument"]),
        // Code written exactly as for macOS, which must compile unchanged and behave the same.
        .testTarget(name: "SourceCompatibilityTests", dependencies: ["FileCoordination"]),
        // Several real processes (fc-testhost) around a private filecoordd: crashes, timeouts, malformed clients.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "FCProtocol", "FCCore", "FCTestSupport", "FCSystem", "FCFileSystemPolicy",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            exclude: ["Corpus"]
        ),
    ]
)

// --- Strict settings for every Swift target, in one place (swift-log / swift-nio style). --- //
// Nothing here may be something SwiftPM refuses in a dependency fetched by URL (no unsafe flags): apps depend on
// this package by version. Stricter flags that have no setting (`-require-explicit-sendable`, warnings as errors)
// are passed by scripts/build-flags.sh to every build of ours, never by the manifest. Tests/ThreadSanitizer/Package.swift
// repeats these features for the test targets it builds (a manifest cannot read another's): change both.
for target in package.targets
where [.executable, .test, .regular].contains(target.type)
    && !["CFCLinux", "CFileCoord", "CNotesTerminal"].contains(target.name)
{
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("NonisolatedNonsendingByDefault"))
    target.swiftSettings = settings
}
