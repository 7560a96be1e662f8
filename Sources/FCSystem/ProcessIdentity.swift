#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Who this process is: `getpid` and `getuid`, which cannot fail.
///
/// - Important: Thread-safe (no state).
public enum ProcessIdentity {
    /// This process's id (`getpid`).
    public static var processID: Int32 { getpid() }

    /// The real user id this process runs as (`getuid`): whose daemon it uses, and whom the daemon serves.
    public static var userID: UInt32 { getuid() }
}
