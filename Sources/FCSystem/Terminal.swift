#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whether a descriptor is a terminal (`isatty`): for tools that colour or redraw their output only on one.
///
/// - Important: Thread-safe (no state).
public enum Terminal {
    /// `true` when `descriptor` refers to a terminal.
    public static func isTerminal(_ descriptor: Int32) -> Bool {
        isatty(descriptor) == 1
    }
}
