public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs `body`, a system call wrapper that returns -1 and sets `errno` on failure, again for as long as it fails
/// with `EINTR`; returns its result or throws the `Errno` it failed with.
///
/// This is the one place where `errno` is read after a call: every wrapper in FCSystem goes through it (or through
/// ``valueOrErrno(_:)`` for calls that must not be retried), in the style of swift-system's internal helpers.
///
/// - Important: Thread-safe: `errno` is per thread.
public func retryOnInterrupt<Result: FixedWidthInteger>(_ body: () -> Result) throws(Errno) -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = Errno(rawValue: errno)
        if code != .interrupted { throw code }
    }
}

/// Runs `body` once and returns its result, or throws the `Errno` it failed with (`-1` and `errno`). For calls that
/// must not be restarted after `EINTR` (`close`, and `connect`, whose retry would fail with `EALREADY`).
///
/// - Important: Thread-safe: `errno` is per thread.
public func valueOrErrno<Result: FixedWidthInteger>(_ body: () -> Result) throws(Errno) -> Result {
    let result = body()
    if result == -1 { throw Errno(rawValue: errno) }
    return result
}
