#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Signals taken synchronously by a command-line tool: blocked in every thread, then waited for by one thread
/// (`sigwait`), so that no handler runs in the middle of the tool's work.
///
/// - Important: For tools only, never for the library (which touches no signal of its host). Call ``block(_:)``
///   on the main thread before any other thread starts: threads inherit the mask of the thread that creates them.
public enum SignalWaiting {
    /// Blocks `signals` in the calling thread (and in the threads it creates from now on).
    public static func block(_ signals: [Int32]) {
        var set = signalSet(signals)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits until one of `signals` (blocked) is pending, takes it and returns its number.
    public static func wait(for signals: [Int32]) -> Int32 {
        var set = signalSet(signals)
        var number: Int32 = 0
        while sigwait(&set, &number) != 0 {}
        return number
    }

    /// Ends the process at once with `status`, without running `atexit` handlers or flushing buffers (`_exit`): from
    /// a thread other than the one that may be inside a library call.
    public static func exitImmediately(_ status: Int32) -> Never {
        _exit(status)
    }

    private static func signalSet(_ signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        return set
    }
}
