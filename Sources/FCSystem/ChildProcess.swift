import CFCLinux
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Running a command as a child of the calling process and waiting for it, as a shell does: `fccoord` runs the
/// command it was given while it holds its claims, and the presenter hooks of `fccoord present`.
///
/// The child is started with `posix_spawnp` (the command is looked up on `PATH` when it has no `/`), inherits the
/// caller's standard input, output and error and environment, and starts with default dispositions for the signals
/// a command-line tool changes (`SIGINT`, `SIGQUIT`, `SIGTERM`, `SIGHUP`, `SIGPIPE`) and an empty signal mask.
///
/// - Important: Thread-safe. Only for processes that own their children (tools, not the library, which never
///   starts a child it waits for).
public enum ChildProcess {
    /// How a child ended.
    public enum Termination: Hashable, Sendable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)

        /// A status as `waitpid` reports it. WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift cannot import.
        init(status: Int32) {
            let signal = status & 0x7f
            self = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
        }

        /// The status a shell reports: the exit status, or 128 plus the signal's number.
        public var shellStatus: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let number): 128 + number
            }
        }
    }

    /// A child that was started and not yet waited for.
    public struct Running: Sendable {
        /// Its pid.
        public let pid: Int32

        /// Sends it `signal`; a child that already exited (not yet waited for) ignores it.
        public func send(_ signal: Int32) {
            _ = kill(pid, signal)
        }

        /// Waits until it ends (`EINTR` retried) and reaps it.
        public func wait() throws(Errno) -> Termination {
            var status: Int32 = 0
            _ = try retryOnInterrupt { waitpid(pid, &status, 0) }
            return Termination(status: status)
        }

        /// Reaps it if it has ended, without waiting: `nil` while it runs. For a caller that must not block a
        /// thread while it waits (a test's task polling a short-lived command).
        public func ended() throws(Errno) -> Termination? {
            var status: Int32 = 0
            let reaped = try retryOnInterrupt { waitpid(pid, &status, WNOHANG) }
            return reaped == 0 ? nil : Termination(status: status)
        }
    }

    /// How the child `pid` ended, if it has, read with `waitid(WNOWAIT)`: the child is left unreaped for whoever
    /// waits for it (Foundation's `Process`, in the tests). `nil` while it runs; with `blocking`, waits until it ends.
    /// Throws `ECHILD` when `pid` is not, or no longer, an unreaped child of this process.
    ///
    /// For a caller that started the child with Foundation's `Process`, whose `isRunning` learns of the end through a
    /// socket the child holds: another process spawned at that moment may inherit it, and `isRunning` then stays
    /// true until that other process ends too (swift-corelibs-foundation issue 4795).
    public static func peekEnd(of pid: Int32, blocking: Bool = false) throws(Errno) -> Termination? {
        var info = siginfo_t()
        let flags = WEXITED | WNOWAIT | (blocking ? 0 : WNOHANG)
        _ = try retryOnInterrupt { waitid(P_PID, id_t(pid), &info, flags) }
        guard info._sifields._sigchld.si_pid != 0 else { return nil }
        let status = info._sifields._sigchld.si_status
        return info.si_code == Int32(CLD_EXITED) ? .exited(status) : .signalled(status)
    }

    /// Starts `arguments[0]` (looked up on `PATH` unless it contains a `/`) with `arguments`, and `environment`
    /// (`NAME=value`), or the caller's environment when `nil`.
    ///
    /// - Throws: The `Errno` of `posix_spawnp`: `ENOENT` when the command is not found, `EACCES` when it cannot be
    ///   executed.
    ///
    /// With `outputToError`, the child's standard output is the caller's standard error (hooks of a tool whose
    /// standard output is machine-readable). With `outputPath`, its standard input is `/dev/null`, its standard
    /// output and error are appended to that file (which must exist), and it inherits no other descriptor: for a tool
    /// that leaves a daemon behind holding what it inherited (`mount.exfat-fuse`), whose end a pipe would never reach
    /// (the exFAT test volume; a pipe another thread of the tests had open to its own child hung a test run).
    public static func start(
        _ arguments: [String],
        environment: [String]? = nil,
        outputToError: Bool = false,
        outputPath: String? = nil
    ) throws(Errno) -> Running {
        precondition(!arguments.isEmpty, "ChildProcess.start needs a command")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if outputToError { posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO) }
        if let outputPath {
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, outputPath, O_WRONLY | O_APPEND, 0)
            posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)
            // Nothing else either: a daemon left behind would hold every descriptor the caller had open at the spawn
            // (another thread's pipe to its own child, whose end would then never come).
            _ = cfc_spawn_close_from(&actions, STDERR_FILENO + 1)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result: Int32
        if let environment {
            var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
            defer { for pointer in envp { free(pointer) } }
            result = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, &envp)
        } else {
            result = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, environ)
        }
        guard result == 0 else { throw Errno(rawValue: result) }
        return Running(pid: pid)
    }

    /// Runs `arguments` and waits for it.
    public static func run(
        _ arguments: [String],
        environment: [String]? = nil,
        outputToError: Bool = false,
        outputPath: String? = nil
    ) throws(Errno) -> Termination {
        try start(arguments, environment: environment, outputToError: outputToError, outputPath: outputPath).wait()
    }
}
