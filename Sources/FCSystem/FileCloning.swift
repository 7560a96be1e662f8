import CFCLinux
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Copying files' contents durably: a reflink (`FICLONE`) where the file system can, a plain copy elsewhere
/// (the version store, `.forUploading` snapshots). `rename` and `fsync` are ``FileSystemCalls``'
/// (FileSystemChanges.swift).
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
            try? FileSystemCalls.removeFile(destination.string)
            throw error
        }
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
