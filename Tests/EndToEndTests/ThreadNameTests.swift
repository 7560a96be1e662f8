import Foundation
import Testing

/// The library's and the daemon's threads name themselves for the kernel (`FCSystem.nameCurrentThread`;
/// Foundation's `Thread.name` does not reach it on Linux), so that `top -H`, gdb and `/proc` tell them apart.
@Suite struct ThreadNameTests {
    /// The names the kernel keeps for the threads of `pid`.
    private static func threadNames(_ pid: Int32) throws -> Set<String> {
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        return Set(
            tasks.compactMap {
                (try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .newlines)
            }
        )
    }

    @Test("The daemon's watcher and a client's listener show their names in /proc")
    func threadsAreNamedForTheKernel() async throws {
        try await TestEnvironment.run { env in
            let daemon = try await env.startDaemon()
            let root = env.path("tree")
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            let host = try await env.host("Q")
            try host.send("query N \(root) 100")
            _ = try await host.waitFor("query N gathered 0")
            let daemonThreads = try Self.threadNames(daemon.pid)
            #expect(daemonThreads.contains("fcd.watcher"), "\(daemonThreads.sorted())")
            let hostThreads = try Self.threadNames(host.pid)
            #expect(hostThreads.contains("fc.listener"), "\(hostThreads.sorted())")
        }
    }
}
