public import FCCore
import FCFileSystemPolicy
import FCProtocol
import FCSystem
import Foundation
public import Logging

/// The daemon's settings, with defaults embedded: nothing needs configuring.
public struct DaemonConfiguration: Sendable {
    /// The Unix socket clients connect to.
    public var socketPath: String
    /// How long a presenter may take to answer before it counts as having said yes (`nil`: forever).
    public var presenterTimeout: Duration?
    /// How long a wait lasts before the deadlock detector looks at it (used by the detector, issue #5).
    public var deadlockDetectionDelay: Duration
    /// Most live claims one connection may hold.
    public var maximumClaimsPerClient: Int
    /// Most presenters one connection may register.
    public var maximumPresentersPerClient: Int
    /// Largest frame accepted, in bytes.
    public var maximumFrameSize: Int
    /// Most connections served at once, handshakes included; one more is refused with a reason (issue 11.4).
    public var maximumConnections: Int
    /// How long a new connection may take to send `Hello` before it is closed.
    public var handshakeTimeout: Duration
    /// How long a frame may stay incomplete (part of it received, the rest not) before the connection is closed.
    public var partialFrameTimeout: Duration
    /// Most bytes waiting to be sent to one connection: a client that does not read past this is disconnected, so
    /// that its presenters count as gone and nobody waits for them, and the daemon's memory stays bounded (11.3).
    public var maximumQueuedBytes: Int
    /// After a crash of the previous daemon (its socket file was left behind), how long only claims still held by
    /// their clients are taken, before any new claim: the time for those clients to reconnect and declare them.
    public var recoveryGrace: Duration
    /// `true` to watch presented items with inotify, so that presenters hear of changes made without coordination
    /// (issue 13).
    public var watchesFileSystem = true
    /// Most inotify watches the daemon uses (`nil`: as many as the kernel's `fs.inotify.max_user_watches` allows).
    /// Directories past it are not watched and their presenters' clients are told.
    public var maximumWatches: Int?
    /// How long notifications of changes made without coordination are coalesced (``ArbiterConfiguration``).
    public var coalescingWindow: Duration = .milliseconds(50)
    /// `true` to grant leases to clients that answer recalls (issue 23; docs/SEMANTICS.md §13); `filecoordd
    /// --no-leases` sets it to `false`.
    public var grantsLeases = true
    /// When leases are granted and recalled (``LeasePolicy``), with ``grantsLeases``.
    public var leasePolicy = LeasePolicy()
    /// The version store's directory (issue 15): `FILECOORD_VERSIONS_DIR`, else `$XDG_DATA_HOME/filecoordd/versions`.
    public var versionStoreDirectory: String = DaemonConfiguration.defaultVersionStoreDirectory()
    /// How long versions of a deleted item are kept before they are purged (issue 15).
    public var versionRetention: Duration = .seconds(30 * 24 * 3600)
    /// `true` to map document-portal paths to the host files they export (issue 26, ``DocumentPortalMapping``),
    /// asking the document portal on the session bus of the daemon's environment.
    public var mapsDocumentPortalPaths = true
    /// Makes the cluster adapter of a daemon that shares folders with other hosts (issue 40; FCCluster's
    /// `ClusterHost`), given the arbiter's gates; `nil` (the default): none, and nothing of etcd is contacted.
    public var clusterAdapter: (@Sendable (ClusterGates, Logger) -> any ClusterAdapter)?
    /// The document portal the daemon asks (tests); `nil`: the session bus's.
    var documentPortal: DocumentPortalMapping.Portal?
    /// Where the document portal is asked (tests); `nil`: ``DocumentPortalMapping/lookupQueue``.
    var portalLookups: (@Sendable (@escaping @Sendable () -> Void) -> Void)?
    /// How long clients' events wait for the types of new `fuseblk` mounts (``MountTypeGate``): past it, a mount
    /// whose device did not answer is not folded while it stays mounted.
    var mountTypeTimeout: Duration = .seconds(2)
    /// The mount table, whether it changed, where a `fuseblk` type is read and how (tests); `nil`: this process's
    /// table and ``FCSystem/MountTableWatch``, a global queue, ``ClientNameFolding/readType(of:)``.
    var mountTable: (@Sendable () -> MountTable?)?
    var mountTableChanged: (@Sendable () -> Bool)?
    var mountTypeReads: (@Sendable (@escaping @Sendable () -> Void) -> Void)?
    var mountTypeReader: (@Sendable (ClientNameFolding.FUSEMount) -> String?)?
    /// `true` (the handshake's fuzz target only, ``HandshakeProbe``): the work the daemon does off its event loop
    /// (a dump's encoding, a version store request) runs on the loop's thread at once instead, because an
    /// `EmbeddedEventLoop` may be used from one thread only.
    var runsOffLoopWorkInline = false

    /// The default settings, with the socket at ``defaultSocketPath(environment:uid:)``.
    public init(
        socketPath: String = DaemonConfiguration.defaultSocketPath(),
        presenterTimeout: Duration? = .seconds(30),
        deadlockDetectionDelay: Duration = .seconds(1),
        maximumClaimsPerClient: Int = 10_000,
        maximumPresentersPerClient: Int = 100_000,
        maximumFrameSize: Int = 1 << 20,
        maximumConnections: Int = 4_096,
        handshakeTimeout: Duration = .seconds(5),
        partialFrameTimeout: Duration = .seconds(10),
        maximumQueuedBytes: Int = 4 << 20,
        recoveryGrace: Duration = .seconds(2)
    ) {
        self.socketPath = socketPath
        self.presenterTimeout = presenterTimeout
        self.deadlockDetectionDelay = deadlockDetectionDelay
        self.maximumClaimsPerClient = maximumClaimsPerClient
        self.maximumPresentersPerClient = maximumPresentersPerClient
        self.maximumFrameSize = maximumFrameSize
        self.maximumConnections = maximumConnections
        self.handshakeTimeout = handshakeTimeout
        self.partialFrameTimeout = partialFrameTimeout
        self.maximumQueuedBytes = maximumQueuedBytes
        self.recoveryGrace = recoveryGrace
    }

    /// The per-user socket (``DaemonAddress/socketPath(environment:uid:)``): `$XDG_RUNTIME_DIR/filecoordd/socket`,
    /// or `/tmp/filecoordd-$UID/socket`; `FILECOORDD_SOCKET` overrides both.
    public static func defaultSocketPath() -> String {
        DaemonAddress.socketPath(environment: ProcessInfo.processInfo.environment, uid: ProcessIdentity.userID)
    }

    /// The arbiter's settings.
    public var arbiterConfiguration: ArbiterConfiguration {
        var configuration = ArbiterConfiguration(
            presenterTimeout: presenterTimeout,
            deadlockDetectionDelay: deadlockDetectionDelay
        )
        configuration.watchesFileSystem = watchesFileSystem
        // The inotify watcher says how far it has read in every report (``WatcherReport/drainedAt``).
        configuration.watcherSaysHowFarItRead = watchesFileSystem
        configuration.coalescingWindow = coalescingWindow
        configuration.echoRetention = max(configuration.echoRetention, coalescingWindow * 2)
        configuration.leases = grantsLeases ? leasePolicy : nil
        return configuration
    }

    /// The limits a connection is held to, as `HelloReply.limits` announces them (docs/PROTOCOL.md §5).
    var protocolLimits: ProtocolLimits {
        ProtocolLimits(
            maximumFrameSize: maximumFrameSize,
            maximumClaimsPerClient: maximumClaimsPerClient,
            maximumPresentersPerClient: maximumPresentersPerClient
        )
    }
}
