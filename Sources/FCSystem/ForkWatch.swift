import CFCLinux

/// Whether this process is a child that `fork()` made of a process that uses the library: such a child shares its
/// parent's connection to the daemon (one socket), and has its parent's claims, leases and presenters in memory, but
/// none of its threads. It must use none of it (docs/SEMANTICS.md §7).
///
/// - Important: Thread-safe: ``start()`` registers a `pthread_atfork` child handler once per process (it touches
///   nothing of the program's: its own handlers run as before); ``isForkedChild`` is one atomic load.
public enum ForkWatch {
    /// Starts watching (once per process; later calls do nothing).
    public static func start() { cfc_watch_fork() }

    /// `true` in a forked child of a process that called ``start()``, and in that child's forked children.
    public static var isForkedChild: Bool { cfc_forked_child() != 0 }
}
