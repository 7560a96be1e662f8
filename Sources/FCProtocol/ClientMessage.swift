public import FCCore

/// What a client tells its arbiter, claims aside (a claim is a ``FCCore/ClaimRequest`` with its own frame,
/// `Filecoord_V1_Frame(claim:)`): the client's own vocabulary, the only messages it can send.
///
/// Each goes two ways, and neither passes through the other: to the daemon as its frame
/// (`Filecoord_V1_Frame(_:)`, docs/PROTOCOL.md), and to an arbiter in the client's process as its event
/// (``eventInProcess``).
///
/// A value type: `Sendable`, sent from any thread.
public enum ClientMessage: Sendable, Hashable {
    /// A claim's accessor returned; `created` are the items it created, `outcome` what a write left behind (issue
    /// 37: it tells the write's echoes from a change another process makes right after).
    case finishClaim(ClaimID, created: [ItemPath], outcome: WriteOutcome? = nil)
    /// An `async` call's task was cancelled while its claim waited.
    case cancelClaim(ClaimID)
    /// `cancel()` on a coordinator of the client `client`.
    case cancelCoordinator(CoordinatorID, of: ClientID)
    /// The batch block of a granted preparation returned: the claim now waits for its completion handler (fcdump
    /// shows it; docs/SEMANTICS.md).
    case preparationReturned(ClaimID)
    /// A claim whose accessor still runs, declared again to a new arbiter (after a daemon crash): no reply is awaited.
    case declareHeldClaim(ClaimRequest)
    /// A presenter registered.
    case addPresenter(PresenterRegistration)
    /// A presenter unregistered; its requests count as answered.
    case removePresenter(PresenterID)
    /// A presenter's URL changed (after a move it heard of, or a nil URL becoming real).
    case presenterURLChanged(PresenterID, to: ItemPath?)
    /// A presenter answered a request.
    case presenterReplied(RequestID, PresenterReply)
    /// `item(at:didMoveTo:)` inside a claim's accessor.
    case itemMoved(ClaimID, from: ItemPath, to: ItemPath, fromName: [UInt8]?)
    /// A version of an item changed inside a claim's accessor (`NSFileVersion`).
    case versionChanged(ClaimID, ItemPath, VersionChange)
    /// A lease given back to the daemon, with the claims granted inside it that still run (issue 23).
    case returnLease(LeaseID, running: [ClaimRequest])

    /// The event for an arbiter in the client's own process (the in-process arbiter, a lease's arbiter), `nil` for
    /// ``returnLease(_:running:)``: only a daemon grants leases, and its event names the client the daemon knows.
    public var eventInProcess: ArbiterEvent? {
        if case .returnLease = self { return nil }
        return event(from: ClientID(0))
    }

    /// The arbiter's event for this message from client `client` (only ``returnLease(_:running:)``'s names it).
    public func event(from client: ClientID) -> ArbiterEvent {
        switch self {
        case .finishClaim(let claim, let created, let outcome):
            .claimFinished(claim, created: created, outcome: outcome)
        case .cancelClaim(let claim): .claimCancelled(claim)
        case .cancelCoordinator(let coordinator, let client): .coordinatorCancelled(client, coordinator)
        case .preparationReturned(let claim): .preparationReturned(claim)
        case .declareHeldClaim(let request): .claimRequested(request)
        case .addPresenter(let registration): .presenterAdded(registration)
        case .removePresenter(let presenter): .presenterRemoved(presenter)
        case .presenterURLChanged(let presenter, let path): .presenterURLChanged(presenter, to: path)
        case .presenterReplied(let request, let reply): .presenterReplied(request, reply)
        case .itemMoved(let claim, let from, let to, let fromName):
            .itemMoved(claim, from: from, to: to, fromName: fromName)
        case .versionChanged(let claim, let path, let change): .versionChanged(claim, path, change)
        case .returnLease(let lease, let running): .leaseReturned(lease, client: client, running: running)
        }
    }
}
