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

    /// Whether the process `pid` runs and has not started to exit: `false` for no such process, a zombie, or a
    /// process whose exit has begun (`PF_EXITING`, 0x4 in the flags, field 9 of `/proc/<pid>/stat`), which the kernel
    /// sets before it closes the process's descriptors. So a peer whose socket closed because it is exiting reads as
    /// gone, though `/proc` still shows it for a moment. A process of another user whose `/proc` entry cannot be read
    /// counts as running.
    public static func isRunning(_ pid: Int32) -> Bool {
        guard isAlive(pid) else { return false }
        guard let stat = stat(pid) else { return true }
        return stat.flags.map { $0 & 0x4 == 0 } ?? true
    }

    private static func isZombie(_ pid: Int32) -> Bool { stat(pid)?.isZombie ?? false }

    /// The state, flags and start time of `/proc/<pid>/stat`, read once: "pid (comm) S ..." (the state follows the
    /// last ')' and a space; the flags are the 7th field from there, the start time the 20th).
    private static func stat(_ pid: Int32) -> (isZombie: Bool, startTime: UInt64?, flags: UInt64?)? {
        guard pid > 0, let stat = try? readSmallFile(FilePath("/proc/\(pid)/stat")),
            let close = stat.lastIndex(of: UInt8(ascii: ")"))
        else { return nil }
        let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
        let state = fields.first?.first
        let startTime =
            fields.count >= 20 ? UInt64(String(decoding: fields[fields.startIndex + 19], as: UTF8.self)) : nil
        let flags = fields.count >= 7 ? UInt64(String(decoding: fields[fields.startIndex + 6], as: UTF8.self)) : nil
        return (state == UInt8(ascii: "Z") || state == UInt8(ascii: "X"), startTime, flags)
    }

    private static func readSmallFile(_ path: FilePath) throws -> [UInt8] {
        let descriptor = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec], retryOnInterrupt: true)
        defer { try? descriptor.close() }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = try buffer.withUnsafeMutableBytes { try descriptor.read(into: $0, retryOnInterrupt: true) }
        return Array(buffer[..<count])
    }
}
