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
    /// `false` when no process has the id `pid` (`ESRCH`) or when it has exited and waits to be reaped (a zombie:
    /// state `Z` or `X` in `/proc/<pid>/stat`, as in a container whose first process reaps nothing); a process of
    /// another user counts as alive.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        do {
            try Signals.send(0, to: pid)
        } catch {
            return error != .noSuchProcess
        }
        return !isZombie(pid)
    }

    private static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? readSmallFile(FilePath("/proc/\(pid)/stat")),
            let close = stat.lastIndex(of: UInt8(ascii: ")"))
        else { return false }
        // "pid (comm) S ...": the state follows the last ')' and a space.
        let state = stat[(close + 1)...].first { $0 != UInt8(ascii: " ") }
        return state == UInt8(ascii: "Z") || state == UInt8(ascii: "X")
    }

    private static func readSmallFile(_ path: FilePath) throws -> [UInt8] {
        let descriptor = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec], retryOnInterrupt: true)
        defer { try? descriptor.close() }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = try buffer.withUnsafeMutableBytes { try descriptor.read(into: $0, retryOnInterrupt: true) }
        return Array(buffer[..<count])
    }
}
