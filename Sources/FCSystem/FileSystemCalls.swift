internal import CFCLinux
import Synchronization
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A file's identity: the device and inode number `stat` reports.
public struct FileIdentity: Hashable, Sendable {
    /// `st_dev`.
    public var device: UInt64
    /// `st_ino`.
    public var inode: UInt64

    /// An identity from its two numbers.
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// What `stat` or `lstat` says about a path, as far as path canonicalisation needs it.
public struct FileStatus: Hashable, Sendable {
    /// What kind of file it is.
    public enum Kind: Hashable, Sendable {
        /// A directory.
        case directory
        /// A symbolic link (only from ``FileSystemCalls/status(_:followingLinks:)`` with `followingLinks: false`).
        case symbolicLink
        /// Anything else: a regular file, a socket, a device…
        case other
    }

    /// Device and inode.
    public var identity: FileIdentity
    /// The kind of file.
    public var kind: Kind
    /// `st_rdev` when the file is a block device (the device it stands for), else `nil`.
    public var blockDevice: UInt64?
    /// The permission bits (`st_mode & 0o7777`).
    public var permissions: UInt32
    /// The owner's user id (`st_uid`).
    public var owner: UInt32
    /// How many names the file has (`st_nlink`): above 1 for a hard-linked file (issue 26).
    public var linkCount: UInt64
    /// The id of the mount the path reached the file through (`stx_mnt_id`, the first field of
    /// `/proc/self/mountinfo`), when the kernel gives it (Linux 5.8 and later); `nil` otherwise (issue 26).
    public var mountID: UInt64? = nil
}

/// The syscalls on paths: those of path canonicalisation (issue 14: `stat`/`lstat`/`fstatat`, `readlink`, `statfs`,
/// the inode flags ioctl, reading a directory and small files) here, those that change the file system in
/// FileSystemChanges.swift. Each retries on `EINTR` and throws the `Errno` it failed with.
///
/// - Important: Thread-safe; every call may block as long as the file system takes (a hung network mount blocks
///   its caller), so call these only on the thread that asked for the answer.
public enum FileSystemCalls {
    /// `stat` (following a final symbolic link) or `lstat` (not following it) of `path`: `statx` asking for the
    /// basic fields and the mount id (one syscall, as `stat`'s), `stat`/`lstat` where the kernel has no `statx`.
    ///
    /// - Parameter readingMount: `false` calls `stat`/`lstat` (no ``FileStatus/mountID``), as before issue 26: for
    ///   the canonicalisation benchmark's comparison.
    public static func status(
        _ path: String,
        followingLinks: Bool,
        readingMount: Bool = true
    ) throws(Errno) -> FileStatus {
        try withNulTerminated(path) { path throws(Errno) in
            try status(cString: path, followingLinks: followingLinks, readingMount: readingMount)
        }
    }

    /// ``status(_:followingLinks:readingMount:)`` of a NUL-terminated path (a caller that holds one in a buffer
    /// already, such as the tail of a URL's string, issue 39).
    public static func status(
        cString path: UnsafePointer<CChar>,
        followingLinks: Bool,
        readingMount: Bool = true
    ) throws(Errno) -> FileStatus {
        if readingMount, hasExtendedStatus.load(ordering: .relaxed) {
            var extended = cfc_status()
            do {
                _ = try retryOnInterrupt { cfc_statx(path, followingLinks ? 1 : 0, &extended) }
                return FileStatus(extended)
            } catch {
                guard error == .noFunction || error == .notPermitted else { throw error }
                // No statx (an old kernel, or a seccomp filter that refuses it): stat from now on.
                hasExtendedStatus.store(false, ordering: .relaxed)
            }
        }
        var buffer = stat()
        _ = try retryOnInterrupt { followingLinks ? stat(path, &buffer) : lstat(path, &buffer) }
        return FileStatus(buffer)
    }

    /// ``status(_:followingLinks:readingMount:)`` of a path given as its bytes (a name need not be UTF-8: a
    /// `String` would replace what is not, and name another item or none).
    public static func status(
        pathBytes path: [UInt8],
        followingLinks: Bool,
        readingMount: Bool = true
    ) throws(Errno) -> FileStatus {
        try withNulTerminated(path) { path throws(Errno) in
            try status(cString: path, followingLinks: followingLinks, readingMount: readingMount)
        }
    }

    /// Whether `statx` works here; cleared at its first `ENOSYS` or `EPERM`.
    private static let hasExtendedStatus = Atomic<Bool>(true)

    /// What looking a name up found: for callers that tell "not there" from other failures without `Errno`.
    public enum LookUp: Sendable {
        /// The name exists.
        case found(FileStatus)
        /// `ENOENT`: no such name.
        case missing
        /// Any other failure.
        case failed
    }

    /// `lstat` of `name` in the directory at `directory`, both given as their bytes (a name need not be UTF-8, and two
    /// names that differ only in Unicode normalisation are two names), as a ``LookUp``.
    public static func lookUp(nameBytes name: [UInt8], inDirectoryBytes directory: [UInt8]) -> LookUp {
        let path = directory.last == UInt8(ascii: "/") ? directory + name : directory + [UInt8(ascii: "/")] + name
        do {
            return .found(try status(pathBytes: path, followingLinks: false))
        } catch {
            return error == .noSuchFileOrDirectory ? .missing : .failed
        }
    }

    /// The target of the symbolic link at `path`, as stored (relative or absolute).
    public static func symbolicLinkTarget(_ path: String) throws(Errno) -> String {
        var capacity = 256
        while true {
            let result: String? = try withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) {
                buffer throws(Errno) -> String? in
                let count = try retryOnInterrupt { readlink(path, buffer.baseAddress!, capacity) }
                guard count < capacity else { return nil }
                return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress!, count: count), as: UTF8.self)
            }
            if let result { return result }
            guard capacity < 65_536 else { throw Errno.fileNameTooLong }
            capacity *= 4
        }
    }

    /// `statfs`'s `f_type` for the file system holding `path`.
    public static func fileSystemType(_ path: String) throws(Errno) -> FileSystemType {
        try withNulTerminated(path, fileSystemType(cString:))
    }

    /// ``fileSystemType(_:)`` of a path given as its bytes (a name need not be UTF-8).
    public static func fileSystemType(pathBytes path: [UInt8]) throws(Errno) -> FileSystemType {
        try withNulTerminated(path, fileSystemType(cString:))
    }

    private static func fileSystemType(cString path: UnsafePointer<CChar>) throws(Errno) -> FileSystemType {
        var type: UInt = 0
        _ = try retryOnInterrupt { cfc_statfs_type(path, &type) }
        return FileSystemType(rawValue: UInt64(type) & 0xFFFF_FFFF)
    }

    /// Whether the directory at `path` has the casefold inode flag (`FS_IOC_GETFLAGS`, `FS_CASEFOLD_FL`): ext4,
    /// f2fs and tmpfs directories made case-insensitive with `chattr +F`. Throws when the file system has no inode
    /// flags (`ENOTTY`, `EOPNOTSUPP`).
    public static func hasCasefoldFlag(directory path: String) throws(Errno) -> Bool {
        try withNulTerminated(path, hasCasefoldFlag(cString:))
    }

    /// ``hasCasefoldFlag(directory:)`` of a directory given as its bytes (a name need not be UTF-8).
    public static func hasCasefoldFlag(directoryBytes path: [UInt8]) throws(Errno) -> Bool {
        try withNulTerminated(path, hasCasefoldFlag(cString:))
    }

    private static func hasCasefoldFlag(cString path: UnsafePointer<CChar>) throws(Errno) -> Bool {
        let fd = try retryOnInterrupt { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK) }
        defer { _ = close(fd) }
        var flags: CInt = 0
        _ = try retryOnInterrupt { cfc_ioctl_getflags(fd, &flags) }
        return UInt32(bitPattern: flags) & UInt32(cfc_fs_casefold_fl) != 0
    }

    /// The first `limit` bytes at most of the file at `path` (`open`, `read` until the end or the limit, `close`):
    /// small system files such as `/proc/self/mountinfo` and udev's device records.
    public static func contents(of path: String, limit: Int) throws(Errno) -> [UInt8] {
        let fd = try retryOnInterrupt { open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) }
        defer { _ = close(fd) }
        var bytes: [UInt8] = []
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16_384) { chunk throws(Errno) in
            while bytes.count < limit {
                let wanted = min(chunk.count, limit - bytes.count)
                let count = try retryOnInterrupt { read(fd, chunk.baseAddress!, wanted) }
                if count == 0 { break }
                bytes += chunk[0..<count]
            }
        }
        return bytes
    }

    /// `count` bytes at `offset` of the file or device at `path` (`open` read-only, `pread`, `close`); fewer when
    /// the file is shorter. For the boot sector of a block device.
    public static func bytes(of path: String, offset: Int64, count: Int) throws(Errno) -> [UInt8] {
        let fd = try retryOnInterrupt { open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) }
        defer { _ = close(fd) }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer throws(Errno) in
            let got = try retryOnInterrupt { pread(fd, buffer.baseAddress!, count, off_t(offset)) }
            return Array(buffer[0..<got])
        }
    }

    /// Calls `body` with the name of each entry of the directory at `path` (`.` and `..` left out) until it returns
    /// `false`.
    public static func forEachEntry(ofDirectory path: String, _ body: (String) -> Bool) throws(Errno) {
        try forEachEntryName(ofDirectory: path) { _, name in
            body(String(decoding: name, as: UTF8.self))
        }
    }

    /// Calls `body` with the bytes of each entry's name of the directory at `path` (given as its bytes; `.` and `..`
    /// left out, valid only during the call) until it returns `false`: no `String` made per name, and a name that is
    /// not UTF-8 kept as it is.
    public static func forEachEntry(
        ofDirectoryBytes path: [UInt8],
        _ body: (_ name: UnsafeBufferPointer<UInt8>) -> Bool
    ) throws(Errno) {
        try forEachEntryName(ofDirectoryBytes: path) { _, name in body(name) }
    }

    /// The one `readdir` loop: calls `body` with the open directory's descriptor (for calls relative to it) and the
    /// bytes of each entry's name (`.` and `..` left out, valid only during the call) until it returns `false`.
    ///
    /// - Throws: the `Errno` of `opendir` or `readdir`.
    static func forEachEntryName(
        ofDirectory path: String,
        _ body: (_ directory: Int32, _ name: UnsafeBufferPointer<UInt8>) -> Bool
    ) throws(Errno) {
        try withNulTerminated(path) { path throws(Errno) in try forEachEntryName(ofTerminatedDirectory: path, body) }
    }

    /// ``forEachEntryName(ofDirectory:_:)`` for a directory's path given as its bytes (a name need not be UTF-8).
    static func forEachEntryName(
        ofDirectoryBytes path: [UInt8],
        _ body: (_ directory: Int32, _ name: UnsafeBufferPointer<UInt8>) -> Bool
    ) throws(Errno) {
        try withNulTerminated(path) { path throws(Errno) in try forEachEntryName(ofTerminatedDirectory: path, body) }
    }

    private static func forEachEntryName(
        ofTerminatedDirectory path: UnsafePointer<CChar>,
        _ body: (_ directory: Int32, _ name: UnsafeBufferPointer<UInt8>) -> Bool
    ) throws(Errno) {
        guard let dir = opendir(path) else { throw Errno(rawValue: errno) }
        defer { _ = closedir(dir) }
        let descriptor = dirfd(dir)
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while true {
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 { throw Errno(rawValue: errno) }
                return
            }
            let name = UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: UInt8.self)
            let bytes = UnsafeBufferPointer(start: name, count: strlen(name))
            let dots = bytes.count <= 2 && bytes.allSatisfy { $0 == 0x2E }  // "." and ".." (a name is never empty)
            if dots { continue }
            if !body(descriptor, bytes) { return }
        }
    }
}

/// A file system type, as `statfs` reports it in `f_type`.
public struct FileSystemType: RawRepresentable, Hashable, Sendable {
    /// The magic number.
    public var rawValue: UInt64
    /// A type from its magic number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// ext2, ext3 and ext4.
    public static let ext4 = FileSystemType(rawValue: UInt64(cfc_magic_ext4))
    /// f2fs.
    public static let f2fs = FileSystemType(rawValue: UInt64(cfc_magic_f2fs))
    /// tmpfs.
    public static let tmpfs = FileSystemType(rawValue: UInt64(cfc_magic_tmpfs))
    /// btrfs.
    public static let btrfs = FileSystemType(rawValue: UInt64(cfc_magic_btrfs))
    /// XFS.
    public static let xfs = FileSystemType(rawValue: UInt64(cfc_magic_xfs))
    /// vfat and msdos.
    public static let msdos = FileSystemType(rawValue: UInt64(cfc_magic_msdos))
    /// The kernel's exFAT driver.
    public static let exfat = FileSystemType(rawValue: UInt64(cfc_magic_exfat))
    /// CIFS.
    public static let cifs = FileSystemType(rawValue: UInt64(cfc_magic_cifs))
    /// SMB2/3.
    public static let smb2 = FileSystemType(rawValue: UInt64(cfc_magic_smb2))
    /// The old smbfs.
    public static let smb = FileSystemType(rawValue: UInt64(cfc_magic_smb))
    /// Any FUSE file system (exfat-fuse, ntfs-3g, sshfs…): case-sensitive or not depending on the one behind it.
    public static let fuse = FileSystemType(rawValue: UInt64(cfc_magic_fuse))
}

extension FileStatus {
    init(_ buffer: stat) {
        let type = buffer.st_mode & S_IFMT
        self.identity = FileIdentity(device: UInt64(buffer.st_dev), inode: UInt64(buffer.st_ino))
        self.kind = type == S_IFDIR ? .directory : type == S_IFLNK ? .symbolicLink : .other
        self.blockDevice = type == S_IFBLK ? UInt64(buffer.st_rdev) : nil
        self.permissions = UInt32(buffer.st_mode) & 0o7777
        self.owner = UInt32(buffer.st_uid)
        self.linkCount = UInt64(buffer.st_nlink)
    }

    init(_ buffer: cfc_status) {
        let type = mode_t(buffer.mode) & S_IFMT
        self.identity = FileIdentity(device: UInt64(buffer.device), inode: UInt64(buffer.inode))
        self.kind = type == S_IFDIR ? .directory : type == S_IFLNK ? .symbolicLink : .other
        self.blockDevice = type == S_IFBLK ? UInt64(buffer.rdev) : nil
        self.permissions = UInt32(buffer.mode) & 0o7777
        self.owner = UInt32(buffer.uid)
        self.linkCount = UInt64(buffer.link_count)
        self.mountID = buffer.has_mount_id != 0 ? UInt64(buffer.mount_id) : nil
    }
}
