import Foundation

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// The daemon's folder (the socket's directory): private to the user, holding the socket and the lock file.
///
/// - Important: Not thread-safe; used once at start-up.
public enum RuntimeDirectory {
    /// What went wrong while preparing the folder or the lock.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What happened and what to do.
        public var description: String
    }

    /// Creates the socket's folder with mode 0700 if it is missing, and checks that it belongs to this user and that
    /// nobody else can enter it.
    ///
    /// - Throws: ``Failure`` when the folder belongs to someone else or cannot be made private.
    public static func prepare(forSocket socketPath: String) throws(Failure) {
        let directory = (socketPath as NSString).deletingLastPathComponent
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            // Parents may be missing (a test's folder): create them, then the folder itself, private.
            do {
                try FileManager.default.createDirectory(
                    atPath: directory,
                    withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700]
                )
            } catch {
                throw Failure(description: "cannot create \(directory): \(error.localizedDescription)")
            }
        }
        var info = stat()
        guard lstat(directory, &info) == 0 else {
            throw Failure(description: "cannot inspect \(directory): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw Failure(description: "\(directory) is not a directory; remove it or choose another --socket")
        }
        guard info.st_uid == getuid() else {
            throw Failure(
                description: "\(directory) belongs to uid \(info.st_uid), not to this user (\(getuid())); "
                    + "another user may be trying to intercept file coordination: remove it"
            )
        }
        if info.st_mode & 0o077 != 0 && chmod(directory, 0o700) != 0 {
            throw Failure(description: "cannot make \(directory) private: \(String(cString: strerror(errno)))")
        }
    }
}

/// The lock that makes one daemon the only one serving a socket: `flock` on a pid file next to the socket,
/// held for the daemon's life and released by the kernel when it dies, so a crash never leaves a stale lock.
///
/// - Important: Not thread-safe; acquired once at start-up.
public final class DaemonLock: Sendable {
    private let descriptor: Int32
    /// The lock file's path.
    public let path: String

    /// Takes the lock for `socketPath`, writing this process's pid into it.
    ///
    /// - Throws: ``RuntimeDirectory/Failure`` naming the running daemon's pid when another daemon holds it.
    public init(forSocket socketPath: String) throws(RuntimeDirectory.Failure) {
        path = socketPath + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw RuntimeDirectory.Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = read(fd, &buffer, buffer.count)
            close(fd)
            let pid = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            throw RuntimeDirectory.Failure(
                description: "another filecoordd (pid \(pid.isEmpty ? "unknown" : pid)) already serves \(socketPath)"
            )
        }
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, text, text.count, 0)
        descriptor = fd
    }

    deinit {
        close(descriptor)
    }
}
