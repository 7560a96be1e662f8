import Foundation

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// Starts `filecoordd` when no daemon answers (DESIGN.md decision 4): one starter at a time, guarded by a lock file
/// in the socket's folder, then a bounded wait for the socket to accept.
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

    /// Connects to the daemon at `socketPath`, starting it first if nothing answers.
    ///
    /// - Returns: The connected socket, or `nil` (with the reason) when no daemon could be reached or started.
    static func connectOrStart(socketPath: String) -> Result<UnixSocket, FileCoordinationError> {
        if let socket = try? UnixSocket.connect(to: socketPath) { return .success(socket) }
        guard let executable = executable() else {
            return .failure(
                FileCoordinationError(
                    .arbiterUnreachable,
                    "No filecoordd answers at \(socketPath) and none was found to start (set FILECOORDD_PATH, or put "
                        + "filecoordd next to the program or on PATH)."
                )
            )
        }
        let directory = (socketPath as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(
            atPath: directory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        // One starter at a time: the others wait here, then find the daemon the first one started.
        let lockPath = socketPath + ".start-lock"
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if lock >= 0 { flock(lock, LOCK_EX) }
        defer { if lock >= 0 { close(lock) } }
        if let socket = try? UnixSocket.connect(to: socketPath) { return .success(socket) }
        if let failure = spawn(executable, socketPath: socketPath) { return .failure(failure) }
        // Bounded backoff: 10 ms doubling to 400 ms, about 5 s in all.
        var delay: UInt32 = 10_000
        var waited: UInt32 = 0
        while waited < 5_000_000 {
            usleep(delay)
            waited += delay
            if let socket = try? UnixSocket.connect(to: socketPath) { return .success(socket) }
            delay = min(delay * 2, 400_000)
        }
        return .failure(
            FileCoordinationError(
                .arbiterUnreachable,
                "Started \(executable) but it did not accept connections at \(socketPath) within 5 s; see "
                    + "\(socketPath).log."
            )
        )
    }

    /// Starts the daemon in a session of its own, with its output in a log file beside the socket.
    private static func spawn(_ executable: String, socketPath: String) -> FileCoordinationError? {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // POSIX_SPAWN_SETSID (glibc 2.26+, 0x80) is not imported into Swift: the daemon gets a session of its own so that
        // the starter's terminal and process group signals do not reach it.
        posix_spawnattr_setflags(&attributes, Int16(0x80))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, socketPath + ".log", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let arguments = [executable, "--socket", socketPath]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
        guard result == 0 else {
            return FileCoordinationError(
                .arbiterUnreachable,
                "Could not start \(executable): \(String(cString: strerror(result)))."
            )
        }
        // The daemon is this process's child until this process exits: reap it if it ends first (no zombie).
        let child = pid
        let reaper = Thread { _ = waitpid(child, nil, 0) }
        reaper.name = "FileCoordination.reaper"
        reaper.start()
        return nil
    }
}
