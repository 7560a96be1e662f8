public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's resource limits.
///
/// - Important: Thread-safe (the kernel serialises `setrlimit`); meant to be called once, at a daemon's start.
public enum ResourceLimits {
    /// The soft and hard limits on open descriptors (`RLIMIT_NOFILE`).
    public static func openFiles() throws(Errno) -> (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        _ = try valueOrErrno { getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit on open descriptors to the hard limit, as a server that holds one descriptor per
    /// client should; returns the limit now in force. (`select` is never used here, so no 1,024 ceiling applies.)
    @discardableResult
    public static func raiseOpenFilesToHardLimit() throws(Errno) -> UInt64 {
        var limit = rlimit()
        _ = try valueOrErrno { getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = try valueOrErrno { setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) }
        }
        return UInt64(limit.rlim_cur)
    }
}
