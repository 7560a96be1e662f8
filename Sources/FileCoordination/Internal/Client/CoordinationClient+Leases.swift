import FCCore
import FCProtocol

// The client's side of leases (docs/SEMANTICS.md §13; CoordinationClient.swift has the rest): claims the daemon
// hands back into a lease, the outcomes a lease's arbiter decided, recalls, and the idle return.
//
// - Important: Thread-safe, as CoordinationClient: each call takes the locks of the parts it uses (``LeaseTable``,
//   ``ClaimTable``) and holds none while a waiter is resumed.

extension CoordinationClient {
    /// A claim sent before its lease's grant arrived, handed back by the daemon: decided in the lease, or sent again
    /// if the lease was recalled or returned meanwhile. When this client does not hold the lease the daemon named, the
    /// lease is returned first (again, if its return crossed the claim): a daemon that believed otherwise would hand
    /// the claim back for ever. Nothing of this client runs in a lease it does not hold, so the return declares none.
    func decideInLease(_ claim: ClaimID, lease: LeaseID, on transport: DaemonTransport) {
        guard let request = claims.request(of: claim), let waiter = claims.waiter(of: claim) else { return }
        if let outcomes = leases.submit(request) {
            deliver(outcomes)
            return
        }
        if !leases.holds(LeaseTable.Key(connection: transport.serial, lease: lease)) {
            transport.returnLease(lease, running: [])
        }
        submitReadByListener(request, waiter: waiter)
    }

    /// Sends to the daemon a claim a lease did not decide, whose caller may already wait without reading: the
    /// listener reads its reply.
    func submitReadByListener(_ request: ClaimRequest, waiter: ClaimWaiter) {
        if let transport = connection.current as? DaemonTransport {
            transport.submitClaimReadByListener(request, waiter: waiter)
        } else if case .reading(let reader, let holdingRole) = submitClaim(request, waiter: waiter),
            let transport = reader as? DaemonTransport
        {
            // A daemon took over meanwhile: its listener reads the reply for the caller, which does not read.
            transport.leaveToListener(request.id, releasingRole: holdingRole)
        }
    }

    /// Resumes the waiters of claims a lease decided.
    func deliver(_ outcomes: LeaseTable.Outcomes) {
        for (claim, outcome) in outcomes {
            switch outcome {
            case .granted(let paths): claims.granted(claim)?.resume(.granted(paths))
            case .failed(let error): fail(claim, with: error)
            }
        }
    }

    /// The daemon recalled a lease: nothing more is decided in it; its running claims are declared with its return,
    /// written before anything else of it can reach the daemon, and its waiting claims go to the daemon.
    func recall(_ lease: LeaseID, on transport: DaemonTransport) {
        let waiting = leases.recall(LeaseTable.Key(connection: transport.serial, lease: lease)) { running in
            // Written under the leases' lock: no finish of a running claim can overtake it.
            transport.returnLease(lease, running: running)
        }
        for request in waiting {
            guard let waiter = claims.waiter(of: request.id) else { continue }
            submitReadByListener(request, waiter: waiter)
        }
    }

    func leaseSweepInterval(of transport: DaemonTransport) -> Duration? {
        leases.holdsLeases(on: transport.serial) ? leases.idleReturn : nil
    }

    func returnIdleLeases(through transport: DaemonTransport) {
        for lease in leases.returnIdle(on: transport.serial) { transport.returnLease(lease, running: []) }
    }
}
