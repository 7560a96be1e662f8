import FCSystem
import Foundation
import SystemPackage

/// Starts `filecoordd` when no daemon answers (docs/ARCHITECTURE.md §9, "Clients"): one starter at a time, guarded by a
/// lock file in the socket's folder, then a bounded wait for the socket to accept.
///
/// - Important: Thread-safe: all state is in the file system; concurrent starters in this or other processes
///   serialise on the lock.
enum DaemonLauncher {
    /// Where the daemon executable is: `FILECOORDD_PATH`, else next to this process's executable, else on `PATH`.
    static func executable(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let fileManager = FileManager.default
        if let explicit = environment["FILECOORDD_PATH"], !explicit.isEmpty {
            return fileManager.isExecutableFile(atPath: explicit) ? explicit : nil
        }
        if let own = try? fileManager.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let beside = ((own as NSString).deletingLastPathComponent as NSString).appendingPathComponent("filecoordd")
            if fileManager.isExecutableFile(atPath: beside) { return beside }
        }
        for directory in (environment["PATH"] ?? "").split(separator: ":") {
            let candidate = (String(directory) as NSString).appendingPathComponent("filecoordd")
            if fileManager.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Connects to the daemon at `socketPath`, starting it first if nothing answers and `mayStart` is set. Fails with
    /// ``ConnectFailure/noDaemon(_:)`` when nothing answers and there is no `filecoordd` to start, else with
    /// ``ConnectFailure/transient(_:)`` (a daemon should be there, or was started, but did not accept).
    static func connectOrStart(socketPath: String, mayStart: Bool = true) -> Result<UnixSocket, ConnectFailure> {
        let firstError: Errno
        switch connectTrusted(socketPath) {
        case .success(let socket): return .success(socket)
        case .failure(.untrusted(let refusal)): return .failure(untrusted(refusal))
        case .failure(.unreachable(let error)): firstError = error
        }
        if firstError == .fileNameTooLong {
            // No daemon could listen there either: fail now, and start none (issue 37).
            return .failure(.unreachable(socketPathTooLong(socketPath)))
        }
        guard mayStart else {
            return .failure(.transient("No filecoordd answers at \(socketPath) (connect: \(firstError))."))
        }
        guard let executable = executable() else {
            return .failure(
                .noDaemon(
                    "No filecoordd answers at \(socketPath) (connect: \(firstError)) and none was found to start (set "
                        + "FILECOORDD_PATH, or put filecoordd next to the program or on PATH)."
                )
            )
        }
        // The folder is made private (mkdir 0700, never through a link) and checked before anything goes in it.
        do {
            try DaemonTrust.prepareFolder(ofSocket: socketPath)
        } catch {
            return .failure(untrusted(error))
        }
        // One starter at a time: the others wait here, then find the daemon the first one started.
        let lockPath = socketPath + ".start-lock"
        // Without the lock (a read-only folder), starters may race; the daemon's own pid-file lock keeps one.
        let lock = try? FileLock.acquire(lockPath)
        defer { withExtendedLifetime(lock) {} }
        switch connectTrusted(socketPath) {
        case .success(let socket): return .success(socket)
        case .failure(.untrusted(let refusal)): return .failure(untrusted(refusal))
        case .failure(.unreachable): break
        }
        if let failure = spawn(executable, socketPath: socketPath) { return .failure(.transient(failure.message)) }
        // Bounded backoff: 10 ms doubling to 400 ms, about 5 s in all.
        var delay: Duration = .milliseconds(10)
        var waited: Duration = .zero
        while waited < .seconds(5) {
            sleepThread(for: delay)
            waited += delay
            switch connectTrusted(socketPath) {
            case .success(let socket): return .success(socket)
            case .failure(.untrusted(let refusal)): return .failure(untrusted(refusal))
            case .failure(.unreachable): break
            }
            delay = min(delay * 2, .milliseconds(400))
        }
        return .failure(
            .transient(
                "Started \(executable) but it did not accept connections at \(socketPath) within 5 s; see "
                    + "\(socketPath).log."
            )
        )
    }

    /// Connects to the socket only if its folder, the socket and the listening process are this user's
    /// (``DaemonTrust``; docs/SEMANTICS.md §12). Nothing is sent on it yet.
    private static func connectTrusted(_ socketPath: String) -> Result<UnixSocket, DaemonTrust.ConnectFailure> {
        Result { () throws(DaemonTrust.ConnectFailure) in try DaemonTrust.connect(to: socketPath) }
    }

    /// The socket's path cannot be put in a socket address, even through its folder (``AddressablePath``).
    static func socketPathTooLong(_ socketPath: String) -> FileCoordinationError {
        FileCoordinationError(
            .arbiterUnreachable,
            "The daemon's socket path \(socketPath) is \(socketPath.utf8.count) bytes long: a Unix socket address "
                + "holds \(UnixSocket.maximumAddressLength), and reaching it through its folder (/proc/self/fd) did "
                + "not work either (is /proc mounted? is the socket's own name under 90 bytes?). Set "
                + "FILECOORDD_SOCKET or XDG_RUNTIME_DIR to a shorter path. No daemon was started."
        )
    }

    /// A socket that is not this user's daemon's: the call fails with the reason, and is neither tried again nor
    /// coordinated in process, and no daemon is started for it.
    private static func untrusted(_ refusal: DaemonTrust.Refusal) -> ConnectFailure {
        .unreachable(FileCoordinationError(.untrustedDaemon, refusal.description))
    }

    /// Starts the daemon detached from this process (FCSystem's `DetachedProcess`: not its child, none of its
    /// descriptors, a session of its own, default signal state), with its output in a log file beside the socket.
    private static func spawn(_ executable: String, socketPath: String) -> FileCoordinationError? {
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        do {
            _ = try DetachedProcess.spawn(
                executable: executable,
                arguments: [executable, "--socket", socketPath],
                environment: environment,
                logPath: socketPath + ".log"
            )
            return nil
        } catch {
            return FileCoordinationError(.arbiterUnreachable, "Could not start \(executable): \(error).")
        }
    }
}
