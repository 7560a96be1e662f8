/// A client as the arbiter knows it: enough to name it in logs and dumps.
public struct ClientInfo: Hashable, Sendable {
    /// The client's id.
    public var id: ClientID
    /// The process id, as the transport learnt it (`SO_PEERCRED`), or 0 in process.
    public var pid: Int32
    /// A short process name for reports.
    public var name: String
    /// `true` when the client said it answers lease recalls (docs/PROTOCOL.md, `Hello.answers_recalls`): only such
    /// a client is granted leases (docs/SEMANTICS.md §13).
    public var answersRecalls: Bool
    /// `true` when every claim of the client has one purpose (the preload library: one per process tree), so that a
    /// lease of its stands with that purpose, and claims of that purpose pass it (docs/SEMANTICS.md §13).
    public var claimsShareOnePurpose: Bool

    /// Creates a client description.
    public init(
        id: ClientID,
        pid: Int32,
        name: String,
        answersRecalls: Bool = false,
        claimsShareOnePurpose: Bool = false
    ) {
        self.id = id
        self.pid = pid
        self.name = name
        self.answersRecalls = answersRecalls
        self.claimsShareOnePurpose = claimsShareOnePurpose
    }
}

/// A presenter's registration (`NSFileCoordinator.addFilePresenter(_:)`).
public struct PresenterRegistration: Hashable, Sendable {
    /// The presenter's id.
    public var id: PresenterID
    /// The client that registered the presenter.
    public var client: ClientID
    /// The presented item, or `nil` while the item does not exist yet.
    public var path: ItemPath?
    /// The callbacks the presenter implements.
    public var callbacks: PresenterCallbacks
    /// `true` when the presenter declares its item a package (a directory treated as one document).
    public var isPackage: Bool
    /// The presenter's operation queue when it is serial, as a client-chosen id: presenters of one client with the
    /// same id share one queue (`OperationQueue.main`, typically), so a call that holds it holds it for all of them.
    /// `nil` for a concurrent queue, which no call holds.
    public var serialQueue: UInt64?
    /// The file the presented path named at registration (issue 26), `nil` for a directory or an item that does not
    /// exist: claims through the file's other names reach this presenter too (Arbiter+Identity.swift).
    public var identity: ItemIdentity?
    /// The file had more than one name (`st_nlink` above 1) at registration: its other names may lie inside a lease,
    /// so the presenter recalls every lease (docs/SEMANTICS.md §13) to hear what their holders write.
    public var hasOtherNames: Bool
    /// When the client registered the presenter, on the wall clock in nanoseconds since the epoch (issue 37); `nil`
    /// from older clients. The arbiter does not read it: the daemon's host has its watcher report, once the item is
    /// watched, a change made since then (``FileSystemEvent/changedBeforeWatch(_:presenter:)``).
    public var registeredAt: Int64?
    /// The presented item's change time (`st_ctim`, ns) when the client registered it; `nil` when it did not exist
    /// (or from older clients). Read by the daemon's host only, as ``registeredAt``.
    public var changeTimeAtRegistration: Int64?

    /// Creates a registration. By default the presenter implements every callback, is not a package and shares
    /// its queue with no other presenter.
    public init(
        id: PresenterID,
        client: ClientID,
        path: ItemPath?,
        callbacks: PresenterCallbacks = .all,
        isPackage: Bool = false,
        serialQueue: UInt64? = nil,
        identity: ItemIdentity? = nil,
        hasOtherNames: Bool = false,
        registeredAt: Int64? = nil,
        changeTimeAtRegistration: Int64? = nil
    ) {
        self.registeredAt = registeredAt
        self.changeTimeAtRegistration = changeTimeAtRegistration
        self.id = id
        self.client = client
        self.path = path
        self.callbacks = callbacks
        self.isPackage = isPackage
        self.serialQueue = serialQueue
        self.identity = identity
        self.hasOtherNames = hasOtherNames
    }
}

/// A claim request: one `coordinate…` or `prepare…` call.
public struct ClaimRequest: Hashable, Sendable {
    /// The claim's id.
    public var id: ClaimID
    /// The client that made the call.
    public var client: ClientID
    /// The coordinator the call was made on.
    public var coordinator: CoordinatorID
    /// The coordinator's purpose identifier.
    public var purpose: PurposeID
    /// The presenter the coordinator was created with (`init(filePresenter:)`), if any. It is never messaged about
    /// this claim (version messages excepted), and its writes jump ahead of claims it is answering (rule 5).
    public var filePresenter: PresenterID?
    /// The presenter whose operation queue the call was made on, if any: inside one of its callbacks, or in other
    /// work on that queue (the main thread, for a presenter on `OperationQueue.main`). The deadlock detector uses
    /// it: the call holds that queue, and every presenter sharing it (``PresenterRegistration/serialQueue``), while
    /// it waits.
    public var fromPresenterQueue: PresenterID?
    /// The callback of that presenter that was running when the call was made (one bit), so that a deadlock report
    /// can name the code to change; empty for the reacquirer a relinquish handed back; `nil` when the call was made
    /// in other work on the queue (the main thread, say) or by a client that does not say.
    public var fromCallback: PresenterCallbacks?
    /// The items, granted together or not at all.
    public var items: [ClaimItem]
    /// `true` for `prepare(forReadingItemsAt:…)`: presenters are asked as for any claim, but the claim writes
    /// nothing itself (the coordinated calls made inside it do), so its end sends no did-change.
    public var isPreparation: Bool
    /// The caller's deadline, counted from the claim's arrival: if it is not granted by then it fails with
    /// ``ClaimFailure/timedOut(_:)``, saying what it still waits for (docs/SEMANTICS.md §6). `nil` waits as long as it
    /// takes (for the presenter timeout and the deadlock detector, or for `cancel()`).
    public var timeout: Duration?
    /// `true` for a claim that is granted already: its accessor runs in its client, which declares it again to an
    /// arbiter that restarted after a crash (the new arbiter knew nothing of it). It is granted at once, asks
    /// nobody, and holds back conflicting claims until it finishes, so that a daemon's crash never lets another
    /// process in while an accessor still runs.
    public var isHeld: Bool = false
    /// The longest this claim may hold back others (issue 42; ``Arbiter`` ends it, docs/SEMANTICS.md §2 rule 8):
    /// once it has been granted this long, it ends as soon as a conflicting claim waits for it, as if its client had
    /// finished it. `nil`: it holds until its client finishes it. The preload library sets it on the claims of a
    /// program's opens, which last as long as the program keeps the file open.
    public var maximumHold: Duration? = nil
    /// `true` for a claim that must not wait for another claim (issue 43; `fccoord -n`; docs/SEMANTICS.md §2 rule 9):
    /// held back by a conflicting claim it is not exempt from (granted, being prepared, or queued ahead of it), it
    /// fails with ``ClaimFailure/wouldWait(_:)`` instead of waiting. Asking presenters and recalling a lease are not
    /// waiting for a claim: it waits for those, and is refused if a claim the lease's holder declares running when it
    /// returns the lease holds it back.
    public var nonblocking: Bool = false

    /// The longest ``timeout`` (about 31 years): whoever builds a request from outside input (the library, the wire
    /// decoder) cuts longer ones to it, so that no timer arithmetic downstream can overflow.
    public static let longestTimeout: Duration = .seconds(1_000_000_000)

    /// Creates a claim request.
    public init(
        id: ClaimID,
        client: ClientID,
        coordinator: CoordinatorID,
        purpose: PurposeID,
        filePresenter: PresenterID? = nil,
        fromPresenterQueue: PresenterID? = nil,
        fromCallback: PresenterCallbacks? = nil,
        items: [ClaimItem],
        isPreparation: Bool = false,
        timeout: Duration? = nil
    ) {
        self.id = id
        self.client = client
        self.coordinator = coordinator
        self.purpose = purpose
        self.filePresenter = filePresenter
        self.fromPresenterQueue = fromPresenterQueue
        self.fromCallback = fromCallback
        self.items = items
        self.isPreparation = isPreparation
        self.timeout = timeout
    }
}

/// A timer the arbiter asked its host to run.
public enum TimerID: Hashable, Sendable {
    /// The presenter timeout of one request (docs/SEMANTICS.md §6).
    case presenterReply(RequestID)
    /// A claim has waited for the deadlock detection delay (docs/SEMANTICS.md §6).
    case deadlockCheck(ClaimID)
    /// A claim's own deadline (``ClaimRequest/timeout``) has passed.
    case claimDeadline(ClaimID)
    /// A granted claim has held for its ``ClaimRequest/maximumHold``.
    case claimHoldLimit(ClaimID)
    /// The coalescing window of file-system notifications (``ArbiterConfiguration/coalescingWindow``) elapsed.
    case fileSystemWindow
    /// A lease's minimum hold time (``LeasePolicy/minimumHold``) has passed.
    case leaseMinimumHold(LeaseID)
    /// A recalled lease's holder has had the presenter timeout to return it.
    case leaseRecallReply(LeaseID)
    /// A client's back-off after a recall (``LeasePolicy/initialBackoff``) has passed.
    case leaseBackoff(ClientID)
    /// A lease kept after the host closed its holder's connection (``ArbiterEvent/clientClosed(_:keepingLeasesFor:)``)
    /// has been kept for the time given: it goes.
    case leaseOrphaned(LeaseID)
}

/// Everything that can happen to the arbiter. The host feeds events one at a time, in order.
public enum ArbiterEvent: Hashable, Sendable {
    /// A client connected. Optional: clients are also created on first use.
    case clientConnected(ClientInfo)
    /// A client went away: its claims are released, its presenters removed, its pending replies count as answered.
    case clientDisconnected(ClientID)
    /// The host closed a client's connection itself while the client's process may live on (a protocol error, a
    /// client that does not read): as ``clientDisconnected(_:)``, except that its leases stay, holding back every
    /// conflicting claim, for `duration` (docs/SEMANTICS.md §13.5): the holder may decide claims in them until it
    /// reads the end of its connection, and declares those still running when it reconnects, as after a restart.
    case clientClosed(ClientID, keepingLeasesFor: Duration)
    /// A presenter registered.
    case presenterAdded(PresenterRegistration)
    /// A presenter unregistered. Its pending replies count as answered.
    case presenterRemoved(PresenterID)
    /// A presenter's `presentedItemURL` changed (after a move it was told of, or a nil URL becoming real).
    case presenterURLChanged(PresenterID, to: ItemPath?)
    /// A claim was requested.
    case claimRequested(ClaimRequest)
    /// The batch block of a granted preparation (``ClaimRequest/isPreparation``) returned while its completion
    /// handler is still to be called: the claim stays granted until its ``claimFinished(_:created:outcome:)`` (the handler),
    /// and dumps show it as waiting for its handler from now on. It changes nothing in who waits for whom; for
    /// anything but a granted preparation it is logged and ignored.
    case preparationReturned(ClaimID)
    /// The accessor of a granted claim returned. `created` names items the accessor created
    /// (reported as `presentedSubitemDidAppear` to enclosing directories). `outcome`: what a write left behind, as
    /// its client saw it (issue 37), so that a change another process makes right after is not taken for the
    /// write's echo; `nil` from a client that does not say (its echoes are told apart by time alone).
    case claimFinished(ClaimID, created: [ItemPath], outcome: WriteOutcome? = nil)
    /// `cancel()` on a coordinator: its waiting claims fail with `.cancelled`, and so do its later claims.
    case coordinatorCancelled(ClientID, CoordinatorID)
    /// A single claim was abandoned (a per-call deadline, task cancellation): it fails if not yet granted.
    case claimCancelled(ClaimID)
    /// A presenter answered a request.
    case presenterReplied(RequestID, PresenterReply)
    /// `item(at:didMoveTo:)` inside the accessor of a granted write claim. `fromName`: for a rename in place
    /// (`from == to`, a case-only rename), the old last component as the mover spelled it (issue 14), carried to the
    /// did-move messages of enclosing folders (``PresenterMessage/movedFromName``); never compared.
    case itemMoved(ClaimID, from: ItemPath, to: ItemPath, fromName: [UInt8]? = nil)
    /// A version of an item was added, removed or resolved inside the accessor of a granted claim.
    case versionChanged(ClaimID, ItemPath, VersionChange)
    /// A timer the arbiter scheduled fired.
    case timerFired(TimerID)
    /// The file-system watcher read these events, in the kernel's order (``FileSystemEvent``). `observed`: the
    /// state of their items when the watcher read them (and of their directories), to tell a
    /// coordinated write's echo from a change made after it (issue 37). An event whose item has no stamp here is
    /// taken for an echo wherever one is possible. `readAt`: the host's wall clock (`CLOCK_REALTIME`, nanoseconds
    /// since the Unix epoch, as ``WriteOutcome/endedAt``) once those states were read: a state read before a write's
    /// accessor returned is from that write (or before it), never a change made after it. `drainedAt`: the same clock
    /// just before the watcher found its queue empty: every event caused before that moment is in this batch or an
    /// earlier one, so a write that ended before it has no echo still to come (an empty batch may say only this).
    case fileSystemChanged(
        [FileSystemEvent],
        observed: [ItemPath: ItemStamp] = [:],
        readAt: Int64? = nil,
        drainedAt: Int64? = nil
    )
    /// The holder returned a lease, recalled or not, declaring the claims it granted inside it that still run
    /// (``ClaimRequest/isHeld`` requests with ids of the host's choosing): they become the arbiter's granted claims
    /// in the same step, before anything waiting for the lease is decided (docs/SEMANTICS.md §13).
    case leaseReturned(LeaseID, client: ClientID, running: [ClaimRequest])
    /// The host's cluster adapter says what this host may do in the shared folder `folder` (issue 40; docs/SEMANTICS.md
    /// §14; ``HostGateCommand``): the arbiter keeps a host gate there while another host may decide claims inside.
    case hostGate(ItemPath, HostGateCommand)
}

/// What the host's cluster adapter tells the arbiter about one shared folder (``ArbiterEvent/hostGate(_:_:)``;
/// Arbiter+HostGates.swift). Each is the arbiter's side of a ``HostLeaseEffect``.
public enum HostGateCommand: Hashable, Sendable {
    /// Close the gate (``HostLeaseEffect/holdBack(folder:)``, and at the start, before the host holds the folder):
    /// no claim inside the folder is granted from now on; those that come wait, and say so
    /// (``ArbiterEffect/hostGateWanted(_:)``). Claims granted already go on.
    case close
    /// Open the gate (``HostLeaseEffect/admit(folder:revision:)``): the host holds the folder, and claims inside are
    /// decided here as anywhere else. `revision` is the cluster's revision that ordered the host lease, for the log.
    case open(revision: Int64)
    /// Close the gate, recall the process leases inside, and say when no claim inside is granted any more
    /// (``ArbiterEffect/hostGateDrained(_:)``; ``HostLeaseEffect/drain(folder:)``).
    case drain
    /// Fail every claim that waits at the gate with ``ClaimFailure/clusterUnreachable(_:)`` and this reason
    /// (``HostLeaseEffect/failClaims(folder:reason:)``).
    case failWaiting(String)
    /// The claims granted inside are no longer exclusive across hosts (``HostLeaseEffect/claimsLost(folder:reason:)``):
    /// log each, with its client, as lost.
    case claimsLost(String)
}
