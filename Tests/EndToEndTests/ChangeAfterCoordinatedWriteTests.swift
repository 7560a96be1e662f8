// A coordinated write's echo suppression never swallows another process's change that follows it (issue 37): the
// writer's client says what the write left behind, the watcher reads each event's item, and an item that changed
// after the write is reported even within the echo retention. The CPU is kept busy by shell loops meanwhile.

import Foundation
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

extension CPUSaturatingTests {
    @Suite struct ChangeAfterCoordinatedWriteTests {
        /// Runs `script` in `sh` with the test's socket, `fccoord`'s path as `$1` and `arguments` after it; waits for it.
        private func shell(_ env: TestEnvironment, _ script: String, _ arguments: [String]) async throws {
            let fccoord = try Products.executable("fccoord").path
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", script, "sh", fccoord] + arguments
            process.environment = try childEnvironment(socket: env.socket)
            process.standardInput = FileHandle.nullDevice
            try process.run()
            try await eventually("the script to end") { !process.stillRuns }
            process.waitForEnd()
            #expect(process.endStatus == 0, "\(script) ended with \(process.endStatus)")
        }

        @Test("A file appended by another process as soon as a coordinated write of it returned: reported")
        func anAppendRightAfterACoordinatedWrite() async throws {
            try await TestEnvironment.run { env in
                _ = try await env.startDaemon()
                let host = try await env.host("A")
                let file = try env.file("doc.txt", "text\n")
                try await host.present("P", file)
                try await CPUSaturatingTests.withSaturatedCPU {
                    for round in 1...3 {
                        // fccoord's write ends, and the shell appends in the same breath: well within the echo retention.
                        try await shell(
                            env,
                            #""$1" write "$2" -- sh -c 'printf coordinated >> "$FCCOORD_PATH_1"' && printf after >> "$2""#,
                            [file]
                        )
                        // One did change for the coordinated write, one for the append.
                        try await host.waitFor("presenter P didChange", count: 2 * round, timeout: .seconds(30))
                    }
                }
                #expect(try String(contentsOfFile: file, encoding: .utf8).hasSuffix("coordinatedafter"))
            }
        }

        @Test("A file created by another process in a folder right after a coordinated write of the folder: reported")
        func aFileCreatedRightAfterACoordinatedWriteOfItsFolder() async throws {
            try await TestEnvironment.run { env in
                _ = try await env.startDaemon()
                let host = try await env.host("A")
                let folder = env.path("folder")
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
                try await host.present("D", folder)
                try await CPUSaturatingTests.withSaturatedCPU {
                    for round in 1...3 {
                        try await shell(
                            env,
                            #""$1" write "$2" -- sh -c 'printf x > "$FCCOORD_PATH_1/mine-$3"' && printf y > "$2/theirs-$3""#,
                            [folder, "\(round)"]
                        )
                        try await host.waitFor(
                            "presenter D subitemDidChange \(folder)/theirs-\(round)",
                            timeout: .seconds(30)
                        )
                    }
                }
            }
        }
    }
}
