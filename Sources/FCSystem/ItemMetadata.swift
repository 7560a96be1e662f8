public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a live query shows of an item (issue 44): its size, kind and times, from `lstat` (a link's own).
///
/// - Important: A value; ``of(_:)`` is thread-safe (no state).
public struct ItemMetadata: Hashable, Sendable {
    /// `st_size` (0 for a directory).
    public var size: Int64
    public var isDirectory: Bool
    /// `st_mtim`, seconds since the Unix epoch.
    public var modified: Double
    /// `st_ctim`, seconds since the Unix epoch: `lstat` has no birth time.
    public var changed: Double

    public init(size: Int64, isDirectory: Bool, modified: Double, changed: Double) {
        self.size = size
        self.isDirectory = isDirectory
        self.modified = modified
        self.changed = changed
    }

    /// The item at `path`, `nil` when nothing is there (`ENOENT`, `ENOTDIR`).
    ///
    /// - Throws: `Errno` for another failure (`EACCES`, `ELOOP`).
    public static func of(_ path: String) throws(Errno) -> ItemMetadata? {
        var buffer = stat()
        do {
            _ = try retryOnInterrupt { lstat(path, &buffer) }
        } catch let error where error == .noSuchFileOrDirectory || error == .notDirectory {
            return nil
        }
        let isDirectory = (buffer.st_mode & S_IFMT) == S_IFDIR
        func seconds(_ time: timespec) -> Double { Double(time.tv_sec) + Double(time.tv_nsec) / 1e9 }
        return ItemMetadata(
            size: isDirectory ? 0 : Int64(buffer.st_size),
            isDirectory: isDirectory,
            modified: seconds(buffer.st_mtim),
            changed: seconds(buffer.st_ctim)
        )
    }
}
