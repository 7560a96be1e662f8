// fccoord: file coordination for shell scripts, as flock(1) is file locking for them. Runs a command while
// coordinated claims are held, moves and deletes items in coordinated writes, and presents an item, printing every
// presenter callback as one JSON line. One implementation with the library: everything goes through
// FileCoordination's public API (FCBridge).

import ArgumentParser
import FCBridge

@main
struct FCCoord: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fccoord",
        abstract: "Coordinate file access from the shell, with apps that use NSFileCoordinator and NSFilePresenter.",
        discussion: """
            fccoord talks to filecoordd (started on demand), like every program that coordinates.

            EXIT STATUS
              read, write: the command's own status (128+N when signal N ended it); with --fd, 0 once the claims
              are granted; otherwise:
              64   bad usage
              119  -n: the claims would have waited for a conflicting claim (-E sets another status)
              120  refused by a presenter (its save or its accommodation of the deletion failed)
              121  daemon unreachable (none answered and none could be started), or the connection was lost
              122  bad path (relative to nothing, unresolvable; for move and delete: no such item)
              123  failed to break a deadlock
              124  timed out (--timeout, -w; -E sets another status)
              125  any other failure of fccoord itself (for move and delete: the rename or removal failed)
              126  the command was found but cannot be executed
              127  the command was not found

            As with timeout(1), a command that exits with one of these statuses itself cannot be told apart from
            fccoord's own failure: the message on standard error tells.
            """,
        subcommands: [ReadCommand.self, WriteCommand.self, MoveCommand.self, DeleteCommand.self, PresentCommand.self]
    )

    /// Parses the arguments before the first `--` (argument-parser allows one positional array, the paths), and
    /// runs the subcommand; the words after `--` are ``CommandWords/words``.
    static func main() {
        do {
            var command = try parseAsRoot(CommandWords.options)
            try command.run()
        } catch {
            exit(withError: error)
        }
    }
}

/// The command line split at its first `--`: the options and paths before it, the command after it.
enum CommandWords {
    private static let split: (options: [String], words: [String]) = {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let separator = arguments.firstIndex(of: "--") else { return (arguments, []) }
        return (Array(arguments[..<separator]), Array(arguments[(separator + 1)...]))
    }()

    /// What argument-parser parses.
    static var options: [String] { split.options }
    /// The command to run (`read`, `write`).
    static var words: [String] { split.words }
}

/// Options every subcommand has.
struct CommonOptions: ParsableArguments {
    @Option(
        name: [.customShort("w"), .long],
        help: "Seconds to wait for the claims (fractions allowed) before giving up with status 124 (-E's)."
    )
    var timeout: Double?

    @Flag(
        name: [.customShort("n"), .customLong("nonblock")],
        help: """
            Fail at once with status 119 (-E's) instead of waiting for a conflicting claim of another process, \
            granted or queued ahead (presenters are still asked first, and waited for).
            """
    )
    var nonblock = false

    @Option(
        name: [.customShort("E"), .customLong("conflict-exit-code")],
        help: ArgumentHelp(
            "The exit status when -n fails or --timeout expires (0 to 255), instead of 119 and 124.",
            valueName: "status"
        )
    )
    var conflictExitCode: Int32?

    @Option(help: "The coordinator's purpose identifier (coordinators with the same purpose never block each other).")
    var purpose: String?

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout <= 86_400 * 365) {
            throw ValidationError("--timeout must be a positive number of seconds")
        }
        if let purpose, purpose.isEmpty { throw ValidationError("--purpose must not be empty") }
        if let conflictExitCode, !(0...255).contains(conflictExitCode) {
            throw ValidationError("--conflict-exit-code must be a number from 0 to 255")
        }
    }

    /// Says what failed and gives the status to exit with (`-E`'s for a claim that would wait or timed out).
    func fail(_ error: BridgeError) -> ExitCode {
        ExitStatus.fail(error, conflictStatus: conflictExitCode)
    }

    /// The call's settings. Without `--purpose`, the purpose of the claim fccoord runs inside, when it was started
    /// by a command another fccoord runs (`FILECOORD_PURPOSE`, which ``CommandRunner`` sets): the inner claims are
    /// its parent's, and never wait for them.
    var settings: CallSettings {
        CallSettings(
            timeout: timeout.map { .milliseconds(Int64(($0 * 1_000).rounded(.up))) },
            purpose: purpose ?? CommandRunner.inheritedPurpose,
            nonblocking: nonblock
        )
    }
}
