#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Who this process is: `getpid`, `getppid`, `getuid` and `geteuid`, which cannot fail. The package's only calls to
/// them: code outside FCSystem asks here (scripts/check-raw-syscalls.sh).
///
/// - Important: Thread-safe (no state).
public enum ProcessIdentity {
    /// This process's id (`getpid`).
    public static var processID: Int32 { getpid() }

    /// The id of this process's parent (`getppid`): 1, or a subreaper's, once the parent has ended.
    public static var parentProcessID: Int32 { getppid() }

    /// The real user id this process runs as (`getuid`): whose daemon it uses, and whom the daemon serves.
    public static var userID: UInt32 { getuid() }

    /// The effective user id of this process (`geteuid`): whose permissions its file accesses have; root's (0) when
    /// it may mount, and the user a daemon must run as for a client to trust it (``DaemonTrust``).
    public static var effectiveUserID: UInt32 { geteuid() }
}
