public import FCCore
public import FCDumpModel
import Logging
public import NIOCore

/// What the daemon asks of its cluster adapter (issue 40; FCCluster's `ClusterHost`, docs/ARCHITECTURE.md §15).
/// FCDaemon knows the adapter only by this protocol, so that the daemon's library (and whatever links it: the
/// benchmarks, the fuzzers) carries no HTTP client; `filecoordd` links FCCluster and makes one
/// (``DaemonConfiguration/clusterAdapter``).
///
/// - Important: Every method is called on the arbiter's loop (``ClusterGates/loop``).
public protocol ClusterAdapter: AnyObject {
    /// Closes every shared folder's gate and joins the cluster. Called once, before the socket is bound.
    func start()
    /// A claim waits at the closed gate of `folder` (``ArbiterEffect/hostGateWanted(_:)``).
    func claimWaits(in folder: ItemPath)
    /// After a drain, nothing inside `folder` is granted any more (``ArbiterEffect/hostGateDrained(_:)``).
    func drained(_ folder: ItemPath)
    /// Fences this host now if its session's fence has passed: called before anything that could grant. O(1)
    /// unless it fences.
    func checkFence()
    /// Stops, and returns what is left to do off the loop (`revoking`: give the session up at once, when no
    /// client still runs a claim).
    func stop(revoking: Bool) -> @Sendable () async -> Void
    /// What fcdump shows of the cluster.
    func dump() -> DaemonDump.Cluster
    /// Presenters of this daemon's clients came, went or moved (issue 41): those in shared folders are published to
    /// the other hosts. Never called with the presenters of another host (``ClusterGates/connectRemoteHost(_:)``).
    func presentersChanged(_ changes: [SessionRouter.PresenterChange])
    /// The arbiter's effects for another host's presenters (``ClusterGates/connectRemoteHost(_:)``), in the order it
    /// emitted them: sent on to that host.
    func deliver(_ effects: [ArbiterEffect], toRemote client: ClientID)
    /// A presenter of this daemon answered a message another host asked it to relay (``ClusterGates/relay(_:)``);
    /// `nil`: it went away without answering.
    func relayReplied(_ request: RequestID, _ reply: PresenterReply?)
}

/// The arbiter's host gates, as a cluster adapter drives them (``ClusterAdapter``).
///
/// - Important: Every method must be called on ``loop``.
public final class ClusterGates {
    /// The arbiter's loop.
    public let loop: any EventLoop
    private unowned let host: ArbiterHost

    init(host: ArbiterHost) {
        self.loop = host.loop
        self.host = host
    }

    /// Hands `command` for `folder` to the arbiter (``ArbiterEvent/hostGate(_:_:)``) and carries out its effects.
    public func command(_ folder: ItemPath, _ command: HostGateCommand) {
        loop.preconditionInEventLoop()
        host.apply(host.router.hostGate(folder, command))
    }

    /// Stands in for another host's presenters (issue 41): a client of the arbiter that no connection serves, whose
    /// effects go to the adapter (``ClusterAdapter/deliver(_:toRemote:)``). Returns its id.
    public func connectRemoteHost(_ name: String) -> ClientID {
        loop.preconditionInEventLoop()
        let client = host.router.connect(pid: 0, name: name)
        host.remoteClients.insert(client)
        return client
    }

    /// The other host's presenters are all gone: its stand-in client leaves, as a disconnected client does.
    public func disconnectRemoteHost(_ client: ClientID) {
        loop.preconditionInEventLoop()
        guard host.remoteClients.remove(client) != nil else { return }
        host.apply(host.router.disconnect(client))
    }

    /// An event of another host's stand-in client, in its own ids (a presenter added, moved or removed, a reply).
    /// `false`, with the reason logged, when the router refuses it (a limit).
    @discardableResult
    public func remote(_ event: ArbiterEvent, from client: ClientID) -> Bool {
        loop.preconditionInEventLoop()
        guard host.remoteClients.contains(client) else { return false }
        host.cluster?.checkFence()
        do {
            host.apply(try host.router.handle(event, from: client))
            return true
        } catch {
            host.logger.warning("cluster: another host's presenter refused: \(error)")
            return false
        }
    }

    /// Delivers a message another host sends to one of this daemon's presenters (``SessionRouter/relay(_:)``).
    /// Returns whether the presenter is here, and the relay request id of a message that needs a reply.
    public func relay(_ message: PresenterMessage) -> (delivered: Bool, request: RequestID?) {
        loop.preconditionInEventLoop()
        // Only a presenter of a client of this host: never another host's stand-in (no mail is forwarded on).
        guard let owner = host.router.presenterOwner[message.presenter]?.0, !host.remoteClients.contains(owner),
            let (routed, request) = host.router.relay(message)
        else { return (false, nil) }
        host.apply(routed)
        return (true, request)
    }

    /// Changes the cluster adapter found itself (issue 41: the scan of presented items in shared folders), handed to
    /// the arbiter as the watcher's are, with the items' states when read.
    public func fileSystemChanged(_ events: [FileSystemEvent], observed: [ItemPath: ItemStamp]) {
        loop.preconditionInEventLoop()
        host.cluster?.checkFence()
        host.apply(host.router.fileSystemChanged(events, observed: observed))
    }

    /// The gates there are now, for the dump.
    public func snapshots() -> [HostGateSnapshot] {
        loop.preconditionInEventLoop()
        return host.router.arbiter.hostGateSnapshots()
    }
}

@available(*, unavailable)
extension ClusterGates: Sendable {}
