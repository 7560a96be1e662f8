import FCSystem
import Foundation
import Testing

@testable import FCDaemon

/// Command lines of client processes (`fcdump clients`), read from `/proc/PID/cmdline`.
@Suite struct ProcessCommandLineTests {
    @Test func thisProcessReadsAsItsOwnArguments() {
        #expect(ProcessCommandLine.arguments(of: ProcessIdentity.processID) == CommandLine.arguments)
    }

    @Test func noProcessReadsAsNoArguments() throws {
        #expect(ProcessCommandLine.arguments(of: 0).isEmpty)
        #expect(ProcessCommandLine.arguments(of: -1).isEmpty)
        // A child that has exited and been reaped is gone.
        // Spawned and reaped with waitpid: Foundation's `waitUntilExit()` may wait for another test's process
        // (swift-corelibs-foundation issue 4795; FCSystem's `ChildProcess.peekEnd`).
        let child = try ChildProcess.start(["/bin/true"])
        _ = try child.wait()
        #expect(ProcessCommandLine.arguments(of: child.pid).isEmpty)
    }

    @Test func aLongCommandLineIsCutAndSaysSo() throws {
        let long = String(repeating: "x", count: 10_000)
        // A shell that waits for a line on a pipe: it keeps its command line, and has no child to outlive it.
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "read line", long]
        let input = Pipe()
        shell.standardInput = input
        try shell.run()
        defer {
            try? input.fileHandleForWriting.close()
            // Its end as the kernel tells it (not `waitUntilExit()`, see above); Foundation reaps it later.
            _ = try? ChildProcess.peekEnd(of: shell.processIdentifier, blocking: true)
        }
        // Read until the exec is complete: while the kernel swaps the process image the command line reads empty.
        var arguments = ProcessCommandLine.arguments(of: shell.processIdentifier)
        for _ in 0..<100 where arguments.first != "/bin/sh" {
            usleep(20_000)
            arguments = ProcessCommandLine.arguments(of: shell.processIdentifier)
        }
        #expect(arguments.prefix(3) == ["/bin/sh", "-c", "read line"], "\(arguments.prefix(3))")
        let last = try #require(arguments.last)
        #expect(last.hasSuffix("…") && last.dropLast().allSatisfy { $0 == "x" }, "\(last.suffix(8))")
        #expect(arguments.joined(separator: "\0").utf8.count <= ProcessCommandLine.maximumBytes + "…".utf8.count)
    }
}
