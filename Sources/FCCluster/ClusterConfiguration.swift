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
    /// Where this host takes the letters other hosts' daemons send its presenters (`--cluster-listen`, issue 41):
    /// ``MailListen/automatic`` by default.
    public var mailListen: MailListen = .automatic

    /// Where a host listens for the letters of other hosts' daemons (docs/ARCHITECTURE.md §15.1). Letters go
    /// directly between daemons, over TCP, to the address each host publishes in etcd under its session; a host that
    /// publishes none (`off`, or an older daemon) gets its letters through etcd, as every host did before.
    public enum MailListen: Hashable, Sendable, CustomStringConvertible {
        /// The address this machine uses to reach the first etcd endpoint not reached through loopback (the
        /// interface the other hosts reach etcd through too, as a rule), a port the kernel picks; loopback only when
        /// every endpoint is on this machine. Give an address when the hosts reach each other elsewhere.
        case automatic
        /// This IP address (not a wildcard: it is published for the other hosts) and port (0: the kernel picks).
        case address(String, port: Int)
        /// No listening: letters for this host go through etcd.
        case off

        /// `automatic`, `off`, `ADDRESS` or `ADDRESS:PORT` (an IPv6 address in brackets when it has a port); `nil`
        /// for anything else.
        public init?(parsing text: String) {
            switch text {
            case "automatic": self = .automatic
            case "off": self = .off
            default:
                var host = Substring(text)
                var port = 0
                if text.hasPrefix("[") {
                    guard let close = text.firstIndex(of: "]") else { return nil }
                    host = text[text.index(after: text.startIndex)..<close]
                    let rest = text[text.index(after: close)...]
                    if !rest.isEmpty {
                        guard rest.hasPrefix(":"), let number = Int(rest.dropFirst()) else { return nil }
                        port = number
                    }
                } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
                    guard let number = Int(text[text.index(after: colon)...]) else { return nil }
                    (host, port) = (text[..<colon], number)
                }
                // A wildcard (0.0.0.0, ::) is refused: the address is published for other hosts to connect to.
                guard !host.isEmpty, (0...65_535).contains(port),
                    host.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == ":" }),
                    host.contains(where: { $0 != "0" && $0 != "." && $0 != ":" })
                else { return nil }
                self = .address(String(host), port: port)
            }
        }

        public var description: String {
            switch self {
            case .automatic: "automatic"
            case .off: "off"
            case .address(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            }
        }
    }

    /// A configuration for `hostName` reaching etcd at `endpoints`.
    public init(endpoints: [String], hostName: String, policy: HostLeasePolicy, sharedFolders: [SharedFolder]) {
        self.endpoints = endpoints
        self.hostName = hostName
        self.policy = policy
        self.sharedFolders = sharedFolders
    }
}
