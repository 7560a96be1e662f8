import CFCLinux
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Copying files' contents durably: a reflink (`FICLONE`) where the file system can, a plain copy elsewhere, and
/// `fsync` of files and directories (the version store's crash-safe ordering, `.forUploading` snapshots).
///
/// - Important: Thread-safe (no state); every call blocks its thread on disk I/O.
public enum FileCloning {
    /// How ``cloneOrCopy(from:to:permissions:)`` made the copy.
    public enum Method: Sendable, Equatable {
        /// The copy shares the source's extents.
        case reflink
        /// The bytes were copied.
        case copy
    }

    /// Creates `destination` (which must not exist) with the contents of the regular file `source`, reflinked where
    /// the file system can and copied otherwise, and flushes it to disk (`fsync`) before returning. A failure
    /// leaves no `destination` behind.
    @discardableResult
    public static func cloneOrCopy(
        from source: FilePath,
        to destination: FilePath,
        permissions: FilePermissions = [.ownerReadWrite]
    ) throws(Errno) -> Method {
        let input = try typed {
            try FileDescriptor.open(source, .readOnly, options: [.closeOnExec], retryOnInterrupt: true)
        }
        defer { try? input.close() }
        let output = try typed {
            try FileDescriptor.open(
                destination,
                .writeOnly,
                options: [.create, .exclusiveCreate, .closeOnExec],
                permissions: permissions,
                retryOnInterrupt: true
            )
        }
        do throws(Errno) {
            let method: Method
            if (try? valueOrErrno({ cfc_ficlone(output.rawValue, input.rawValue) })) != nil {
                method = .reflink
            } else {
                try copyBytes(from: input, to: output)
                method = .copy
            }
            _ = try retryOnInterrupt { fsync(output.rawValue) }
            try typed { try output.close() }
            return method
        } catch {
            try? output.close()
            _ = unlink(destination.string)
            throw error
        }
    }

    /// Flushes the file or directory at `path` to disk (`fsync`): for a directory, the names created, renamed or
    /// removed in it.
    public static func sync(_ path: FilePath) throws(Errno) {
        let descriptor = try typed {
            try FileDescriptor.open(path, .readOnly, options: [.closeOnExec], retryOnInterrupt: true)
        }
        defer { try? descriptor.close() }
        _ = try retryOnInterrupt { fsync(descriptor.rawValue) }
    }

    /// Runs a swift-system call (which throws `Errno` untyped) with its error typed.
    private static func typed<T>(_ body: () throws -> T) throws(Errno) -> T {
        do { return try body() } catch { throw (error as? Errno) ?? .ioError }
    }

    private static func copyBytes(from input: FileDescriptor, to output: FileDescriptor) throws(Errno) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try typed { try input.read(into: buffer, retryOnInterrupt: true) }
            if count == 0 { return }
            _ = try typed { try output.writeAll(UnsafeRawBufferPointer(rebasing: buffer[..<count])) }
        }
    }
}

extension FileCloning {
    /// Renames `source` to `destination`, atomically replacing a file (or an empty directory) there (`rename(2)`).
    public static func rename(_ source: FilePath, to destination: FilePath) throws(Errno) {
        _ = try retryOnInterrupt { systemRename(source.string, destination.string) }
    }
}

#if canImport(Glibc)
private let systemRename = Glibc.rename
#elseif canImport(Musl)
private let systemRename = Musl.rename
#endif
