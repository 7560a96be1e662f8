import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whether a process still runs (`kill(pid, 0)`): for leftovers named after the process that made them.
///
/// - Important: Thread-safe (no state).
public enum ProcessLiveness {
    /// `false` only when no process has the id `pid` (`ESRCH`); a process of another user counts as alive.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        do {
            _ = try valueOrErrno { kill(pid, 0) }
            return true
        } catch {
            return error != .noSuchProcess
        }
    }
}
