// Once addFilePresenter has returned, every later change to the item is reported, whatever the load (issue 37): a
// change made the very moment it returned, before the daemon read the registration or watched the item, is found
// by the watcher's check of change times after the watch is in place. The CPU is kept busy by shell loops meanwhile.

import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// The suites that keep every core busy (shell loops at the lowest priority), one test at a time: together they
/// would slow the tests running beside them (whose waits have bounds) far more than the machine's load does.
@Suite(.serialized) enum CPUSaturatingTests {
    /// Busy shell loops at the lowest priority, one more than the machine has cores, stopped when `body` returns.
    static func withSaturatedCPU(_ body: () async throws -> Void) async throws {
        var burners: [Process] = []
        defer {
            for burner in burners {
                kill(burner.processIdentifier, SIGKILL)
                burner.waitForEnd()
            }
        }
        for _ in 0...ProcessInfo.processInfo.activeProcessorCount {
            let burner = Process()
            // At the lowest priority: the cores stay busy, but the tests running beside this one in the same suite
            // (whose daemons' slow-reader limits a starved client can trip) are not starved by it.
            burner.executableURL = URL(fileURLWithPath: "/usr/bin/nice")
            burner.arguments = ["-n", "19", "/bin/sh", "-c", "while :; do :; done"]
            try burner.run()
            burners.append(burner)
        }
        try await body()
    }
}

extension CPUSaturatingTests {
    @Suite struct ChangeAfterRegistrationTests {
        @Test("A file in a folder nobody watched yet, appended the moment its presenter registered: reported")
        func aFileInANewFolder() async throws {
            try await TestEnvironment.run { env in
                _ = try await env.startDaemon()
                let host = try await env.host("A")
                // Made before the CPU is saturated: long before the registrations, so only the append counts.
                var files: [String] = []
                for round in 1...3 {
                    try FileManager.default.createDirectory(
                        atPath: env.path("new-\(round)"),
                        withIntermediateDirectories: false
                    )
                    files.append(try env.file("new-\(round)/doc.txt", "text\n"))
                }
                try await CPUSaturatingTests.withSaturatedCPU {
                    for round in 1...3 {
                        let file = files[round - 1]
                        try await host.present("P\(round)", file, "change-at-once")
                        try await host.waitFor("presenter P\(round) didChange", timeout: .seconds(30))
                    }
                }
            }
        }

        @Test("The last of 200 presented files in one folder, appended the moment its presenter registered: reported")
        func theLastOfTwoHundredFiles() async throws {
            try await TestEnvironment.run { env in
                _ = try await env.startDaemon()
                let host = try await env.host("A")
                let folder = env.path("many")
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
                for index in 0..<199 {
                    let file = try env.file("many/file-\(index).txt", "text\n")
                    try host.send("present F\(index) \(file)")
                }
                let last = try (1...3).map { try env.file("many/last-\($0).txt", "text\n") }
                try await host.waitFor("presenting F198 ")
                try await CPUSaturatingTests.withSaturatedCPU {
                    for round in 1...3 {
                        let file = last[round - 1]
                        try await host.present("L\(round)", file, "change-at-once")
                        try await host.waitFor("presenter L\(round) didChange", timeout: .seconds(30))
                    }
                }
                #expect(host.presenterEvents("F0").isEmpty, "the others heard nothing")
            }
        }

        @Test("A folder whose presenter registered the moment a file was created in it: reported as a subitem change")
        func aNewFileInAPresentedFolder() async throws {
            try await TestEnvironment.run { env in
                _ = try await env.startDaemon()
                let host = try await env.host("A")
                for round in 1...3 {
                    try FileManager.default.createDirectory(
                        atPath: env.path("folder-\(round)"),
                        withIntermediateDirectories: false
                    )
                }
                try await CPUSaturatingTests.withSaturatedCPU {
                    for round in 1...3 {
                        let folder = env.path("folder-\(round)")
                        try await host.present("D\(round)", folder, "change-at-once")
                        try await host.waitFor(
                            "presenter D\(round) subitemDidChange \(folder)/changed-at-once",
                            timeout: .seconds(30)
                        )
                    }
                }
            }
        }
    }
}
