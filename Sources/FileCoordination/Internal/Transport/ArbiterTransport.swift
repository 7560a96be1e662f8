import FCCore
import FCProtocol
import Foundation

/// Where a client's claims and presenters are arbitrated: the daemon's connection (``DaemonTransport``) or the
/// in-process arbiter (``LocalArbiterTransport``). A transport takes the client's claims (each with its waiter) and
/// ``ClientMessage``s to an arbiter, and hands what comes back for the client to its ``TransportDelegate`` as
/// ``InboundMessage``s, in the order the arbiter emitted them.
///
/// - Important: Both methods may be called from any thread, including from inside ``TransportDelegate/receive(_:)``.
protocol ArbiterTransport: AnyObject, Sendable {
    /// Sends a claim whose outcome `waiter` waits for; returns how a blocked caller waits for it (a transport may let
    /// it read its own reply). A caller handed the reader role must wait through the returned ``ClaimWait``.
    @discardableResult
    func submitClaim(_ request: ClaimRequest, waiter: ClaimWaiter) -> ClaimWait
    /// Sends a message that is not a claim.
    func send(_ message: ClientMessage)
}

/// Who a transport reports to: the client (``CoordinationClient``).
///
/// - Important: `receive(_:)` is called on the transport's reading thread (a blocked caller's, the listener's, or
///   the in-process arbiter's delivery queue), one message at a time, in the arbiter's order; it must not block.
protocol TransportDelegate: AnyObject, Sendable {
    /// Grants, failures (already the caller's error) and presenter messages, in order.
    func receive(_ message: InboundMessage)
    /// The error object this client's presenter `presenter` failed with, taken (once) so that a failed claim's
    /// caller gets that very object (docs/SEMANTICS.md §3).
    func takePresenterError(of presenter: PresenterID) -> (any Error)?
    /// The connection `transport` is gone: its version store calls fail; if it was the one in use, every waiting
    /// call must fail, and the next call reconnects.
    func transportLost(_ error: FileCoordinationError, from transport: DaemonTransport)
    /// The daemon of `transport` left a keepalive unanswered for its timeout (issue 28): every call waiting on it
    /// fails with `error` (claims abandoned through ``DaemonTransport/abandon(_:)``); the connection stays.
    func daemonStoppedAnswering(_ error: FileCoordinationError, on transport: DaemonTransport)
    /// How often the listener of `transport` sweeps for idle leases (issue 23): `nil` while its daemon granted none
    /// that this client holds. Asked on every loop of the listener: one atomic load while no lease is held, the leases'
    /// lock otherwise.
    func leaseSweepInterval(of transport: DaemonTransport) -> Duration?
    /// On the listener of `transport`, every ``leaseSweepInterval(of:)``: the leases of its daemon unused since the
    /// last sweep are forgotten and returned through it.
    func returnIdleLeases(through transport: DaemonTransport)
}

extension Duration {
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
