public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An exclusive advisory lock (`flock`) on a file, held from ``acquire(_:)`` until the object goes away: the
/// descriptor is created close-on-exec (so that no child inherits the lock) and closed exactly once, which releases
/// the lock. Used by the library to let one process at a time start `filecoordd`.
///
/// - Important: Thread-safe; ``acquire(_:)`` blocks the calling thread until the lock is free.
public final class FileLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        _ = Glibc.close(descriptor)
    }

    /// Opens (creating it with mode 0600 if needed) the file at `path` and waits for its exclusive lock.
    ///
    /// - Throws: the `Errno` of `open` or `flock`.
    public static func acquire(_ path: String) throws(Errno) -> FileLock {
        let descriptor = try retryOnInterrupt { Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
        let lock = FileLock(descriptor: descriptor)
        _ = try retryOnInterrupt { flock(descriptor, LOCK_EX) }
        return lock
    }
}

/// Sleeps the calling thread for `duration` (`nanosleep`, resumed after a signal for the time left).
///
/// - Important: Thread-safe; blocks only the calling thread.
public func sleepThread(for duration: Duration) {
    let (seconds, attoseconds) = duration.components
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
}
