import FCCore

extension LeaseTable {
    /// A class, reached only under the table's lock: the table and a claim granted at once share it, so that the
    /// claim's finish finds its lease without a lookup, and a lookup copies no fields (issue 39).
    ///
    /// Its fields are unchecked by the runtime's dynamic exclusivity enforcement: every access is made under the
    /// table's lock, which excludes a second one as the check would (issue 39: the check was a call into the runtime
    /// per field per claim).
    final class Lease {
        let subtree: ItemPath
        @exclusivity(unchecked) var arbiter: InProcessArbiter
        /// The claim granted without the arbiter (``Arbiter/grantsAtOnce(_:)``: it held nothing when it came, and no
        /// other claim was granted so), not yet entered in it. A claim that ends before anything else happens in the
        /// lease (a loop of reads) costs no arbiter work; anything else enters it first, as a held claim
        /// (``LeaseTable/enterGrantedAtOnce(_:state:)``). One at most: a second claim finds the first and goes to the
        /// arbiter.
        @exclusivity(unchecked) private(set) var grantedAtOnce: GrantedAtOnce?
        /// A claim was offered to the lease since the last idle sweep (or it was granted since): not idle.
        @exclusivity(unchecked) var usedSinceSweep = true

        init(subtree: ItemPath, arbiter: InProcessArbiter) {
            self.subtree = subtree
            self.arbiter = arbiter
        }

        /// Whether ``grantedAtOnce`` came through ``LeaseTable/grantAtOnce(_:)`` (the leased claim's straight path),
        /// and so is in no table but this slot: not in the claim table's held claims, not in `owner`. A claim granted
        /// at once by ``LeaseTable/submit(_:)`` has its entries there already, and must not be entered again (its
        /// finish may have removed it from the claim table a moment before: it would stay held for ever).
        var grantedOnStraightPath: Bool {
            if case .straight = grantedAtOnce { return true }
            return false
        }

        /// Records `claim`, granted without the arbiter, and the lease's use.
        func grantAtOnce(_ claim: GrantedAtOnce) {
            grantedAtOnce = claim
            usedSinceSweep = true
        }

        /// Empties the slot of the claim granted at once and returns it.
        func takeGrantedAtOnce() -> GrantedAtOnce? {
            defer { grantedAtOnce = nil }
            return grantedAtOnce
        }
    }

    /// The claim a lease granted without its arbiter, as it came.
    enum GrantedAtOnce {
        /// Through ``LeaseTable/grantAtOnce(_:)``, kept as its parts.
        case straight(StraightClaim)
        /// Through ``LeaseTable/submit(_:)``.
        case submitted(ClaimRequest)

        var id: ClaimID {
            switch self {
            case .straight(let claim): claim.id
            case .submitted(let request): request.id
            }
        }

        var request: ClaimRequest {
            switch self {
            case .straight(let claim): claim.request
            case .submitted(let request): request
            }
        }
    }
}

/// A claim of the leased claim's straight path (``NSFileCoordinator/accessInLease(_:_:_:)``): one item, no presenter,
/// not from a presenter's queue, no timeout, kept as its parts. Its ``ClaimRequest`` (an array of one item, and a
/// struct of 200 bytes copied at each step) is made only if the claim leaves its lease's slot, which a loop of reads
/// never does (issue 39: the request's allocation and copies were a tenth of a leased read's instructions).
struct StraightClaim {
    var id: ClaimID
    var client: ClientID
    var coordinator: CoordinatorID
    var purpose: PurposeID
    var item: ClaimItem

    /// The claim as a request, as the general way would have made it.
    var request: ClaimRequest {
        ClaimRequest(id: id, client: client, coordinator: coordinator, purpose: purpose, items: [item])
    }
}
