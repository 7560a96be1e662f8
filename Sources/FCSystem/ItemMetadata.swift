internal import CFCLinux
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
        try withNulTerminated(path, of(terminatedPath:))
    }

    /// ``of(_:)`` for a path given as its bytes (a name need not be UTF-8: a `String` would replace what is not).
    public static func of(pathBytes path: [UInt8]) throws(Errno) -> ItemMetadata? {
        try withNulTerminated(path, of(terminatedPath:))
    }

    private static func of(terminatedPath path: UnsafePointer<CChar>) throws(Errno) -> ItemMetadata? {
        var buffer = stat()
        do {
            _ = try retryOnInterrupt { lstat(path, &buffer) }
        } catch let error where error == .noSuchFileOrDirectory || error == .notDirectory {
            return nil
        }
        return ItemMetadata(buffer)
    }

    private init(_ buffer: stat) {
        let isDirectory = (buffer.st_mode & S_IFMT) == S_IFDIR
        func seconds(_ time: timespec) -> Double { Double(time.tv_sec) + Double(time.tv_nsec) / 1e9 }
        self.init(
            size: isDirectory ? 0 : Int64(buffer.st_size),
            isDirectory: isDirectory,
            modified: seconds(buffer.st_mtim),
            changed: seconds(buffer.st_ctim)
        )
    }

    /// Calls `body` with the name (bytes) and metadata of each entry of the directory at `path` (`.` and `..` left
    /// out), read with `fstatat` relative to the open directory, not following a final link: no walk of the path per
    /// entry, no `String` made per name (a live query's gathering, issue 44). An entry gone between the listing and its
    /// `fstatat` is left out; one that cannot be read (`EACCES`) is too.
    ///
    /// - Throws: the `Errno` of `opendir` or `readdir`.
    public static func forEachEntry(
        ofDirectory path: String,
        _ body: (_ name: UnsafeBufferPointer<UInt8>, ItemMetadata) -> Void
    ) throws(Errno) {
        try FileSystemCalls.forEachEntryName(ofDirectory: path) { entry($0, $1, body) }
    }

    /// ``forEachEntry(ofDirectory:_:)`` for a directory's path given as its bytes (a name need not be UTF-8).
    public static func forEachEntry(
        ofDirectoryBytes path: [UInt8],
        _ body: (_ name: UnsafeBufferPointer<UInt8>, ItemMetadata) -> Void
    ) throws(Errno) {
        try FileSystemCalls.forEachEntryName(ofDirectoryBytes: path) { entry($0, $1, body) }
    }

    /// ``forEachEntry(ofDirectoryBytes:_:)`` that also names the entries whose `fstatat` failed otherwise than by
    /// `ENOENT` (gone since the listing) to `unreadable`: `EACCES` in a folder that can be listed but not searched.
    public static func forEachEntry(
        ofDirectoryBytes path: [UInt8],
        unreadable: (_ name: UnsafeBufferPointer<UInt8>) -> Void,
        _ body: (_ name: UnsafeBufferPointer<UInt8>, ItemMetadata) -> Void
    ) throws(Errno) {
        // An optional closure escapes; this one is called only within the listing.
        try withoutActuallyEscaping(unreadable) { unreadable throws(Errno) in
            try FileSystemCalls.forEachEntryName(ofDirectoryBytes: path) { entry($0, $1, unreadable: unreadable, body) }
        }
    }

    /// One entry of ``forEachEntry(ofDirectory:_:)``: `fstatat` relative to the open `directory`; an entry that
    /// cannot be read otherwise than by `ENOENT` goes to `unreadable`, if given; always goes on.
    private static func entry(
        _ directory: Int32,
        _ name: UnsafeBufferPointer<UInt8>,
        unreadable: ((_ name: UnsafeBufferPointer<UInt8>) -> Void)? = nil,
        _ body: (_ name: UnsafeBufferPointer<UInt8>, ItemMetadata) -> Void
    ) -> Bool {
        var buffer = stat()
        let failure = name.withMemoryRebound(to: CChar.self) { text -> Errno? in
            do throws(Errno) {
                _ = try retryOnInterrupt { fstatat(directory, text.baseAddress!, &buffer, AT_SYMLINK_NOFOLLOW) }
                return nil
            } catch {
                return error
            }
        }
        switch failure {
        case nil: body(name, ItemMetadata(buffer))
        case .noSuchFileOrDirectory?: break
        case _?: unreadable?(name)
        }
        return true
    }
}
