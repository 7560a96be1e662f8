import FCCore
import FCSystem
import Foundation
public import Logging
import NIOCore
import NIOPosix
public import ServiceLifecycle
import SystemPackage

/// The daemon as a service: takes the lock, prepares the private folder, listens on the socket, and on graceful
/// shutdown (SIGTERM, SIGINT) fails waiting calls with a clear error, closes every connection and removes the
/// socket.
///
/// - Important: `run()` is called once, by a `ServiceGroup`. The arbiter lives on one event loop of its own.
public final class DaemonService: Service, Sendable {
    let configuration: DaemonConfiguration
    let logger: Logger
    private let ready: @Sendable () -> Void

    /// Creates the service; `ready` is called once the socket accepts connections.
    public init(configuration: DaemonConfiguration, logger: Logger, ready: @escaping @Sendable () -> Void = {}) {
        self.configuration = configuration
        self.logger = logger
        self.ready = ready
    }

    /// Serves until a graceful shutdown.
    public func run() async throws {
        let socketPath = configuration.socketPath
        try RuntimeDirectory.prepare(forSocket: socketPath)
        let lock = try DaemonLock(forSocket: socketPath)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let host = try await loop.submit {
            NIOLoopBound(
                ArbiterHost(loop: loop, configuration: self.configuration, logger: self.logger),
                eventLoop: loop
            )
        }.get()
        // Above the high mark a connection is not writable: ArbiterHost.send then disconnects that client (11.3).
        let queued = max(configuration.maximumQueuedBytes, 2)
        let bootstrap = ServerBootstrap(group: group)
            .childChannelOption(
                ChannelOptions.writeBufferWaterMark,
                value: ChannelOptions.Types.WriteBufferWaterMark(low: queued / 2, high: queued)
            )
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addConnectionHandlers(host: host.value)
                }
            }
        let watcher = try await startWatcher(host: host, loop: loop)
        // Shared folders' gates close before the first client can ask for anything there (issue 40).
        try await loop.submit {
            guard let make = self.configuration.clusterAdapter else { return }
            let cluster = make(ClusterGates(host: host.value), self.logger)
            host.value.cluster = cluster
            cluster.start()
        }.get()
        let activated = Self.socketFromSystemd()
        // Holding the lock, a socket file left behind is a crashed daemon's: its clients may still hold claims. A
        // predecessor that stopped cleanly while clients held claims or leases says so with a marker: they declare
        // their running claims only once they have read the end of their connections (docs/SEMANTICS.md §7, §13
        // rule 5). The marker goes when this daemon's grace ends, so that one stopped before passes it on.
        let marker = Self.heldMarker(forSocket: socketPath)
        let markerLeft = (try? FileSystemCalls.status(marker, followingLinks: false)) != nil
        let crashed = activated == nil && FileManager.default.fileExists(atPath: socketPath)
        // A marker that names its holders: each is held for until it declares or exits (no grace needed for them).
        var handed: HandedOnHolders?
        if markerLeft {
            do {
                handed = try HandedOnHolders.decode(try FileSystemCalls.contents(of: marker, limit: 64 << 20))
            } catch {
                logger.warning("cannot read the recovery marker; the timed grace applies: \(error)")
            }
        }
        if let handed {
            // The marker stays until every holder has declared or exited: a crash before then hands them on again.
            try await loop.submit { host.value.takeOver(handed, marker: marker) }.get()
        }
        let timedGrace = crashed || (markerLeft && (handed == nil || handed?.inGrace == true))
        if timedGrace, configuration.recoveryGrace > .zero {
            let grace = configuration.recoveryGrace
            let reason =
                crashed
                ? "the previous filecoordd did not stop cleanly"
                : "the previous filecoordd stopped while clients held claims or leases"
            let left = markerLeft && handed == nil ? marker : nil
            try await loop.submit { host.value.startRecovery(for: grace, because: reason, marker: left) }.get()
        } else if markerLeft, handed == nil {
            try? FileSystemCalls.removeFile(marker)  // No grace asked for (--recovery-grace 0).
        }
        let server: any Channel
        if let activated {
            // systemd socket activation (contrib/systemd): the listening socket is inherited as descriptor 3.
            server = try await bootstrap.withBoundSocket(activated).get()
        } else {
            // Holding the lock, any socket file left is a dead daemon's: replace it.
            // A path too long for a socket address is bound through its folder's descriptor (issue 37).
            let addressable = try AddressablePath(socketPath)
            defer { addressable.close() }
            server = try await bootstrap.bind(
                unixDomainSocketPath: addressable.spelling,
                cleanupExistingSocketFile: true
            ).get()
        }
        if activated == nil { makePrivate(socket: socketPath) }
        logger.info(
            "filecoordd listening",
            metadata: ["socket": "\(socketPath)", "pid": "\(ProcessIdentity.processID)", "lock": "\(lock.path)"]
        )
        ready()
        await withGracefulShutdownHandler {
            try? await server.closeFuture.get()
        } onGracefulShutdown: {
            loop.execute {
                host.value.shutDown()
                server.close(promise: nil)
            }
        }
        watcher?.stop()
        // A session is revoked (its keys go at once) only when no client still runs a claim: one that does declares
        // it to the next daemon, and the other hosts must wait the session's time to live out (§14).
        let leaving = try? await loop.submit { host.value.cluster?.stop(revoking: !host.value.holdersAtShutDown) }.get()
        if let leaveCluster = leaving ?? nil {
            await leaveCluster()
        }
        if (try? await loop.submit({ host.value.holdersAtShutDown }).get()) == true {
            do {
                let handedOn = try? await loop.submit { host.value.handedOn }.get()
                try FileSystemCalls.writeFile(marker, (try? handedOn?.encoded()) ?? [], permissions: 0o600)
            } catch {
                logger.warning(
                    "cannot leave the recovery marker: the next filecoordd starts without the recovery grace: \(error)",
                    metadata: ["marker": "\(marker)"]
                )
            }
        } else {
            try? FileSystemCalls.removeFile(marker)  // Nothing to hand on (one taken over has been let go).
        }
        if activated == nil { remove(socket: socketPath) }  // systemd owns an activated socket.
        try? await group.shutdownGracefully()
        logger.info("filecoordd stopped", metadata: ["socket": "\(socketPath)"])
        withExtendedLifetime(lock) {}
    }

    /// The file a daemon that stops while clients hold claims or leases leaves beside its socket, for its
    /// successor's recovery grace.
    static func heldMarker(forSocket socketPath: String) -> String { socketPath + ".held" }

    /// Makes the socket file private (0600). Its folder is private already (0700), so a failure is said, not fatal.
    private func makePrivate(socket path: String) {
        do {
            try FileSystemCalls.setPermissions(path, to: 0o600)
        } catch {
            logger.warning("cannot make the socket private (its folder is): \(error)", metadata: ["socket": "\(path)"])
        }
    }

    /// Removes the socket file at shutdown; one already gone is fine, another failure is said.
    private func remove(socket path: String) {
        do {
            try FileSystemCalls.removeFile(path)
        } catch {
            guard error != .noSuchFileOrDirectory else { return }
            logger.warning("cannot remove the socket: \(error)", metadata: ["socket": "\(path)"])
        }
    }

    /// The listening socket systemd passed (`LISTEN_FDS=1` for this pid: descriptor 3), if any.
    static func socketFromSystemd() -> CInt? {
        let environment = ProcessInfo.processInfo.environment
        guard environment["LISTEN_PID"].flatMap(Int32.init) == ProcessIdentity.processID,
            environment["LISTEN_FDS"] == "1"
        else {
            return nil
        }
        return 3
    }
}
