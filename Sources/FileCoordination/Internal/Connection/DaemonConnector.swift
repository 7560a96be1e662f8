import FCCore
import Foundation
import Logging

/// Why no connection to the daemon could be had: the one connect-failure type, from the socket
/// (``DaemonLauncher``) through the handshake (``DaemonTransport/connect(policy:mayStart:client:delegate:logger:)``)
/// to a call's retries (``DaemonConnector``), where ``ConnectionManager`` decides what it means for the client.
enum ConnectFailure: Error {
    /// Nothing answers and there is no daemon to start: coordinating in process may be right (docs/SEMANTICS.md §9).
    case noDaemon(String)
    /// Worth trying again: refused, reset or closed during the handshake, no answer in time (a daemon that is
    /// starting, stopping, restarting or stopped). ``DaemonConnector`` never returns it: it tries again.
    case transient(String)
    /// The call fails with this error: the daemon refused this protocol version, or did not answer by the connect
    /// deadline.
    case unreachable(FileCoordinationError)

    /// The error a call fails with for this failure.
    var error: FileCoordinationError {
        switch self {
        case .noDaemon(let reason), .transient(let reason): FileCoordinationError(.arbiterUnreachable, reason)
        case .unreachable(let error): error
        }
    }
}

/// One call's way to the daemon: attempts (``DaemonTransport/connect(policy:mayStart:client:delegate:logger:)``)
/// tried again after failures that may pass until the policy's connect deadline. It only reaches a daemon;
/// ``ConnectionManager`` keeps the client's transport over time (which one is in charge, falling back, probing,
/// reconnecting).
///
/// - Important: Thread-safe (it keeps no state); it blocks the calling thread for up to the connect deadline.
enum DaemonConnector {
    /// Connects to the daemon, trying again after failures that may pass, until the policy's deadline. Fails with
    /// ``ConnectFailure/noDaemon(_:)`` or ``ConnectFailure/unreachable(_:)``, never with a transient failure.
    static func connect(
        policy: ConnectionPolicy,
        client: ClientID,
        delegate: any TransportDelegate,
        sawDaemon: DaemonSighting,
        logger: @escaping @Sendable () -> Logger
    ) -> Result<DaemonTransport, ConnectFailure> {
        let clock = ContinuousClock()
        let deadline = clock.now + policy.connectDeadline
        var delay: Duration = .milliseconds(10)
        var attempts = 0
        while true {
            attempts += 1
            let failure: String
            switch DaemonTransport.connect(
                policy: policy,
                mayStart: true,
                client: client,
                delegate: delegate,
                logger: logger
            ) {
            case .success(let transport):
                sawDaemon.record()
                if attempts > 1 {
                    logger().info(
                        "connected to filecoordd after \(attempts) attempts",
                        metadata: ["daemon.pid": "\(transport.daemonPID)"]
                    )
                }
                return .success(transport)
            case .failure(.noDaemon(let reason)):
                // Once this process has seen a daemon (it answered, or accepted and then reset, closed or did not
                // answer), a missing socket means it is restarting, not that there is none: coordinating alone
                // then could grant what another process holds through it.
                guard sawDaemon.hasSeen else { return .failure(.noDaemon(reason)) }
                failure = reason
            case .failure(.unreachable(let error)):
                return .failure(.unreachable(error))
            case .failure(.transient(let reason)):
                failure = reason
                sawDaemon.record()
            }
            if clock.now + delay > deadline {
                return .failure(
                    .unreachable(
                        FileCoordinationError(
                            .arbiterUnreachable,
                            "filecoordd could not be reached in \(policy.connectDeadline) (\(attempts) attempts; last: "
                                + "\(failure)). The call was not coordinated and its accessor did not run; try again, "
                                + "or check the daemon (is it stopped?) and its log, \(policy.socketPath).log."
                        )
                    )
                )
            }
            logger().debug(
                "filecoordd not reached; trying again",
                metadata: ["attempt": "\(attempts)", "reason": "\(failure)"]
            )
            Thread.sleep(forTimeInterval: delay.timeInterval)
            delay = min(delay * 2, .milliseconds(500))
        }
    }
}
