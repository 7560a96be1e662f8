public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// This process's mount table (`/proc/self/mountinfo`) kept open to learn, without reading it, whether a file system
/// was mounted or unmounted in its mount namespace since the last look: the kernel marks the open file
/// (`POLLERR | POLLPRI`) at every change, and a `poll` that reports the mark clears it (proc(5), "mountinfo").
///
/// The owner looks (``changed()``) before it uses what it read of the table, and reads the table again after a
/// look that says so: a change after the look is told by the next one.
///
/// - Important: Not thread-safe: one owner, one thread at a time. ``changed()`` never waits.
public final class MountTableWatch {
    private let descriptor: Int32

    /// Opens the table.
    ///
    /// - Throws: when `/proc/self/mountinfo` cannot be opened (no `/proc`).
    public init() throws(Errno) {
        descriptor = try retryOnInterrupt { libcOpen("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC | O_NOCTTY) }
    }

    deinit { _ = libcClose(descriptor) }

    /// Whether the table changed since the previous call (since ``init()`` for the first): one `poll` that does not
    /// wait. A `poll` that fails says `true` (read the table again rather than trust an old one).
    public func changed() -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLPRI), revents: 0)
        guard let ready = try? retryOnInterrupt({ libcPoll(&entry, 1, 0) }) else { return true }
        return ready > 0 && entry.revents & Int16(POLLERR | POLLPRI) != 0
    }
}
