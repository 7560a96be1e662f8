public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An exclusive advisory lock (`flock`) on a file, held from ``acquire(_:)`` or ``tryAcquire(_:)`` until the object
/// goes away: the descriptor is created close-on-exec (so that no child inherits the lock) and closed exactly once,
/// which releases the lock. The library lets one process at a time start `filecoordd` with it; the daemon holds one
/// for its life, with its pid in the file.
///
/// - Important: Thread-safe; ``acquire(_:)`` blocks the calling thread until the lock is free.
public final class FileLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        _ = libcClose(descriptor)
    }

    /// Opens (creating it with mode 0600 if needed) the file at `path` and waits for its exclusive lock.
    ///
    /// - Throws: the `Errno` of `open` or `flock`.
    public static func acquire(_ path: String) throws(Errno) -> FileLock {
        let lock = try open(path)
        _ = try retryOnInterrupt { flock(lock.descriptor, LOCK_EX) }
        return lock
    }

    /// Opens (creating it with mode 0600 if needed) the file at `path` and takes its exclusive lock if it is free;
    /// `nil` when another holds it.
    ///
    /// - Throws: the `Errno` of `open` or `flock`.
    public static func tryAcquire(_ path: String) throws(Errno) -> FileLock? {
        let lock = try open(path)
        do {
            _ = try retryOnInterrupt { flock(lock.descriptor, LOCK_EX | LOCK_NB) }
        } catch  where error == .wouldBlock {
            return nil
        }
        return lock
    }

    /// Replaces the locked file's contents with `bytes` (`ftruncate`, `pwrite`), e.g. the holder's pid.
    ///
    /// - Throws: the `Errno` of `ftruncate` or `pwrite`.
    public func replaceContents(with bytes: [UInt8]) throws(Errno) {
        _ = try retryOnInterrupt { ftruncate(descriptor, 0) }
        try bytes.span.bytes.withUnsafeBytes { buffer throws(Errno) in
            var written = 0
            while written < buffer.count {
                written += try retryOnInterrupt {
                    pwrite(descriptor, buffer.baseAddress! + written, buffer.count - written, off_t(written))
                }
            }
        }
    }

    private static func open(_ path: String) throws(Errno) -> FileLock {
        FileLock(descriptor: try retryOnInterrupt { libcOpen(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) })
    }
}
