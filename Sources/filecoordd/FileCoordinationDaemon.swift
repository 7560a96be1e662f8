import ArgumentParser
import FCCluster
import FCCore
import FCDaemon
import FCSystem
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// `filecoordd`: the per-user file coordination daemon.
@main
struct FileCoordinationDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "filecoordd",
        abstract: "The per-user file coordination daemon: arbitrates coordinated reads and writes between processes "
            + "and messages their file presenters.",
        discussion: "Clients start it on demand. Every setting has a default; the socket is "
            + "$XDG_RUNTIME_DIR/filecoordd/socket, or /tmp/filecoordd-$UID/socket. Paths under the document portal's "
            + "mount are mapped to the host files they export, asking the portal on the session bus of the daemon's "
            + "environment (DBUS_SESSION_BUS_ADDRESS)."
    )

    @Option(help: "The Unix socket to serve (default: per-user, see above; FILECOORDD_SOCKET also sets it).")
    var socket: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Option(help: "Seconds a presenter may take to answer before it counts as having said yes, or 'infinity'.")
    var presenterTimeout: String = "30"

    @Option(help: "Seconds a wait lasts before the deadlock detector looks at it.")
    var deadlockDelay: Double = 1

    @Option(help: "Most connections served at once (handshakes included); one more is refused with a reason.")
    var maxConnections: Int = 4_096

    @Option(help: "Seconds a new connection may take to say Hello before it is closed.")
    var handshakeTimeout: Double = 5

    @Option(help: "Seconds a frame may stay incomplete before its connection is closed.")
    var partialFrameTimeout: Double = 10

    @Option(
        help: """
            Bytes of messages that may wait for a client for 2 s (8 times as many at any moment) before it counts as \
            one that does not read and is disconnected.
            """
    )
    var maxQueuedBytes: Int = 4 << 20

    @Option(
        help: """
            Seconds during which, after a predecessor that crashed, only the claims clients still hold are taken \
            (they reconnect and declare them); 0 turns the grace off. After a clean stop no grace is needed: what \
            each holder held is held for it until it declares it or exits.
            """
    )
    var recoveryGrace: Double = 2

    @Option(
        help:
            "The version store's directory (default: FILECOORD_VERSIONS_DIR, else $XDG_DATA_HOME/filecoordd/versions)."
    )
    var versionsDirectory: String?

    @Option(help: "Days the versions of a deleted item are kept before they are purged.")
    var versionRetentionDays: Double = 30

    @Flag(help: ArgumentHelp(foregroundHelp))
    var foreground = false

    @Option(help: ArgumentHelp(maxWatchesHelp))
    var maxWatches: Int?

    @Option(help: "Seconds during which repeated changes made without coordination are coalesced (fractions allowed).")
    var coalescingWindow: Double = 0.05

    @Flag(help: "Do not watch presented items with inotify (changes made without coordination go unseen).")
    var noWatching = false

    @Flag(help: "Grant no leases: every claim of every process is decided by the daemon (docs/SEMANTICS.md §13).")
    var noLeases = false

    @Option(
        help: ArgumentHelp(
            "Join a cluster of hosts that share folders, through these etcd members' client URLs "
                + "(comma-separated; FILECOORDD_CLUSTER_ENDPOINTS or the settings file's cluster-endpoints also set "
                + "them: FILECOORDD_CLUSTER_CONFIG, else ~/.config/filecoordd/cluster.conf). Without any, nothing of "
                + "etcd is contacted.",
            valueName: "url[,url...]"
        )
    )
    var clusterEndpoints: String?

    @Option(help: "This host's name in the cluster (default: the machine's host name).")
    var hostName: String?

    @Option(help: "Seconds the cluster keeps this host's session without a renewal (2 to 3600; default 10).")
    var clusterTTL: Int?

    @Option(
        help: ArgumentHelp(
            "Every SECONDS, examine the items this host's presenters present in shared folders, and report changes "
                + "made without coordination (by another host) as the file watcher does (default: never).",
            valueName: "seconds"
        )
    )
    var sharedScanInterval: Double?

    @Option(
        name: .customLong("cluster-listen"),
        help: ArgumentHelp(
            "Where the other hosts' daemons send this host's presenters their letters, directly over TCP: ADDRESS, "
                + "ADDRESS:PORT, automatic (the address that reaches the first etcd endpoint not on this machine, any "
                + "port; the default) "
                + "or off (the letters come through etcd, slower).",
            valueName: "address"
        )
    )
    var clusterListen: String?

    @Option(
        help: ArgumentHelp(
            "A folder shared with the other hosts, as PATH or NAME=PATH (NAME: the folder's name on every host, "
                + "default the path); repeatable. FILECOORDD_SHARED_FOLDERS adds more, separated by colons.",
            valueName: "[name=]path"
        )
    )
    var sharedFolder: [String] = []

    static let maxWatchesHelp =
        "Most inotify watches the daemon may use (default: as many as fs.inotify.max_user_watches allows); "
        + "presenters past it are not watched and their clients are told."

    static let foregroundHelp =
        "Stay in the foreground, logging to standard error (the daemon never forks; clients start it in a session of "
        + "its own with its output in <socket>.log)."

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        if presenterTimeout != "infinity" {
            guard let seconds = Double(presenterTimeout), seconds > 0 else {
                throw ValidationError("--presenter-timeout takes a positive number of seconds or 'infinity'")
            }
        }
        guard deadlockDelay > 0 else { throw ValidationError("--deadlock-delay takes a positive number of seconds") }
        guard maxConnections > 0 else { throw ValidationError("--max-connections takes a positive number") }
        guard maxQueuedBytes >= 1024 else { throw ValidationError("--max-queued-bytes takes at least 1024") }
        guard recoveryGrace.isFinite, recoveryGrace >= 0, recoveryGrace <= 3600 else {
            throw ValidationError("--recovery-grace takes a number of seconds from 0 to 3600")
        }
        if let maxWatches, maxWatches < 0 {
            throw ValidationError("--max-watches takes a number of watches, 0 or more")
        }
        guard coalescingWindow > 0, coalescingWindow <= 60 else {
            throw ValidationError("--coalescing-window takes a positive number of seconds, at most 60")
        }
        if try clusterConfiguration() == nil, !sharedFolder.isEmpty {
            throw ValidationError("--shared-folder needs --cluster-endpoints: the folder is shared through etcd")
        }
        guard handshakeTimeout > 0, partialFrameTimeout > 0 else {
            throw ValidationError("--handshake-timeout and --partial-frame-timeout take a positive number of seconds")
        }
    }

    /// The cluster to join, from the options and the environment; `nil` without endpoints.
    func clusterConfiguration() throws -> ClusterConfiguration? {
        let environment = ProcessInfo.processInfo.environment
        // The settings file first (ClusterSettingsFile): every daemon of the user reads it, however it was started.
        var file: ClusterSettingsFile?
        if let path = ClusterSettingsFile.path(environment: environment),
            let bytes = try? FileSystemCalls.contents(of: path, limit: ClusterSettingsFile.maximumBytes + 1)
        {
            let text = String(decoding: bytes, as: UTF8.self)
            do throws(ClusterSettingsFile.Failure) {
                file = try ClusterSettingsFile(parsing: text, path: path)
            } catch {
                throw ValidationError("cluster settings: \(error)")
            }
        }
        guard let list = clusterEndpoints ?? environment["FILECOORDD_CLUSTER_ENDPOINTS"] ?? file?.endpoints else {
            return nil
        }
        let ttl = clusterTTL ?? file?.ttl ?? 10
        guard (2...3600).contains(ttl) else {
            throw ValidationError("--cluster-ttl takes a number of seconds from 2 to 3600 (given: \(ttl))")
        }
        let endpoints = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        guard !endpoints.isEmpty, endpoints.allSatisfy({ $0.hasPrefix("http://") || $0.hasPrefix("https://") }) else {
            throw ValidationError("--cluster-endpoints takes etcd client URLs (http://HOST:PORT), comma-separated")
        }
        var specs = sharedFolder + (file?.sharedFolders ?? [])
        if let more = environment["FILECOORDD_SHARED_FOLDERS"] {
            specs += more.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        }
        var folders: [ClusterConfiguration.SharedFolder] = []
        for spec in specs {
            var name: String?
            var path = spec
            if !spec.hasPrefix("/"), let equals = spec.firstIndex(of: "=") {
                name = String(spec[..<equals])
                path = String(spec[spec.index(after: equals)...])
            }
            guard path.hasPrefix("/") else {
                throw ValidationError("--shared-folder \(spec): the path must be absolute")
            }
            // Clients send canonical paths (no symbolic link): so is the folder's.
            let canonical = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            guard let item = try? ItemPath(absolute: canonical), !item.isRoot else {
                throw ValidationError("--shared-folder \(spec): not a folder path that can be shared")
            }
            guard
                !folders.contains(where: {
                    $0.path == item || item.isDescendant(of: $0.path) || $0.path.isDescendant(of: item)
                })
            else {
                throw ValidationError("--shared-folder \(spec): shared folders may not lie inside one another")
            }
            folders.append(.init(path: item, name: name ?? canonical))
        }
        let host = hostName ?? file?.hostName ?? ProcessInfo.processInfo.hostName
        guard !host.isEmpty, host.utf8.count <= 255 else {
            throw ValidationError("--host-name takes a name of 1 to 255 bytes")
        }
        var configuration = ClusterConfiguration(
            endpoints: endpoints,
            hostName: host,
            policy: HostLeasePolicy(sessionTTL: .seconds(ttl)),
            sharedFolders: folders
        )
        if let scan = sharedScanInterval ?? file?.sharedScanInterval {
            guard scan.isFinite, scan >= 0.1, scan <= 86_400 else {
                throw ValidationError("--shared-scan-interval takes seconds from 0.1 to 86400 (given: \(scan))")
            }
            configuration.sharedScanInterval = .milliseconds(Int64(scan * 1000))
        }
        if let listen = clusterListen ?? file?.listen {
            guard let parsed = ClusterConfiguration.MailListen(parsing: listen) else {
                throw ValidationError(
                    "--cluster-listen takes an IP address other hosts reach (not a wildcard), ADDRESS:PORT, automatic or off "
                        + "(given: \(listen))"
                )
            }
            configuration.mailListen = parsed
        }
        return configuration
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "filecoordd")
        var configuration = DaemonConfiguration()
        if let socket { configuration.socketPath = socket }
        if let versionsDirectory { configuration.versionStoreDirectory = versionsDirectory }
        configuration.versionRetention = .seconds(max(0, versionRetentionDays) * 86_400)
        configuration.presenterTimeout =
            presenterTimeout == "infinity" ? nil : .milliseconds(Int64((Double(presenterTimeout) ?? 30) * 1000))
        configuration.deadlockDetectionDelay = .milliseconds(Int64(deadlockDelay * 1000))
        configuration.maximumConnections = maxConnections
        configuration.handshakeTimeout = .milliseconds(Int64(handshakeTimeout * 1000))
        configuration.partialFrameTimeout = .milliseconds(Int64(partialFrameTimeout * 1000))
        configuration.maximumQueuedBytes = maxQueuedBytes
        configuration.recoveryGrace = .milliseconds(Int64(recoveryGrace * 1000))
        configuration.maximumWatches = maxWatches
        configuration.coalescingWindow = .microseconds(Int64(coalescingWindow * 1_000_000))
        configuration.watchesFileSystem = !noWatching
        configuration.grantsLeases = !noLeases
        if let cluster = try clusterConfiguration() {
            configuration.clusterAdapter = { gates, logger in
                ClusterHost(configuration: cluster, gates: gates, logger: logger)
            }
        }
        // One descriptor per client: the soft limit (often 1,024) goes up to the hard one (issue 11.4).
        do {
            let limit = try ResourceLimits.raiseOpenFilesToHardLimit()
            logger.info("open descriptors limit", metadata: ["limit": "\(limit)"])
        } catch {
            logger.warning("could not raise the open descriptors limit: \(error)")
        }
        let service = DaemonService(configuration: configuration, logger: logger)
        let group = ServiceGroup(
            services: [service],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        do {
            try await group.run()
        } catch let failure as RuntimeDirectory.Failure {
            logger.error("\(failure.description)")
            throw ExitCode(2)
        }
    }
}
