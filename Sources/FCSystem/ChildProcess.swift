public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Running a program to its end as a child of this process (`posix_spawn`, `waitpid`), its output appended to a
/// file: for test harnesses that run system tools (`mkfs.exfat`, `losetup`, `mount`). Foundation's `Process` does not
/// do here: its wait never ends when the tool leaves a daemon behind that holds its output pipe (`mount.exfat-fuse`).
///
/// - Important: Thread-safe; ``run(_:arguments:outputPath:)`` blocks the calling thread until the program ends.
public enum ChildProcess {
    /// How a child ended.
    public enum Termination: Hashable, Sendable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)
    }

    /// Runs the program at `path` with `arguments` (not counting `argv[0]`, which is `path`) and this process's
    /// environment, standard input from `/dev/null`, standard output and error appended to `outputPath` (which must
    /// exist), and waits for it to end.
    ///
    /// - Throws: the error of `posix_spawn` or `waitpid`.
    public static func run(_ path: String, arguments: [String], outputPath: String) throws(Errno) -> Termination {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_APPEND, 0)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Errno(rawValue: spawned) }
        var status: Int32 = 0
        _ = try retryOnInterrupt { waitpid(pid, &status, 0) }
        return status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signalled(status & 0x7F)
    }
}
