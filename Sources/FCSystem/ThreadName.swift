import CFCLinux

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Gives the calling thread the name the kernel shows (`/proc/…/task/…/comm`, `top -H`, `gdb`): its first 15 bytes
/// (`prctl(PR_SET_NAME)`; give an ASCII name, or one whose 15th byte ends a character). Foundation's `Thread.name`
/// does not reach the kernel on Linux. `errno` is kept; a failure (none is documented for this call) leaves the name.
///
/// - Important: Thread-safe; names only the calling thread, so call it from a thread of one's own.
public func nameCurrentThread(_ name: String) {
    let saved = errno
    defer { errno = saved }
    _ = cfc_set_thread_name(name)
}
