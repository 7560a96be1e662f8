import FCCore
import FCProtocol
import Foundation
import Logging
import NIOCore

/// Leases for clients that keep lease counters instead of answering recalls (the C preload library; issue 42;
/// docs/PROTOCOL.md section 10.1, ``LeaseCounterBoard``). To the arbiter such a client is one that answers recalls:
/// the host answers for it, from its counters, and the arbiter's rules are the same.
///
/// - Important: Every method must be called on ``loop``.
extension ArbiterHost {
    /// What goes to a counting client for `effect`, or `nil` when the host handled it: a grant carries the lease's
    /// counter; a recall is made in the counter, not sent (the client reads it there). A lease the host takes back
    /// itself (no counter to be had, a recall with nothing running) is returned to the arbiter after this pass.
    func leaseCounterEffect(_ effect: ArbiterEffect, for client: ClientID) -> Filecoord_V1_Frame? {
        switch effect {
        case .grantLease(let lease, _, _):
            guard var frame = Filecoord_V1_Frame(effect), case .leaseGranted(var granted)? = frame.payload else {
                return nil
            }
            guard let placement = leaseCounters.place(lease, of: client) else {
                logger.info(
                    "no lease counter for a client that keeps them; its lease is taken back",
                    metadata: ["client.id": "\(client.rawValue)", "lease.id": "\(lease.rawValue)"]
                )
                returnLeaseSoon(lease, of: client)
                return nil
            }
            granted.countersFile = Data(placement.file.utf8)
            granted.counterSlot = UInt32(placement.slot)
            granted.counterGeneration = placement.generation
            frame.payload = .leaseGranted(granted)
            return frame
        case .recallLease(let lease, _):
            if leaseCounters.recall(lease, of: client) {
                returnLeaseSoon(lease, of: client)
            } else {
                scheduleLeaseHoldCheck(after: leaseCounters.maximumHold(of: client))
            }
            return nil
        default:
            return Filecoord_V1_Frame(effect)
        }
    }

    /// Before the arbiter takes `event`: a lease a counting client gives back unused (docs/PROTOCOL.md section 10.1)
    /// frees its counter.
    func leaseCounterEvent(_ event: ArbiterEvent, from client: ClientID) {
        if case .leaseReturned(let lease, _, _) = event, leaseCounters.counts(client) {
            leaseCounters.forget(lease, of: client)
        }
    }

    /// How long the leases of `client`, whose connection closed, are kept (``ArbiterEvent/clientClosed(_:keepingLeasesFor:)``):
    /// a counting client's while a claim may still run in them (its process runs on), for its longest hold; any
    /// other's until its process declares or exits when the daemon closed the connection itself (`closedHere`).
    func leasesKept(for client: ClientID, closedHere: Bool) -> Duration? {
        switch leaseCounters.closed(client) {
        case .notCounting: closedHere && keepLeasesOfClosed(client) ? Self.keptUntilDeclared : nil
        case .release: nil
        case .keep(let hold): hold
        }
    }

    /// The client's `LeaseCounterIdle`: its count in a recalled lease reached 0.
    func leaseCounterIdle(_ slot: UInt32, from client: ClientID) {
        loop.preconditionInEventLoop()
        guard let lease = leaseCounters.idle(slot, of: client) else { return }
        receive(.leaseReturned(lease, client: client, running: []), from: client)
    }

    /// Returns `lease` for `client` with nothing running, after the current pass (the arbiter is not re-entered).
    private func returnLeaseSoon(_ lease: LeaseID, of client: ClientID) {
        loop.assumeIsolated().execute { [weak self] in
            guard let self, self.connections[client] != nil else { return }
            self.receive(.leaseReturned(lease, client: client, running: []), from: client)
        }
    }

    /// Returns, for their clients, the recalled leases whose longest hold has passed with claims still counted.
    private func scheduleLeaseHoldCheck(after hold: Duration) {
        let delay = TimeAmount.nanoseconds(hold.nanoseconds) + .milliseconds(1)
        loop.assumeIsolated().scheduleTask(in: delay) { [weak self] in
            guard let self else { return }
            for (lease, client) in self.leaseCounters.holdsEnded() where self.connections[client] != nil {
                self.logger.notice(
                    "a recalled lease of a client that keeps counters was still in use past its longest hold; taken back (its claims go on without holding others back)",
                    metadata: ["client.id": "\(client.rawValue)", "lease.id": "\(lease.rawValue)"]
                )
                self.receive(.leaseReturned(lease, client: client, running: []), from: client)
            }
        }
    }
}
