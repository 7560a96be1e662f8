public import FCCore

/// How a daemon joins a cluster of hosts that share folders (issue 40; docs/SEMANTICS.md §14): `filecoordd
/// --cluster-endpoints URL[,URL…] --host-name NAME --cluster-ttl SECONDS --shared-folder PATH…`.
///
/// Without one (``DaemonConfiguration/cluster`` `nil`, the default) nothing of the cluster runs: no etcd client is
/// made and nothing is contacted.
///
/// A value type: `Sendable`, usable from any thread.
public struct ClusterConfiguration: Hashable, Sendable {
    /// One folder shared with the other hosts.
    public struct SharedFolder: Hashable, Sendable {
        /// The folder in this daemon's paths (canonical: no symbolic link, as clients send their paths).
        public var path: ItemPath
        /// The folder's name in the cluster, the same on every host whatever its mount point: `NAME=PATH` on the
        /// command line, the path itself by default.
        public var name: String

        /// A folder shared under `name`.
        public init(path: ItemPath, name: String) {
            self.path = path
            self.name = name
        }
    }

    /// The etcd members' client URLs (`http://127.0.0.1:2379`), tried in turn.
    public var endpoints: [String]
    /// This host's name in the cluster (the machine's host name by default): names its keys, and is shown to the
    /// other hosts.
    public var hostName: String
    /// The settings of host leases: the session's time to live (``HostLeasePolicy/sessionTTL``, 10 s by default),
    /// the fence margin and the minimum hold time.
    public var policy: HostLeasePolicy
    /// The shared folders.
    public var sharedFolders: [SharedFolder]
    /// The prefix of every key this cluster keeps in etcd.
    public var keyPrefix = "/filecoord/v1/"
    /// How often this host examines the items its presenters present in shared folders for changes made without
    /// coordination on another host (`--shared-scan-interval`, issue 41); `nil` (the default): never.
    public var sharedScanInterval: Duration?

    /// A configuration for `hostName` reaching etcd at `endpoints`.
    public init(endpoints: [String], hostName: String, policy: HostLeasePolicy, sharedFolders: [SharedFolder]) {
        self.endpoints = endpoints
        self.hostName = hostName
        self.policy = policy
        self.sharedFolders = sharedFolders
    }
}
