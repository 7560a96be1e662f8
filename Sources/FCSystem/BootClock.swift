#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// The time since boot, suspend included (`CLOCK_BOOTTIME`), for what must keep pace with another machine's clock
/// through a suspend: a cluster session's fence (issue 40). `CLOCK_MONOTONIC`, which NIO's deadlines read, stops while
/// the machine sleeps, and etcd's leases do not.
///
/// - Important: Thread-safe (no state).
public enum BootClock {
    /// Nanoseconds since boot, suspend included.
    public static var nanoseconds: Int64 {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
