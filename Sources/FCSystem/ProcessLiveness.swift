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

    /// The time `pid` started, in clock ticks after boot (field 22 of `/proc/<pid>/stat`), or `nil` when no such
    /// process runs. With the id it names one process for good: an id is reused, an id and a start time are not.
    public static func startTime(of pid: Int32) -> UInt64? { stat(pid)?.startTime }

    /// Whether the process `pid` that started at `startTime` (``startTime(of:)``) still runs: not a zombie, and not
    /// another process that was given the same id since.
    public static func isAlive(_ pid: Int32, startedAt startTime: UInt64) -> Bool {
        guard pid > 0, let stat = stat(pid) else { return false }
        return !stat.isZombie && stat.startTime == startTime
    }

    private static func isZombie(_ pid: Int32) -> Bool { stat(pid)?.isZombie ?? false }

    /// The state and start time of `/proc/<pid>/stat`, read once: "pid (comm) S ..." (the state follows the last
    /// ')' and a space; the start time is the 20th field from there).
    private static func stat(_ pid: Int32) -> (isZombie: Bool, startTime: UInt64?)? {
        guard pid > 0, let stat = try? readSmallFile(FilePath("/proc/\(pid)/stat")),
            let close = stat.lastIndex(of: UInt8(ascii: ")"))
        else { return nil }
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
        let state = fields.first?.first
        let startTime =
            fields.count >= 20 ? UInt64(String(decoding: fields[fields.startIndex + 19], as: UTF8.self)) : nil
        return (state == UInt8(ascii: "Z") || state == UInt8(ascii: "X"), startTime)
    }

    private static func readSmallFile(_ path: FilePath) throws -> [UInt8] {
        let descriptor = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec], retryOnInterrupt: true)
        defer { try? descriptor.close() }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = try buffer.withUnsafeMutableBytes { try descriptor.read(into: $0, retryOnInterrupt: true) }
        return Array(buffer[..<count])
    }
}
