import Foundation

/// A client process's command line, for `fcdump clients`: read from `/proc/PID/cmdline` once, when the client
/// connects (the pid is the kernel's, from `SO_PEERCRED`).
///
/// - Important: Stateless; callable from any thread. The read is a few KiB from procfs and does not block.
enum ProcessCommandLine {
    /// At most this much of a command line is kept.
    static let maximumBytes = 4_096

    /// The arguments of process `pid`, the executable first; empty when they cannot be read (the process is gone, or
    /// is a kernel thread). A command line longer than ``maximumBytes`` is cut, its last argument ending in "…".
    static func arguments(of pid: Int32) -> [String] {
        guard pid > 0, let handle = FileHandle(forReadingAtPath: "/proc/\(pid)/cmdline") else { return [] }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maximumBytes + 1), !data.isEmpty else { return [] }
        let truncated = data.count > maximumBytes
        var bytes = [UInt8](data.prefix(maximumBytes))
        if bytes.last == 0 { bytes.removeLast() }
        var arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        if truncated, !arguments.isEmpty { arguments[arguments.count - 1] += "…" }
        return arguments
    }
}
