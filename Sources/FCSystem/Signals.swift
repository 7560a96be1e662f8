internal import CFCLinux
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Signals: sending one to a process, and this process's own dispositions and mask (for the tools and test hosts;
/// the library never touches its host process's signals).
///
/// - Important: Thread-safe; ``unblockInThisThread(_:)`` changes the calling thread's mask only, ``ignore(_:)`` the
///   whole process's disposition.
public enum Signals {
    /// Sends `signal` to the process `pid` (`kill`); signal 0 only checks that the process exists and may be
    /// signalled.
    ///
    /// - Throws: the `Errno` of `kill` (`.noSuchProcess` when there is none).
    public static func send(_ signal: Int32, to pid: Int32) throws(Errno) {
        _ = try valueOrErrno { kill(pid, signal) }
    }

    /// Unblocks `signals` in the calling thread's mask (`pthread_sigmask(SIG_UNBLOCK)`), e.g. those a parent left
    /// blocked.
    ///
    /// - Throws: the error `pthread_sigmask` returned.
    public static func unblockInThisThread(_ signals: [Int32]) throws(Errno) {
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        let result = pthread_sigmask(SIG_UNBLOCK, &set, nil)
        guard result == 0 else { throw Errno(rawValue: result) }
    }

    /// Makes this process ignore `signal` (`sigaction` with `SIG_IGN`).
    ///
    /// - Throws: the `Errno` of `sigaction`.
    public static func ignore(_ signal: Int32) throws(Errno) {
        let result = cfc_ignore_signal(signal)
        guard result == 0 else { throw Errno(rawValue: result) }
    }
}
