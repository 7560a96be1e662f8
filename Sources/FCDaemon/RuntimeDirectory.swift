import FCSystem
import Foundation
import SystemPackage

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
        do {
            try FileSystemCalls.makeDirectory(directory, permissions: 0o700)
        } catch {
            // Parents may be missing (a test's folder): create them, then the folder itself, private.
            if error != .fileExists { try createWithParents(directory) }
        }
        let status: FileStatus
        do {
            status = try FileSystemCalls.status(directory, followingLinks: false)
        } catch {
            throw Failure(description: "cannot inspect \(directory): \(error)")
        }
        guard status.kind == .directory else {
            throw Failure(description: "\(directory) is not a directory; remove it or choose another --socket")
        }
        let user = ProcessIdentity.userID
        guard status.owner == user else {
            throw Failure(
                description: "\(directory) belongs to uid \(status.owner), not to this user (\(user)); "
                    + "another user may be trying to intercept file coordination: remove it"
            )
        }
        if status.permissions & 0o077 != 0 {
            do {
                try FileSystemCalls.setPermissions(directory, to: 0o700)
            } catch {
                throw Failure(description: "cannot make \(directory) private: \(error)")
            }
        }
    }

    private static func createWithParents(_ directory: String) throws(Failure) {
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
}

/// The lock that makes one daemon the only one serving a socket: `flock` on a pid file next to the socket
/// (FCSystem's ``FileLock``), held for the daemon's life and released by the kernel when it dies, so a crash never
/// leaves a stale lock.
///
/// - Important: Not thread-safe; acquired once at start-up.
public final class DaemonLock: Sendable {
    private let lock: FileLock
    /// The lock file's path.
    public let path: String

    /// Takes the lock for `socketPath`, writing this process's pid into it.
    ///
    /// - Throws: ``RuntimeDirectory/Failure`` naming the running daemon's pid when another daemon holds it.
    public init(forSocket socketPath: String) throws(RuntimeDirectory.Failure) {
        let path = socketPath + ".lock"
        self.path = path
        let taken: FileLock?
        do {
            taken = try FileLock.tryAcquire(path)
        } catch {
            throw RuntimeDirectory.Failure(description: "cannot lock \(path): \(error)")
        }
        guard let taken else {
            let pid = String(decoding: (try? FileSystemCalls.contents(of: path, limit: 32)) ?? [], as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            throw RuntimeDirectory.Failure(
                description: "another filecoordd (pid \(pid.isEmpty ? "unknown" : pid)) already serves \(socketPath)"
            )
        }
        do {
            try taken.replaceContents(with: Array("\(ProcessIdentity.processID)\n".utf8))
        } catch {
            throw RuntimeDirectory.Failure(description: "cannot write this daemon's pid into \(path): \(error)")
        }
        lock = taken
    }
}
