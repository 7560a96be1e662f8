import FCCore
import FCProtocol
import Foundation
import Logging
import NIOCore

/// The mount table looked at for clients that leave case folding to the daemon (``ClientNameFolding``), with the
/// types of new `fuseblk` mounts read off the loop while every client's events wait (``MountTypeGate``).
extension ArbiterHost {
    /// Looks at the mount table before `event` (of any client) is handled, and recalls at once the leases around each
    /// mount point whose rule changed. `false` when new mounts' types must be read first: `event` is held, and so is
    /// every event after it, until they are (``readMountTypes(_:)``), each client's connection not read meanwhile.
    func refreshNameFolding(holding event: ArbiterEvent, from client: ClientID) -> Bool {
        switch nameFolding.refresh() {
        case .changed(let points):
            for point in points { apply(router.recallLeasesAtOnce(around: point)) }
            return true
        case .needsTypes(let mounts):
            mountTypes.hold(event, from: client)
            for channel in connections.allChannels { _ = channel.setOption(ChannelOptions.autoRead, value: false) }
            readMountTypes(mounts)
            return false
        }
    }

    /// At shut down: the claims held for mounts' types fail as every waiting claim does; the other events held go.
    func failClaimsHeldForMountTypes() {
        for (client, event) in mountTypes.release() {
            guard case .claimRequested(let request) = event, !request.isHeld else { continue }
            let reason = ClaimFailedReason.shuttingDown(
                "filecoordd is shutting down; the call failed instead of waiting"
            )
            send(
                Filecoord_V1_Frame(
                    .claimFailed(Filecoord_V1_ClaimFailed(claim: request.id, reason: reason, message: nil))
                ),
                to: client
            )
        }
    }

    /// Reads `mounts`' types off the loop; then takes the table (reading more if mounts came meanwhile), recalls the
    /// leases around the points whose rule changed, and receives the events held, in order.
    private func readMountTypes(_ mounts: [ClientNameFolding.FUSEMount]) {
        mountTypes.read(mounts) { [self] told, unanswered in
            for mount in unanswered {
                logger.warning(
                    "the file system of a fuseblk mount could not be read in time; its names are not folded for the preload library while it stays mounted",
                    metadata: ["mount.point": "\(mount.mountPoint)", "mount.source": "\(mount.source)"]
                )
            }
            switch nameFolding.record(told, unanswered: unanswered) {
            case .needsTypes(let more):
                readMountTypes(more)
            case .changed(let points):
                for point in points { apply(router.recallLeasesAtOnce(around: point)) }
                // A client whose events wait for the document portal too stays unread until the portal answers.
                for (client, channel) in connections.all where !portalClients.isWaiting(client) {
                    _ = channel.setOption(ChannelOptions.autoRead, value: true)
                }
                for (client, event) in mountTypes.release() where connections[client] != nil {
                    receive(event, from: client)
                }
            }
        }
    }
}

extension MountTypeGate {
    /// The daemon's gate: reads on a global queue (inline in the handshake's fuzz target), within the configured time.
    convenience init(loop: any EventLoop, configuration: DaemonConfiguration) {
        let inline: @Sendable (@escaping @Sendable () -> Void) -> Void = { $0() }
        let global: @Sendable (@escaping @Sendable () -> Void) -> Void = { DispatchQueue.global().async(execute: $0) }
        let reads = configuration.mountTypeReads ?? (configuration.runsOffLoopWorkInline ? inline : global)
        self.init(
            loop: loop,
            timeout: TimeAmount(configuration.mountTypeTimeout),
            reads: reads,
            readType: configuration.mountTypeReader ?? ClientNameFolding.readType(of:)
        )
    }
}

extension ClientNameFolding {
    /// The daemon's: the table and watch of ``DaemonConfiguration`` (tests), else this process's.
    convenience init(_ configuration: DaemonConfiguration) {
        self.init(table: configuration.mountTable, changed: configuration.mountTableChanged)
    }
}
