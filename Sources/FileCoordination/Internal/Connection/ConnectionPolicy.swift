import FCCore
import FCProtocol
import FCSystem
import Foundation
import Synchronization

/// How this process reaches an arbiter, and what it does when it cannot (docs/SEMANTICS.md §7 and §9).
///
/// - With `FILECOORD_ARBITER=in-process` the process coordinates in process, by choice.
/// - Otherwise through `filecoordd`. A failure that may pass (nothing accepts while a daemon starts, a reset or a
///   close during the handshake while one stops or restarts, no answer to the handshake from a stopped one) is
///   tried again, starting the daemon where needed, with a backoff from 10 ms to 500 ms, until the connect deadline
///   (``connectDeadline``); then the call fails with ``FileCoordinationError/Code/arbiterUnreachable``. It never
///   turns into coordinating in process: that would grant what another process holds through the daemon.
/// - Only when nothing answers and there is no `filecoordd` to start does the process coordinate in process, and
///   then loudly (a warning through the client's logger) and not for good: it keeps probing for a
///   daemon and moves its presenters and new claims there once one answers (``CoordinationClient``).
struct ConnectionPolicy: Sendable {
    /// The socket of the daemon.
    var socketPath: String
    /// The process coordinates in process by choice (`FILECOORD_ARBITER=in-process`).
    var inProcessByChoice: Bool
    /// How long one call may spend reaching and greeting a daemon: `FILECOORD_CONNECT_TIMEOUT` seconds, default 10.
    var connectDeadline: Duration
    /// How long one handshake may wait for the daemon's answer.
    var handshakeTimeout: Duration
    /// Whether a daemon may be started when none answers (`FILECOORDD_PATH` or `filecoordd` on the `PATH`). A test
    /// that starts its own daemon sets it to `false`.
    var mayStartDaemon = true
    /// When a call waiting on the connection asks whether the daemon still answers, and how long it waits for the
    /// answer before failing (`FILECOORD_KEEPALIVE_TIMEOUT`; issue 28).
    var keepalive = KeepalivePolicy.standard
    /// Whether the client says at `Hello` that it answers lease recalls, so that the daemon may grant it leases and
    /// its claims inside them are decided in process (issue 23; docs/SEMANTICS.md §13). On unless
    /// `FILECOORD_LEASES` is `0`, `off`, `false` or `no` (any case).
    var answersRecalls = true
    /// How often the client returns, unasked, the leases it has not used since the last time: after one to two of
    /// these periods of idleness (`FILECOORD_LEASE_IDLE_RETURN` seconds, default 2; docs/SEMANTICS.md §13.4).
    var leaseIdleReturn = Duration.seconds(2)

    /// The policy of a client bound to the daemon at `socketPath` alone: it never starts one, and never coordinates
    /// in process (a test's own client; docs/ARCHITECTURE.md §8).
    static func daemon(at socketPath: String, connectDeadline: Duration = .seconds(10)) -> ConnectionPolicy {
        var policy = ConnectionPolicy(
            socketPath: socketPath,
            inProcessByChoice: false,
            connectDeadline: connectDeadline,
            handshakeTimeout: .seconds(2)
        )
        policy.mayStartDaemon = false
        return policy
    }

    /// With ``inProcessByChoice``: the in-process arbiter to use, shared with other clients; `nil` for one of the
    /// client's own. Only tests share one (several clients of one process, each with its own id).
    var sharedInProcessArbiter: LocalArbiterTransport?

    /// The policy of a client that coordinates in process, by choice: with `arbiter` (shared), or one of its own.
    static func inProcess(sharing arbiter: LocalArbiterTransport? = nil) -> ConnectionPolicy {
        var policy = ConnectionPolicy(
            socketPath: "",
            inProcessByChoice: true,
            connectDeadline: .zero,
            handshakeTimeout: .zero
        )
        policy.sharedInProcessArbiter = arbiter
        return policy
    }

    /// The policy the environment asks for.
    static func fromEnvironment(_ environment: [String: String]) -> ConnectionPolicy {
        let requested = environment["FILECOORD_CONNECT_TIMEOUT"].flatMap(Double.init) ?? 10
        let seconds = requested > 0 ? requested : 10
        var policy = ConnectionPolicy(
            socketPath: DaemonAddress.socketPath(environment: environment, uid: ProcessIdentity.userID),
            inProcessByChoice: environment["FILECOORD_ARBITER"] == "in-process",
            connectDeadline: .milliseconds(Int64(seconds * 1000)),
            handshakeTimeout: .milliseconds(Int64(min(seconds, 2) * 1000))
        )
        policy.keepalive = KeepalivePolicy.fromEnvironment(environment)
        // Off as a switch is spelt off in the environment; anything else (unset, `1`, `on`) keeps the default.
        let leases = environment["FILECOORD_LEASES"]?.lowercased()
        policy.answersRecalls = !["0", "off", "false", "no"].contains(leases ?? "")
        // A value out of 0.01...3600 s (or not a number) keeps the default: a shorter period would wake the
        // listener all the time.
        if let seconds = environment["FILECOORD_LEASE_IDLE_RETURN"].flatMap(Double.init), seconds >= 0.01,
            seconds <= 3600
        {
            policy.leaseIdleReturn = .milliseconds(Int64(seconds * 1000))
        }
        return policy
    }
}

/// Whether a client has seen a daemon at its socket: once it has, it never coordinates in process for want of one
/// (a missing socket then means the daemon is restarting).
///
/// - Important: Thread-safe (an atomic flag).
final class DaemonSighting: Sendable {
    private let seen = Atomic<Bool>(false)

    var hasSeen: Bool { seen.load(ordering: .relaxed) }

    func record() { seen.store(true, ordering: .relaxed) }
}
