#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Sleeps the calling thread for `duration` (`nanosleep`, resumed after a signal for the time left).
///
/// - Important: Thread-safe; blocks only the calling thread.
public func sleepThread(for duration: Duration) {
    let (seconds, attoseconds) = duration.components
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
}
