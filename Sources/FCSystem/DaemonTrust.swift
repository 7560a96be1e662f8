public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a client checks before it sends anything to a daemon's socket, so that it only ever talks to a daemon of its
/// own user (docs/SEMANTICS.md, "Who a client trusts"), as ssh-agent, gpg-agent and D-Bus session buses do:
///
/// - the socket's folder is a directory, not a symbolic link (`lstat`), owned by the client's effective uid, with
///   no access for group or others;
/// - the socket path is absent or a socket (not a regular file, not a link);
/// - the connected peer (`SO_PEERCRED`) runs as the client's effective uid.
///
/// Every client of the socket uses it: the library, `fcdump`, `fc-load`; a client in another language mirrors these
/// three checks. A ``Refusal`` is never a reason to start a daemon or to coordinate without one.
///
/// - Important: Thread-safe (no state); each call makes a few syscalls and blocks only as long as they do.
public enum DaemonTrust {
    /// Why a socket is not trusted: what was found, whose it is, and what to do.
    public struct Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        /// The folder or socket that failed a check.
        public var path: String
        /// Its owner (or the peer's uid), when known.
        public var owner: UInt32?
        /// What happened and what to do, in words.
        public var description: String
    }

    /// The user a daemon must run as: this process's effective uid (``ProcessIdentity/effectiveUserID``).
    public static var effectiveUserID: UInt32 { ProcessIdentity.effectiveUserID }

    /// The folder of a socket path.
    public static func folder(ofSocket socketPath: String) -> String {
        guard let slash = socketPath.lastIndex(of: "/") else { return "." }
        return slash == socketPath.startIndex ? "/" : String(socketPath[..<slash])
    }

    /// Checks the socket's folder and the socket path as they are now. A folder or socket that does not exist
    /// passes (there is no daemon yet: connecting fails, and a starter creates the folder with ``prepareFolder``).
    public static func checkFolder(ofSocket socketPath: String, uid: UInt32 = effectiveUserID) throws(Refusal) {
        let directory = folder(ofSocket: socketPath)
        guard let info = try status(directory) else { return }
        let owner = info.st_uid
        let advice =
            "Another user may be trying to intercept file coordination. If you did not make it, remove it "
            + "(`rm -r \(directory)` as its owner or root); set XDG_RUNTIME_DIR to a private folder to use another "
            + "socket."
        switch info.st_mode & S_IFMT {
        case S_IFDIR: break
        case S_IFLNK:
            throw Refusal(
                path: directory,
                owner: owner,
                description: "filecoordd's socket folder \(directory) is a symbolic link (owned by uid \(owner)), "
                    + "not a folder: it is not used. \(advice)"
            )
        default:
            throw Refusal(
                path: directory,
                owner: owner,
                description: "filecoordd's socket folder \(directory) is not a folder (owned by uid \(owner)): it is "
                    + "not used. \(advice)"
            )
        }
        guard owner == uid else {
            throw Refusal(
                path: directory,
                owner: owner,
                description: "filecoordd's socket folder \(directory) belongs to uid \(owner), not to this user "
                    + "(uid \(uid)): it is not used. \(advice)"
            )
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw Refusal(
                path: directory,
                owner: owner,
                description: "filecoordd's socket folder \(directory) (owned by this user, uid \(uid)) has mode "
                    + "\(String(mode, radix: 8)): group or others may enter it, so another user may have replaced "
                    + "the socket. It is not used. Make it private with `chmod 700 \(directory)` and restart "
                    + "filecoordd, or remove it."
            )
        }
        guard let socket = try status(socketPath) else { return }
        guard socket.st_mode & S_IFMT == S_IFSOCK else {
            let kind = socket.st_mode & S_IFMT == S_IFLNK ? "a symbolic link" : "not a socket"
            throw Refusal(
                path: socketPath,
                owner: socket.st_uid,
                description: "filecoordd's socket \(socketPath) is \(kind) (owned by uid \(socket.st_uid)): it is "
                    + "not used, and no daemon is started there. Remove it if nothing of yours put it there."
            )
        }
    }

    /// Creates the socket's folder if it is missing, safely: each missing folder with `mkdir` mode 0700 (the final
    /// one too; an existing one is never followed through a link or changed), then ``checkFolder(ofSocket:uid:)``.
    public static func prepareFolder(ofSocket socketPath: String, uid: UInt32 = effectiveUserID) throws(Refusal) {
        let directory = folder(ofSocket: socketPath)
        var prefix = ""
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            guard mkdir(prefix, 0o700) != 0 else { continue }
            let error = errno
            guard error == EEXIST else {
                throw Refusal(
                    path: prefix,
                    owner: nil,
                    description: "cannot create filecoordd's socket folder \(prefix): \(Errno(rawValue: error))"
                )
            }
        }
        try checkFolder(ofSocket: socketPath, uid: uid)
    }

    /// Checks who is at the other end of a connected socket: the daemon must run as `uid`.
    public static func checkPeer(
        of socket: UnixSocket,
        socketPath: String,
        uid: UInt32 = effectiveUserID
    ) throws(Refusal) {
        let peer: PeerCredentials
        do {
            peer = try socket.peerCredentials()
        } catch {
            throw Refusal(
                path: socketPath,
                owner: nil,
                description: "cannot tell who listens on \(socketPath) (SO_PEERCRED: \(error)): it is not used."
            )
        }
        guard peer.uid == uid else {
            throw Refusal(
                path: socketPath,
                owner: peer.uid,
                description: "the process listening on \(socketPath) (pid \(peer.pid)) runs as uid \(peer.uid), not "
                    + "as this user (uid \(uid)): nothing was sent to it. Another user may be trying to intercept "
                    + "file coordination: stop that process and remove \(folder(ofSocket: socketPath))."
            )
        }
    }

    /// Why ``connect(to:uid:)`` got no trusted connection.
    public enum ConnectFailure: Error, Sendable {
        /// A check failed: never retry, start a daemon or coordinate without one because of it.
        case untrusted(Refusal)
        /// Nothing answers (`connect` failed): a daemon may be started, after ``prepareFolder(ofSocket:uid:)``.
        case unreachable(Errno)
    }

    /// Checks the folder, connects, and checks the peer: the socket returned is a daemon of `uid`'s, and nothing
    /// was sent on it yet.
    public static func connect(
        to socketPath: String,
        uid: UInt32 = effectiveUserID
    ) throws(ConnectFailure) -> UnixSocket {
        do {
            try checkFolder(ofSocket: socketPath, uid: uid)
        } catch {
            throw .untrusted(error)
        }
        let socket: UnixSocket
        do {
            socket = try UnixSocket.connect(to: socketPath)
        } catch {
            throw .unreachable(error)
        }
        do {
            try checkPeer(of: socket, socketPath: socketPath, uid: uid)
        } catch {
            throw .untrusted(error)
        }
        return socket
    }

    /// `lstat` of `path`, or `nil` when it does not exist.
    private static func status(_ path: String) throws(Refusal) -> stat? {
        var info = stat()
        do {
            _ = try retryOnInterrupt { lstat(path, &info) }
        } catch .noSuchFileOrDirectory {
            return nil
        } catch {
            throw Refusal(path: path, owner: nil, description: "cannot inspect \(path): \(error)")
        }
        return info
    }
}
