import FCCore

/// What a client tells its arbiter, claims aside (a claim goes with its waiter through
/// ``ArbiterTransport/submitClaim(_:waiter:)``): the client's own vocabulary, the only messages it can send. Each
/// becomes one arbiter event (``event``): the in-process arbiter handles it, the daemon's connection sends it as that
/// event's frame (docs/PROTOCOL.md).
///
/// A value type: `Sendable`, sent from any thread.
enum ClientMessage: Sendable {
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

    /// The arbiter's event for this message.
    var event: ArbiterEvent {
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
        case .returnLease(let lease, let running): .leaseReturned(lease, client: ClientID(0), running: running)
        }
    }
}
