/// Where clients find the daemon: the per-user socket (docs/ARCHITECTURE.md §9, "Lifecycle"), shared by `filecoordd`
/// and the client library so that the two never disagree.
///
/// Stateless: usable from any thread.
public enum DaemonAddress {
    /// The socket path for an environment and a user: `FILECOORDD_SOCKET` if it is absolute (how tests run a
    /// private daemon), else `$XDG_RUNTIME_DIR/filecoordd/socket` if that is absolute, else
    /// `/tmp/filecoordd-<uid>/socket`.
    public static func socketPath(environment: [String: String], uid: UInt32) -> String {
        if let explicit = environment["FILECOORDD_SOCKET"], explicit.hasPrefix("/") { return explicit }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return runtime + "/filecoordd/socket"
        }
        return "/tmp/filecoordd-\(uid)/socket"
    }
}
