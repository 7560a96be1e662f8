import FCCore
import FCProtocol
import FCToolkit

/// A client's claims between request and finish: the callers waiting for an outcome, the requests sent and not
/// answered yet, the claims granted and not finished, and the version store calls waiting for their replies.
///
/// A held claim's request is kept so that, when the daemon crashes while its accessor runs, the claim is declared
/// again to the next daemon (`isHeld`), which then grants nothing that conflicts until it finishes (issue 11).
///
/// - Important: Thread-safe. `state` is never held while a waiter is resumed: the methods hand waiters back, and
///   the caller resumes them.
final class ClaimTable: Sendable {
    private struct State {
        var waiters: [ClaimID: ClaimWaiter] = [:]
        /// The requests of claims sent and not yet granted or failed.
        var requested: [ClaimID: ClaimRequest] = [:]
        /// The claims granted and not finished: their accessors run.
        var held: [ClaimID: ClaimRequest] = [:]
        /// The transport in charge, as the client's connection manager has it (set when one is put in charge,
        /// cleared when it is lost): a claim registered here learns where it goes in the same lock.
        var route: (any ArbiterTransport)?
        /// While the held claims read by ``heldRequestsToDeclare()`` are being declared to a new connection: those
        /// claims, and their messages sent since (a move, a version change, a finish), held back in order until the
        /// declarations are sent (``holdBack(_:)``).
        var declaring: (claims: Set<ClaimID>, messages: [ClientMessage])?
    }

    /// The most messages held back while held claims are declared (a declaration takes milliseconds; a move and a
    /// finish per accessor are usual); past it a message is sent at once, as before stop 70.
    static let maximumMessagesWhileDeclaring = 1_000
    private let state = Locked(State())
    /// This client's version store calls waiting for the daemon's replies (issue 15).
    let versionRequests = VersionRequestTable()

    /// Registers the waiter of a claim about to be sent, and its request; returns the transport in charge, if any
    /// (`nil`: the claim's sender asks the connection manager, which connects).
    func register(_ waiter: ClaimWaiter, for request: ClaimRequest) -> (any ArbiterTransport)? {
        state.withLock {
            $0.waiters[request.id] = waiter
            $0.requested[request.id] = request
            return $0.route
        }
    }

    /// `transport` was put in charge.
    func route(to transport: any ArbiterTransport) {
        state.withLock { $0.route = transport }
    }

    /// `lost` is no longer in charge: claims registered from now on ask the connection manager.
    func stopRouting(to lost: any ArbiterTransport) {
        state.withLock { if $0.route === lost { $0.route = nil } }
    }

    /// `claim` was granted: it is held from now on; returns its waiter, to be resumed.
    func granted(_ claim: ClaimID) -> ClaimWaiter? {
        state.withLock {
            if let request = $0.requested.removeValue(forKey: claim) { $0.held[claim] = request }
            return $0.waiters.removeValue(forKey: claim)
        }
    }

    /// `request`, granted in process by a lease without a waiter (``LeaseTable/grantAtOnce(_:)``), is held from now
    /// on: declared to the next daemon if the connection is lost before it finishes.
    func hold(_ request: ClaimRequest) {
        state.withLock { $0.held[request.id] = request }
    }

    /// An item of the held claim `claim` moved from `from` to `to` (`item(at:didMoveTo:)`): the claim holds the new
    /// location too, as the arbiter's rule has it (its items at or inside `from`, relocated, with their access), so
    /// that a declaration of the claim to a daemon (after a crash, or with a lease's return) covers where the item is
    /// now. Until stop 69 a declared claim named only its first locations, and the next daemon granted the new one
    /// beside it. O(the claim's items^2).
    ///
    /// Bounded as a request is (``ProtocolLimits``): a relocated item that an item of the claim already covers (a
    /// written folder holds its contents) is not added, nor one whose path is too long, and none past the most items
    /// a claim may carry, so that the declaration stays one the daemon takes (a refused one closed the connection).
    func moved(_ claim: ClaimID, from: ItemPath, to: ItemPath) {
        guard from != to, !to.isDescendant(of: from) else { return }
        state.withLock { state in
            guard var request = state.held[claim], request.items.contains(where: { $0.access.isWrite }) else { return }
            // Shallowest first: a folder's new place is added before its contents, which it then covers.
            let relocated = request.items.compactMap { item in
                item.path.relocated(from: from, to: to).map { (item, $0) }
            }.sorted { $0.1.bytes.count < $1.1.bytes.count }
            for (item, new) in relocated {
                guard request.items.count < ProtocolLimits.defaultMaximumItemsPerClaim,
                    new.bytes.count <= ProtocolLimits.defaultMaximumPathLength,
                    !request.items.contains(where: { held in
                        (held.path == new && held.access == item.access)
                            || (held.access.coversSubtree && new.isDescendant(of: held.path))
                    })
                else { continue }
                request.items.append(
                    ClaimItem(
                        path: new,
                        access: item.access,
                        identity: item.identity,
                        hasOtherNames: item.hasOtherNames
                    )
                )
            }
            state.held[claim] = request
        }
    }

    /// The request of the held claim `claim` as it stands (its moves included), if it is held.
    func heldRequest(of claim: ClaimID) -> ClaimRequest? {
        state.withLock { $0.held[claim] }
    }

    /// `claim` failed: returns its waiter, to be resumed.
    func failed(_ claim: ClaimID) -> ClaimWaiter? {
        state.withLock {
            $0.requested[claim] = nil
            return $0.waiters.removeValue(forKey: claim)
        }
    }

    /// The request of a claim sent and not granted or failed yet, if any.
    func request(of claim: ClaimID) -> ClaimRequest? {
        state.withLock { $0.requested[claim] }
    }

    /// The waiter of a claim not granted or failed yet, if any.
    func waiter(of claim: ClaimID) -> ClaimWaiter? {
        state.withLock { $0.waiters[claim] }
    }

    /// `claim` ended (its accessor returned).
    func finished(_ claim: ClaimID) {
        state.withLock { _ = $0.held.removeValue(forKey: claim) }
    }

    /// The claims held now, in the order they were made.
    var heldRequests: [ClaimRequest] {
        state.withLock { $0.held.values.sorted { $0.id < $1.id } }
    }

    /// ``heldRequests``, to be declared to a new connection: from now on, until ``heldBackWhileDeclaring()`` finds
    /// nothing more, their messages are held back (``holdBack(_:)``). A move sent meanwhile could reach the new daemon
    /// before the declaration, which ignores a move of a claim it does not know (it then granted the new place beside
    /// the running claim); a later message of the same claim must not overtake it.
    func heldRequestsToDeclare() -> [ClaimRequest] {
        state.withLock { state in
            let held = state.held.values.sorted { $0.id < $1.id }
            state.declaring = (Set(held.map(\.id)), [])
            return held
        }
    }

    /// Holds `message` back if it is about a claim being declared to a new connection (its move, version change or
    /// finish): `true` then (the caller does not send it; ``CoordinationClient/connected(to:install:)`` does, after
    /// the declarations, in order).
    func holdBack(_ message: ClientMessage) -> Bool {
        let claim: ClaimID
        switch message {
        case .itemMoved(let id, _, _, _), .versionChanged(let id, _, _), .finishClaim(let id, _, _),
            .preparationReturned(let id):
            claim = id
        default:
            return false
        }
        return state.withLock { state in
            // Read through `state` without a copy: a copy held while appending made each append copy the list.
            guard state.declaring?.claims.contains(claim) == true,
                (state.declaring?.messages.count ?? .max) < Self.maximumMessagesWhileDeclaring
            else { return false }
            state.declaring?.messages.append(message)
            return true
        }
    }

    /// The messages held back since ``heldRequestsToDeclare()`` or the last call, in the order they were sent, to be
    /// sent now, after the declarations; `nil` once there are none, which ends the holding back (so a message held
    /// back while the caller sends these is in the next call's, never sent ahead of them).
    func heldBackWhileDeclaring() -> [ClientMessage]? {
        state.withLock { state in
            guard let messages = state.declaring?.messages, !messages.isEmpty else {
                state.declaring = nil
                return nil
            }
            state.declaring?.messages = []
            return messages
        }
    }

    /// Those of `requests` no longer held.
    func finished(among requests: [ClaimRequest]) -> [ClaimRequest] {
        state.withLock { state in requests.filter { state.held[$0.id] == nil } }
    }

    /// Whether an accessor runs now.
    var holdsAny: Bool {
        state.withLock { !$0.held.isEmpty }
    }

    /// Forgets every waiting claim (its daemon stopped answering) and returns them with their waiters, to be given
    /// up and failed.
    func removeAllWaitingClaims() -> [(ClaimID, ClaimWaiter)] {
        state.withLock { state in
            defer {
                state.waiters = [:]
                state.requested = [:]
            }
            return state.waiters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        }
    }

    /// Forgets every waiting claim (its connection is gone) and returns the waiters, to be failed.
    func removeAllWaiting() -> [ClaimWaiter] {
        state.withLock { state in
            defer {
                state.waiters = [:]
                state.requested = [:]
            }
            return Array(state.waiters.values)
        }
    }
}
