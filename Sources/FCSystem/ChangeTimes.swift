public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The wall clock and files' change times (`st_ctim`), both in nanoseconds since the Unix epoch, for telling whether
/// a file changed after a moment (issue 37: a change made between a presenter's registration and its watch).
///
/// A file's change time cannot be set by its owner (unlike its modification time) and moves at every write, rename,
/// link count or attribute change. The kernel takes it from a clock that may lag the wall clock by one tick (up to
/// 10 ms with `HZ=100`; Linux 6.13 and later stamp a file finely once its times were read): a change time compared
/// with the wall clock may be up to a tick early.
///
/// - Important: Thread-safe (no state).
public enum ChangeTimes {
    /// How far behind the wall clock a change time may be: one scheduler tick at the slowest (`HZ=100`), doubled.
    public static let tickSlack: Int64 = 20_000_000

    /// `clock_gettime(CLOCK_REALTIME)`.
    public static var now: Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// The change time of the file at `path` (`lstat`: a link's own).
    public static func changeTime(of path: String) throws(Errno) -> Int64 {
        var buffer = stat()
        _ = try retryOnInterrupt { lstat(path, &buffer) }
        return Int64(buffer.st_ctim.tv_sec) * 1_000_000_000 + Int64(buffer.st_ctim.tv_nsec)
    }

    /// ``changeTime(of:)`` of a path given as its bytes (a name need not be UTF-8); `nil` when nothing is there.
    public static func changeTime(ofPathBytes path: [UInt8]) throws(Errno) -> Int64? {
        try state(ofPathBytes: path)?.changeTime
    }

    /// What `lstat` shows of an item: enough to tell whether it changed since (issue 37).
    public struct FileState: Hashable, Sendable {
        /// `st_ino`.
        public var inode: UInt64
        /// `st_size`.
        public var size: Int64
        /// `st_ctim`, nanoseconds since the Unix epoch.
        public var changeTime: Int64

        /// A state of these three numbers.
        public init(inode: UInt64, size: Int64, changeTime: Int64) {
            self.inode = inode
            self.size = size
            self.changeTime = changeTime
        }
    }

    /// The state of the item at `path` (`lstat`: a link's own), `nil` when nothing is there (`ENOENT`, `ENOTDIR`).
    public static func state(of path: String) throws(Errno) -> FileState? {
        try state(ofPathBytes: Array(path.utf8))
    }

    /// ``state(of:)`` for a path given as its bytes (a name need not be UTF-8).
    public static func state(ofPathBytes path: [UInt8]) throws(Errno) -> FileState? {
        try withNulTerminated(path, state(ofTerminatedPath:))
    }

    /// ``state(of:)`` for a path that `write` puts as `byteCount` bytes into a buffer on the stack (no allocation
    /// for a path up to `PATH_MAX`), for a caller that keeps its paths in another shape (the client's `ItemPath`).
    public static func state(
        ofPathByteCount byteCount: Int,
        writtenBy write: (UnsafeMutableBufferPointer<UInt8>) -> Void
    ) throws(Errno) -> FileState? {
        try withNulTerminated(byteCount: byteCount, write, state(ofTerminatedPath:))
    }

    private static func state(ofTerminatedPath path: UnsafePointer<CChar>) throws(Errno) -> FileState? {
        var buffer = stat()
        do {
            _ = try retryOnInterrupt { lstat(path, &buffer) }
        } catch let error where error == .noSuchFileOrDirectory || error == .notDirectory {
            return nil
        }
        return FileState(
            inode: UInt64(buffer.st_ino),
            size: Int64(buffer.st_size),
            changeTime: Int64(buffer.st_ctim.tv_sec) * 1_000_000_000 + Int64(buffer.st_ctim.tv_nsec)
        )
    }
}
