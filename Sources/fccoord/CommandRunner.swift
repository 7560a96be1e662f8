import ArgumentParser
import FCBridge
import FCSystem
import FCToolkit
import Foundation
import SystemPackage

/// Runs the command of `fccoord read` and `fccoord write` while the claims are held.
///
/// Signals: `SIGINT`, `SIGQUIT`, `SIGTERM` and `SIGHUP` are blocked in every thread from the start and taken by
/// one thread (``SignalWaiting``). While fccoord waits for its claims, any of them ends it at once with 128 plus
/// the signal's number (the daemon drops its claims with its connection). While the command runs, `SIGTERM` and
/// `SIGHUP` are passed on to it and `SIGINT` and `SIGQUIT` are not (from a terminal, the command has them already);
/// fccoord keeps its claims until the command has exited, so that nothing else writes while it still runs.
///
/// The command runs inside fccoord's claims (issue 42): its environment carries the claims' purpose identifier in
/// `FILECOORD_PURPOSE` (a new one when `--purpose` gave none), which the preload library and fccoord take as their
/// own, so that the command's coordinated opens and a nested fccoord never wait for the claims they run inside.
enum CommandRunner {
    private static let signals = [SIGINT, SIGQUIT, SIGTERM, SIGHUP]
    /// The environment variable that carries the purpose of the claims a command runs inside.
    static let purposeVariable = "FILECOORD_PURPOSE"

    /// The purpose of the claims this fccoord runs inside, when a command of another one started it.
    static var inheritedPurpose: String? {
        ProcessInfo.processInfo.environment[purposeVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Runs `command` holding `items` and returns the exit code to end with.
    static func run(_ command: [String], holding items: [CoordinatedItem], options: CommonOptions) -> ExitCode {
        var settings = options.settings
        let purpose = settings.purpose ?? "fccoord \(UUID().uuidString)"
        settings.purpose = purpose
        let child = Locked<ChildProcess.Running?>(nil)
        let commandStarted = Locked(false)
        SignalWaiting.block(signals)
        let waiter = Thread {
            while true {
                let number = SignalWaiting.wait(for: signals)
                let running: ChildProcess.Running?? =
                    commandStarted.withLock { $0 } ? .some(child.withLock { $0 }) : .none
                switch running {
                case .none:
                    SignalWaiting.exitImmediately(128 + number)
                case .some(let running?) where number == SIGTERM || number == SIGHUP:
                    running.send(number)
                case .some:
                    continue
                }
            }
        }
        waiter.name = "fccoord.signals"
        waiter.start()

        let outcome = Coordination.access(items, settings: settings) { paths -> ExitCode in
            var environment = ProcessInfo.processInfo.environment
            for (index, path) in paths.enumerated() { environment["FCCOORD_PATH_\(index + 1)"] = path }
            environment[purposeVariable] = purpose
            commandStarted.withLock { $0 = true }
            return start(command, environment: environment.map { "\($0)=\($1)" }, child: child)
        }
        switch outcome {
        case .success(let code): return code
        case .failure(let error): return options.fail(error)
        }
    }

    /// Starts the command, records it for the signal thread, and waits for it.
    private static func start(
        _ command: [String],
        environment: [String],
        child: Locked<ChildProcess.Running?>
    ) -> ExitCode {
        do throws(Errno) {
            let running = try ChildProcess.start(command, environment: environment)
            child.withLock { $0 = running }
            return ExitCode(try running.wait().shellStatus)
        } catch .noSuchFileOrDirectory {
            complain("\(command[0]): command not found")
            return ExitCode(ExitStatus.notFound)
        } catch {
            complain("\(command[0]): cannot execute: \(error)")
            return ExitCode(error == .permissionDenied ? ExitStatus.cannotExecute : ExitStatus.failed)
        }
    }
}
