import Synchronization

/// Who read the daemon's frames, for the tests that check the reader role (docs/ARCHITECTURE.md §8.1): not API.
///
/// - Important: Thread-safe: relaxed atomic counters, added to by the listener once per batch it reads.
@_spi(Testing)
public enum ReaderDiagnostics {
    /// Frames the process's connection listeners have read and handled since the process started: only frames no
    /// blocked caller was reading for (a caller reads its own reply, and whatever comes before it, itself).
    public static var framesReadByListeners: Int { listenerFrames.load(ordering: .relaxed) }

    static let listenerFrames = Atomic<Int>(0)
}
