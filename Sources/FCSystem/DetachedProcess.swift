import CFCLinux
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starting a program detached from the calling process, as a daemon a library starts must be.
///
/// The program is a grandchild (fork, `setsid`, fork, in `cfc_spawn_detached`): not the caller's child, so the
/// caller gets no `SIGCHLD` for it and keeps no thread to reap it; in a session of its own, so the caller's terminal
/// and process-group signals do not reach it; with default signal dispositions and an empty mask; and with no
/// descriptor of the caller but standard input from `/dev/null` and standard output and error appended to a log.
/// Whoever waits for the caller (a shell pipe, Foundation's `Process`) therefore sees it exit when it exits.
///
/// - Important: Thread-safe. Between fork and exec the child makes only async-signal-safe calls, so this may be
///   called from any thread of a multi-threaded process.
public enum DetachedProcess {
    /// Starts `executable` with `arguments` (the first is its `argv[0]`) and `environment` (`NAME=value` strings),
    /// its output appended to `logPath` (created with mode 0600 if needed).
    ///
    /// `passing`: a descriptor of the caller that becomes the program's descriptor 3, the one it gets besides the
    /// standard ones (`fccoord --fd`'s holder: the pipe it reports on).
    ///
    /// - Returns: The started process's pid (a `pid_t`).
    /// - Throws: The `Errno` of the step that failed: opening the log, forking, or executing the program (a missing
    ///   or non-executable file is reported here, not lost in the log).
    public static func spawn(
        executable: String,
        arguments: [String],
        environment: [String],
        logPath: String,
        passing descriptor: Int32? = nil
    ) throws(Errno) -> Int32 {
        let input = try retryOnInterrupt { open("/dev/null", O_RDONLY | O_CLOEXEC) }
        defer { close(input) }
        let log = try retryOnInterrupt { open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600) }
        defer { close(log) }
        // Every string is copied before the fork: the child may not allocate.
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = cfc_spawn_detached_passing(executable, &argv, &envp, input, log, descriptor ?? -1, &pid)
        guard result == 0 else { throw Errno(rawValue: result) }
        return pid
    }
}
