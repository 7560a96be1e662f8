import FCCore
import FCSystem
import Logging
import NIOCore

// What the daemon keeps for a process whose connection ended while it may still run accessors, or decide claims in
// a lease, until it declares them on a new connection (docs/SEMANTICS.md §13.5, docs/PROTOCOL.md "A daemon that
// restarts"): kept until the process says it has declared everything (`Ping.held_declared`) or exits, never for a
// time alone.

extension ArbiterHost {
    /// How often the processes something is kept for are checked for having exited.
    static let handoverCheckInterval: TimeAmount = .milliseconds(200)
    /// The time a closed connection's leases are kept for in the arbiter's terms: longer than any process runs, so
    /// in effect until the host lets them go (its process declared or exited).
    static let keptUntilDeclared: Duration = .seconds(30 * 365 * 86_400)

    /// Takes over what a daemon that stopped cleanly handed on: for each holder that still runs, a stand-in client
    /// holds its items (held claims: granted at once, asking nobody) until it declares or exits.
    func takeOver(_ handed: HandedOnHolders, marker: String) {
        loop.preconditionInEventLoop()
        logger.notice(
            "the previous filecoordd stopped while clients held claims or leases: what each held is held for it until it declares it or exits",
            metadata: ["holders": "\(handed.holders.count)"]
        )
        handoverMarker = marker
        for holder in handed.holders where ProcessLiveness.isAlive(holder.pid, startedAt: holder.startTime) {
            let standIn = router.connect(pid: holder.pid, name: holder.name)
            guard let request = HandedOnHolders.claim(for: holder, id: ClaimID(rawValue: 1), client: standIn) else {
                apply(router.disconnect(standIn))
                continue
            }
            do {
                apply(try router.handle(.claimRequested(request), from: standIn))
            } catch {
                logger.error("cannot hold what a process held before the restart: \(error)")
            }
            handover.keep(standIn: standIn, for: holder.pid, startTime: holder.startTime)
            logger.notice(
                "holding what a process held when the previous filecoordd stopped, until it declares it or exits",
                metadata: [
                    "client.pid": "\(holder.pid)", "client.id": "\(standIn.rawValue)", "items": "\(request.items)",
                ]
            )
        }
        checkHandoverSoon()
        removeHandoverMarkerWhenDone()
    }

    /// The daemon closed `client`'s connection itself while its process may live on: its leases stay until that
    /// process declares what it holds on a new connection, or exits. `false` when the process is gone already (or
    /// cannot be named for good): then nothing is kept.
    func keepLeasesOfClosed(_ client: ClientID) -> Bool {
        // A client without leases leaves nothing to keep (and nothing to check for while its process lives).
        guard router.arbiter.leaseSnapshots().contains(where: { $0.client == client }),
            let pid = router.pid(of: client), pid > 0, let start = ProcessLiveness.startTime(of: pid)
        else { return false }
        handover.keep(leasesOf: client, for: pid, startTime: start)
        checkHandoverSoon()
        return true
    }

    /// Process `pid` declared, on `client`'s new connection, everything it still holds (`Ping.held_declared`): taken
    /// once the held claims it sent before the ping are, which may wait for the types of new mounts or for the
    /// document portal (``MountTypeGate``, ``DocumentPortalClients``): until stop 67 the ping overtook them, and what
    /// waited behind the stand-ins was granted before the held claims came back (found by a read-only review).
    func heldDeclared(by pid: Int32, from client: ClientID) {
        loop.preconditionInEventLoop()
        if mountTypes.isHolding || portalClients.isWaiting(client) {
            // Both end within their bounds; the events they held are received before this runs again.
            loop.assumeIsolated().scheduleTask(in: .milliseconds(5)) { [weak self] in
                guard let self, self.connections[client] != nil else { return }
                self.heldDeclared(by: pid, from: client)
            }
            return
        }
        guard let kept = handover.declared(by: pid) else { return }
        release(kept, because: "declared what it holds", pid: pid)
    }

    private func release(_ kept: HeldHandover.Kept, because reason: String, pid: Int32) {
        // What waited behind the stand-ins may be granted now: past its fence, the host fences first (the check's
        // timer is NIO's, not ``ArbiterTimers``', so nothing else checked it; a daemon stopped or suspended past its
        // fence runs overdue tasks in deadline order).
        cluster?.checkFence()
        for standIn in kept.standIns { apply(router.disconnect(standIn)) }
        if !kept.closedClients.isEmpty {
            let closed = Set(kept.closedClients)
            for lease in router.arbiter.leaseSnapshots() where closed.contains(lease.client) {
                timers.cancel(.leaseOrphaned(lease.id))
                apply(router.timerFired(.leaseOrphaned(lease.id)))
            }
        }
        logger.info("what was kept for a process is let go: it \(reason)", metadata: ["client.pid": "\(pid)"])
        removeHandoverMarkerWhenDone()
    }

    /// Once every holder a stopped daemon handed on has declared or exited, its marker goes.
    private func removeHandoverMarkerWhenDone() {
        guard let marker = handoverMarker, !handover.holdsStandIns else { return }
        handoverMarker = nil
        try? FileSystemCalls.removeFile(marker)
    }

    private func checkHandoverSoon() {
        guard !handover.isEmpty, !handoverCheckScheduled else { return }
        handoverCheckScheduled = true
        loop.assumeIsolated().scheduleTask(in: Self.handoverCheckInterval) { [weak self] in
            guard let self else { return }
            self.handoverCheckScheduled = false
            for (pid, kept) in self.handover.exited() { self.release(kept, because: "exited", pid: pid) }
            self.checkHandoverSoon()
        }
    }

    /// What to hand on to the next daemon, read when this one shuts down.
    func handOn() -> HandedOnHolders {
        HandedOnHolders(
            snapshot: router.arbiter.snapshot(),
            leases: router.arbiter.leaseSnapshots(),
            skipping: remoteClients,
            closed: handover.closedProcesses,
            inGrace: recovery.isRecovering,
            leaseHolds: leaseCounters.handedOnHolds
        )
    }
}
