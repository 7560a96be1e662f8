/// The cluster settings file (issue 40): what makes every `filecoordd` of a user join the cluster, however it was
/// started. Clients start the daemon on demand with their own environment, so options given only to a systemd unit
/// would be missing from a daemon an app started after a crash, and that daemon would decide claims in a shared
/// folder alone: the file is read at every start instead.
///
/// Where: `FILECOORDD_CLUSTER_CONFIG`, else `$XDG_CONFIG_HOME/filecoordd/cluster.conf`, else
/// `~/.config/filecoordd/cluster.conf`. No file: no cluster (unless the options or the environment ask for one).
///
/// The format: one `key = value` a line, `#` starts a comment, blank lines are skipped. Keys: `cluster-endpoints`
/// (URLs, comma-separated), `host-name`, `cluster-ttl` (seconds), `shared-folder` (`[NAME=]PATH`, repeatable),
/// `shared-scan-interval` (seconds), `cluster-listen` (`--cluster-listen`). An
/// option on the command line overrides the file's `cluster-endpoints`, `host-name` and `cluster-ttl`, and adds to its
/// shared folders.
///
/// A value type: `Sendable`, usable from any thread.
public struct ClusterSettingsFile: Hashable, Sendable {
    /// A line the file cannot hold, with its number.
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// The file.
        public var path: String
        /// The line's number, from 1.
        public var line: Int
        /// What is wrong with it.
        public var reason: String

        public var description: String { "\(path):\(line): \(reason)" }
    }

    /// The keys the file may hold.
    public static let keys: Set<String> = [
        "cluster-endpoints", "host-name", "cluster-ttl", "shared-folder", "shared-scan-interval", "cluster-listen",
    ]
    /// The most a file may hold (a settings file, not data): larger ones are refused.
    public static let maximumBytes = 64 * 1024

    public var endpoints: String?
    public var hostName: String?
    public var ttl: Int?
    /// `shared-scan-interval`, in seconds.
    public var sharedScanInterval: Double?
    public var sharedFolders: [String] = []
    /// `cluster-listen`, as written (``ClusterConfiguration/MailListen/init(parsing:)`` reads it).
    public var listen: String?

    /// Reads `text`, the contents of the file at `path` (named in failures).
    public init(parsing text: String, path: String) throws(Failure) {
        guard text.utf8.count <= Self.maximumBytes else {
            throw Failure(path: path, line: 0, reason: "larger than \(Self.maximumBytes) bytes")
        }
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let trimmed = line.trimmingSpaces
            guard !trimmed.isEmpty else { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw Failure(path: path, line: index + 1, reason: "expected `key = value`")
            }
            let key = String(trimmed[..<equals]).trimmingSpaces
            let value = String(trimmed[trimmed.index(after: equals)...]).trimmingSpaces
            guard Self.keys.contains(key) else {
                throw Failure(
                    path: path,
                    line: index + 1,
                    reason: "unknown key `\(key)` (known: \(Self.keys.sorted().joined(separator: ", ")))"
                )
            }
            guard !value.isEmpty else { throw Failure(path: path, line: index + 1, reason: "`\(key)` has no value") }
            switch key {
            case "cluster-endpoints": endpoints = value
            case "host-name": hostName = value
            case "cluster-listen":
                guard ClusterConfiguration.MailListen(parsing: value) != nil else {
                    throw Failure(
                        path: path,
                        line: index + 1,
                        reason:
                            "`cluster-listen` takes an IP address other hosts reach (not a wildcard), ADDRESS:PORT, automatic or off"
                    )
                }
                listen = value
            case "cluster-ttl":
                guard let seconds = Int(value) else {
                    throw Failure(path: path, line: index + 1, reason: "`cluster-ttl` takes whole seconds")
                }
                ttl = seconds
            case "shared-scan-interval":
                guard let seconds = Double(value), seconds.isFinite, seconds > 0 else {
                    throw Failure(
                        path: path,
                        line: index + 1,
                        reason: "`shared-scan-interval` takes a number of seconds above 0"
                    )
                }
                sharedScanInterval = seconds
            default: sharedFolders.append(value)
            }
        }
    }

    /// The file's path for `environment` (``ClusterSettingsFile``).
    public static func path(environment: [String: String]) -> String? {
        if let explicit = environment["FILECOORDD_CLUSTER_CONFIG"], !explicit.isEmpty { return explicit }
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return config + "/filecoordd/cluster.conf"
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.config/filecoordd/cluster.conf"
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" || first == "\r" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text.removeLast() }
        return String(text)
    }
}
