import CFCLinux
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension FileSystemCalls {
    /// Renames `source` to `destination`, atomically replacing a file (or an empty directory) there (`rename(2)`).
    public static func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        _ = try retryOnInterrupt { libcRename(source.string, destination.string) }
    }

    /// Renames `source` to `destination` only when nothing is at `destination` (`renameat2` with
    /// `RENAME_NOREPLACE`): the check and the rename are one step, so nothing made there meanwhile is replaced.
    ///
    /// - Throws: `.fileExists` when something is there; `.invalidArgument` where the file system cannot rename
    ///   this way; `.improperLink` (`EXDEV`) across file systems; any other `Errno` of `renameat2`.
    public static func renameWithoutReplacing(_ source: String, to destination: String) throws(Errno) {
        _ = try retryOnInterrupt { cfc_rename_noreplace(source, destination) }
    }

    /// Flushes the file or directory at `path` to disk (`fsync`): for a directory, the names created, renamed or
    /// removed in it.
    public static func sync(_ path: FilePath) throws(Errno) {
        let descriptor = try retryOnInterrupt { libcOpen(path.string, O_RDONLY | O_CLOEXEC) }
        defer { _ = libcClose(descriptor) }
        _ = try retryOnInterrupt { fsync(descriptor) }
    }

    /// Creates the directory `path` with `permissions` (less the umask) (`mkdir`).
    ///
    /// - Throws: the `Errno` of `mkdir`, `.fileExists` when something is there already.
    public static func makeDirectory(_ path: String, permissions: UInt32) throws(Errno) {
        _ = try retryOnInterrupt { mkdir(path, mode_t(permissions)) }
    }

    /// Sets the permission bits of `path` (`chmod`, following a final link).
    public static func setPermissions(_ path: String, to permissions: UInt32) throws(Errno) {
        _ = try retryOnInterrupt { chmod(path, mode_t(permissions)) }
    }

    /// Writes `bytes` to the file at `path`, created with `permissions` (less the umask) or emptied first, through a
    /// descriptor opened with `O_CLOEXEC` and closed before it returns. Foundation's `Data.write(to:)` opens without
    /// `O_CLOEXEC`: a child that another thread spawns meanwhile inherits the descriptor, and the file's last close
    /// (inotify's `IN_CLOSE_WRITE`) comes when that child closes it, after later writes' events.
    public static func writeFile(_ path: String, _ bytes: [UInt8], permissions: UInt32 = 0o644) throws(Errno) {
        let descriptor = try retryOnInterrupt {
            libcOpen(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(permissions))
        }
        defer { _ = libcClose(descriptor) }
        let failure: Errno? = bytes.withUnsafeBytes { buffer in
            var written = 0
            while written < buffer.count {
                do throws(Errno) {
                    written += try retryOnInterrupt {
                        libcWrite(descriptor, buffer.baseAddress! + written, buffer.count - written)
                    }
                } catch {
                    return error
                }
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Removes the name `path` (`unlink`): a file, a socket or a link, never a directory.
    public static func removeFile(_ path: String) throws(Errno) {
        _ = try retryOnInterrupt { unlink(path) }
    }

    /// Removes the empty directory `path` (`rmdir`).
    ///
    /// - Throws: `.directoryNotEmpty` when something is in it, or any other `Errno` of `rmdir`.
    public static func removeEmptyDirectory(_ path: String) throws(Errno) {
        _ = try retryOnInterrupt { rmdir(path) }
    }

    /// Sets the length of the file at `path` (`truncate`): cut, or extended with zeros.
    public static func setLength(_ path: String, to length: Int64) throws(Errno) {
        _ = try retryOnInterrupt { truncate(path, off_t(length)) }
    }

    /// Whether this process may execute the file at `path` (`access(X_OK)`, with the real ids).
    public static func isExecutable(_ path: String) -> Bool {
        access(path, X_OK) == 0
    }

    /// Whether this process may read and write the file at `path` (`access(R_OK | W_OK)`, with the real ids).
    public static func isReadableAndWritable(_ path: String) -> Bool {
        access(path, R_OK | W_OK) == 0
    }
}
