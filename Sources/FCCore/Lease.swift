/// A lease's id, chosen by the arbiter that grants it.
public struct LeaseID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The raw value.
    public var rawValue: UInt64
    /// Wraps a raw value.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Wraps a raw value.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// "lease#7".
    public var description: String { "lease#\(rawValue)" }
    /// Orders by raw value.
    public static func < (lhs: LeaseID, rhs: LeaseID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The id of the claim that stands for this lease in the arbiter's conflict checks (``ClaimID/isLease``).
    public var claim: ClaimID { ClaimID(ClaimID.leaseBit | rawValue) }
}

extension ClaimID {
    /// The bit that marks the claims standing for leases: no client may use an id with it (the arbiter refuses
    /// such a request), and no claim is ever exempt from a lease (docs/SEMANTICS.md §13).
    public static let leaseBit: UInt64 = 1 << 63

    /// `true` for the claim that stands for a lease (``LeaseID/claim``).
    public var isLease: Bool { rawValue & Self.leaseBit != 0 }

    /// The lease this claim stands for, or `nil` for a client's claim.
    public var lease: LeaseID? { isLease ? LeaseID(rawValue & ~Self.leaseBit) : nil }
}

extension ClaimRequest {
    /// Whether a lease on `subtree` may decide this claim in its holder's process (docs/SEMANTICS.md §13): every item
    /// lies at or under `subtree`, no item names a file with other names (``ClaimItem/hasOtherNames``: they may lie
    /// outside the lease, or inside another client's), and the claim is neither made with a presenter nor from a
    /// presenter's queue (the daemon knows the presenters and their queues). The holder's library and the arbiter's
    /// hand-back (``ArbiterEffect/claimInsideLease(_:client:lease:)``) apply the same rule, on the paths each has: a
    /// client whose names the daemon folds (the preload library) may see outside the subtree a path the arbiter's key
    /// puts inside; it sends such a claim, and decides it in the lease the hand-back names. O(items).
    public func mayBeDecided(inLeaseOn subtree: ItemPath) -> Bool {
        guard filePresenter == nil, fromPresenterQueue == nil else { return false }
        return items.allSatisfy { $0.mayBeDecided(inLeaseOn: subtree) }
    }
}

extension ClaimItem {
    /// Whether a lease on `subtree` may decide a claim of this item, made with no presenter and not from a
    /// presenter's queue (``ClaimRequest/mayBeDecided(inLeaseOn:)``, which applies it to each item): the item lies at
    /// or under `subtree` and names no file with other names.
    public func mayBeDecided(inLeaseOn subtree: ItemPath) -> Bool {
        !hasOtherNames && path.isEqualOrDescendant(of: subtree)
    }
}

/// When the arbiter grants leases and how it recalls them (docs/SEMANTICS.md §13). `nil` in
/// ``ArbiterConfiguration/leases`` grants none.
public struct LeasePolicy: Hashable, Sendable {
    /// How long a lease is kept at least before a recall is sent (the DLM's minimum hold time): a recall asked for
    /// sooner waits for it, so that two processes taking turns on one directory do not bounce the lease per claim.
    public var minimumHold: Duration = .milliseconds(10)
    /// The first back-off after a recall: the recalled client gets no new lease for this long. Each recall doubles
    /// it, up to ``maximumBackoff``; a lease held for ``minimumHold`` without a recall resets it.
    public var initialBackoff: Duration = .milliseconds(100)
    /// The longest back-off.
    public var maximumBackoff: Duration = .seconds(10)
    /// The most leases one client holds at once (nothing grows without bound); beyond it the client gets no more.
    public var maximumLeasesPerClient = 256

    /// Creates the default policy. A zero ``minimumHold`` recalls at once, a zero ``initialBackoff`` never backs
    /// off (for benchmarks that recall on purpose).
    public init() {}
}

/// What the arbiter knows of one lease, for dumps and tests.
public struct LeaseSnapshot: Hashable, Sendable {
    /// Where a lease is in its life.
    public enum State: Hashable, Sendable, CustomStringConvertible {
        /// Held; its holder decides the claims inside it.
        case held
        /// Another client showed interest before the minimum hold time passed: the recall goes when it does.
        case recallDue
        /// Recalled; the holder has not returned it yet.
        case recalled
        /// Recalled, and the holder did not answer within the presenter timeout. The lease still holds back every
        /// conflicting claim: its holder may be running claims in it (docs/SEMANTICS.md §13).
        case recallUnanswered
        /// The host closed its holder's connection while the holder's process may still decide claims in it: kept,
        /// holding back every conflicting claim, for the time the host gave (docs/SEMANTICS.md §13.5).
        case holderDisconnected

        /// The state's name, for dumps.
        public var description: String {
            switch self {
            case .held: "held"
            case .recallDue: "recall due"
            case .recalled: "recalled"
            case .recallUnanswered: "recall unanswered"
            case .holderDisconnected: "holder disconnected"
            }
        }
    }

    /// The lease's id.
    public var id: LeaseID
    /// The holder.
    public var client: ClientID
    /// The leased subtree: this item and everything inside it.
    public var subtree: ItemPath
    /// Where it is in its life.
    public var state: State
    /// When it was granted, on the host's clock; `nil` when the host gives no time.
    public var grantedAt: Duration?
    /// When the recall was sent, on the host's clock; `nil` before a recall or without a time.
    public var recalledAt: Duration?
    /// How many recalls the holder has had since it connected (this lease's included).
    public var recalls: Int
}
