public import FCCore
public import FCDumpModel
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

    /// The gates there are now, for the dump.
    public func snapshots() -> [HostGateSnapshot] {
        loop.preconditionInEventLoop()
        return host.router.arbiter.hostGateSnapshots()
    }
}

@available(*, unavailable)
extension ClusterGates: Sendable {}
