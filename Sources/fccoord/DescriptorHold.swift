import ArgumentParser
import FCBridge
import FCSystem
import FCToolkit
import Foundation
import Synchronization
import SystemPackage

/// `fccoord read --fd N` and `fccoord write --fd N` (issue 43): flock(1)'s descriptor mode. The claims are held by a
/// process of fccoord's own, the *holder*, from fccoord's return until the shell that ran fccoord no longer has its
/// descriptor N open on the same file, or exits.
///
/// fccoord checks that its parent (the shell) has descriptor N open, as fccoord itself does (inherited), on the same
/// file; then it starts the holder detached (``DetachedProcess``: a grandchild in a session of its own, standard
/// input from and output and error to `/dev/null`, no descriptor of fccoord's but the pipe it reports on, as its
/// descriptor 3), with fccoord's own arguments and ``holderVariable`` naming the shell, and waits for the report: one
/// byte 0 once granted; else 1, the status to exit with, and the message up to the end of file. (Not an end of file
/// after a grant: the holder's thread that watches for fccoord's end polls the pipe, and a poll keeps the write end
/// open.) The holder watches the shell's descriptor
/// (``ProcessDescriptorWatch``), takes the claims as `fccoord` would, reports, and holds them until the watch ends;
/// its exit ends them at the daemon. If fccoord ends before the report (a signal), the holder sees the pipe's read
/// end gone and exits: nothing is held for a script that did not learn of it.
enum DescriptorHold {
    /// The environment variable that makes fccoord the holder: the shell's pid.
    static let holderVariable = "FCCOORD_HOLDER_FOR"
    /// The holder looks at the shell's descriptor at least this often, whatever the events say.
    static let recheck: Duration = .seconds(30)

    static let help = ArgumentHelp(
        "Instead of a command: hold the claims, once granted, until the shell closes its descriptor <n> or exits.",
        valueName: "n"
    )

    static func validate(paths: [String], descriptor: Int32?) throws {
        if paths.isEmpty { throw ValidationError("at least one PATH is needed") }
        if let descriptor {
            if descriptor < 0 { throw ValidationError("--fd must be a descriptor number (0 or more)") }
            if !CommandWords.words.isEmpty { throw ValidationError("--fd takes no COMMAND") }
        } else if CommandWords.words.isEmpty {
            throw ValidationError("a COMMAND is needed after --, or --fd")
        }
    }

    /// fccoord's part, or the holder's when ``holderVariable`` says so; returns the status to exit with.
    static func run(holding items: [CoordinatedItem], descriptor: Int32, options: CommonOptions) -> ExitCode {
        // The holder's descriptor 3 is its report pipe: a variable left in some other environment is not obeyed.
        if let shell = ProcessInfo.processInfo.environment[holderVariable].flatMap({ Int32($0) }),
            (try? FileSystemCalls.symbolicLinkTarget("/proc/self/fd/3"))?.hasPrefix("pipe:") == true
        {
            hold(items, for: shell, descriptor: descriptor, options: options)
        }
        return start(descriptor: descriptor)
    }

    /// Starts the holder and returns with its report's status.
    private static func start(descriptor: Int32) -> ExitCode {
        let shell = ProcessIdentity.parentProcessID
        let own = try? FileSystemCalls.status("/proc/self/fd/\(descriptor)", followingLinks: true).identity
        let shells = try? FileSystemCalls.status("/proc/\(shell)/fd/\(descriptor)", followingLinks: true).identity
        guard let own, own == shells else {
            complain(
                own == nil
                    ? "descriptor \(descriptor) is not open (open it in the shell first: exec \(descriptor)>FILE)"
                    : "descriptor \(descriptor) is not the same open file in the shell that ran fccoord (pid \(shell)); "
                        + "run fccoord from that shell, not with exec"
            )
            return ExitCode(ExitCode.validationFailure.rawValue)
        }
        do {
            let report = try CloseOnExecPipe.make()
            defer { try? report.read.close() }
            var environment = ProcessInfo.processInfo.environment
            environment[holderVariable] = "\(shell)"
            do {
                defer { try? report.write.close() }
                _ = try DetachedProcess.spawn(
                    executable: try FileSystemCalls.symbolicLinkTarget("/proc/self/exe"),
                    arguments: CommandLine.arguments,
                    environment: environment.map { "\($0)=\($1)" },
                    logPath: "/dev/null",
                    passing: report.write.rawValue
                )
            }
            // One byte: 0 once granted (the holder goes on: no end of file comes), else 1 and then the status and
            // the message, up to the end of file (the holder exits).
            var first: UInt8 = 0
            let count = try withUnsafeMutableBytes(of: &first) {
                try report.read.read(into: $0, retryOnInterrupt: true)
            }
            if count == 1, first == 0 { return .success }
            let answer = count == 1 ? try readAll(report.read) : []
            guard let status = answer.first else {
                complain("the process holding the claims ended before they were granted")
                return ExitCode(ExitStatus.failed)
            }
            if answer.count > 1 { complain(String(decoding: answer.dropFirst(), as: UTF8.self)) }
            return ExitCode(Int32(status))
        } catch {
            complain("cannot start the process holding the claims: \(error)")
            return ExitCode(ExitStatus.failed)
        }
    }

    /// Everything until the end of file.
    private static func readAll(_ descriptor: FileDescriptor) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try descriptor.read(into: $0, retryOnInterrupt: true) }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }

    /// The holder: reports on descriptor 3, holds the claims until the shell's descriptor is closed, and exits.
    private static func hold(
        _ items: [CoordinatedItem],
        for shell: Int32,
        descriptor: Int32,
        options: CommonOptions
    ) -> Never {
        let report = FileDescriptor(rawValue: 3)
        try? Signals.ignore(SIGPIPE)
        // The report (``start(descriptor:)``): 0 once granted; else 1, the status, and the message.
        let send = { (status: Int32?, message: String) -> Void in
            var bytes: [UInt8] = [0]
            if let status { bytes = [1, UInt8(truncatingIfNeeded: status)] + Array(message.utf8) }
            _ = try? report.writeAll(bytes)
            try? report.close()
        }
        let watch: ProcessDescriptorWatch
        do throws(Errno) {
            watch = try ProcessDescriptorWatch(process: shell, descriptor: descriptor)
        } catch {
            send(ExitStatus.failed, "cannot watch descriptor \(descriptor) of the shell (pid \(shell)): \(error)")
            exit(0)
        }
        // fccoord gone before the grant (a signal): nothing is held for a script that will not know.
        let granted = Atomic<Bool>(false)
        let reader = Thread {
            CloseOnExecPipe.waitUntilReaderGone(report)
            if !granted.load(ordering: .acquiring) { SignalWaiting.exitImmediately(0) }
        }
        reader.name = "fccoord.report"
        reader.start()
        let outcome = Coordination.access(items, settings: options.settings) { _ in
            granted.store(true, ordering: .releasing)
            send(nil, "")
            watch.waitUntilClosed(recheck: recheck)
        }
        if case .failure(let error) = outcome {
            send(ExitStatus.status(for: error, conflictStatus: options.conflictExitCode), error.message)
        }
        exit(0)
    }
}
