/// The vocabulary of host leases on shared folders (issue 40; docs/SEMANTICS.md §14): what a host's
/// ``HostLeaseTable`` is told, what it asks its host to do, and its settings.
///
/// A shared folder is a folder that several hosts mount (NFS, SMB, CephFS). Each host's daemon decides the claims of
/// its own processes; a host decides claims inside a shared folder only while it holds the folder's host lease, a
/// key in the cluster's store (etcd) bound to the host's session. Hosts that want a folder queue their keys in the
/// store's revision order: the lowest holds, the next is recalled to (so the holder lets its own claims there end,
/// and gives the key up). A host that cannot renew its session in time stops deciding in every shared folder before
/// its session can expire in the store, so that no other host can be granted what it may still grant.

/// The settings of host leases.
public struct HostLeasePolicy: Hashable, Sendable {
    /// The session's time to live in the store: a host that renews nothing for this long loses its keys there.
    public var sessionTTL: Duration = .seconds(10)
    /// How much earlier than its session could expire a host stops granting (``HostLeaseTable``'s fence): covers the
    /// difference between the host's clock rate and the store's over one time to live. The fence falls at the send
    /// time of the last renewal the store acknowledged, plus the time to live, less this.
    public var fenceMargin: Duration = .milliseconds(500)
    /// How long a host keeps a folder at least before it gives it to another host that asks (GFS2's minimum hold
    /// time): two hosts taking turns on one folder do not bounce it per claim.
    public var minimumHold: Duration = .milliseconds(100)

    /// The default settings: a 10 s session, a 0.5 s fence margin, a 0.1 s minimum hold.
    public init() {}

    /// Settings with the given session time to live; the margin is a twentieth of it (at least 1 ms).
    public init(sessionTTL: Duration, minimumHold: Duration = .milliseconds(100)) {
        self.sessionTTL = sessionTTL
        self.fenceMargin = max(sessionTTL / 20, .milliseconds(1))
        self.minimumHold = minimumHold
    }
}

/// A timer of a ``HostLeaseTable``.
public enum HostLeaseTimer: Hashable, Sendable {
    /// The session's fence: no renewal acknowledged in time.
    case fence
    /// A held folder's minimum hold time has passed.
    case minimumHold(ItemPath)
}

/// What a host tells its ``HostLeaseTable``, each at the host's time (``HostLeaseTable/handle(_:at:)``).
public enum HostLeaseEvent: Hashable, Sendable {
    /// A session was opened in the store; the request that opened it was sent at `sentAt`.
    case sessionStarted(sentAt: Duration)
    /// A renewal of the session sent at `sentAt` was acknowledged.
    case sessionRenewed(sentAt: Duration)
    /// The session is gone (the store said so, or cannot be reached to open one): `reason` says which.
    case sessionLost(String)
    /// A claim of a local process arrived for an item inside `folder` while the host does not hold it.
    case claimArrived(folder: ItemPath)
    /// After ``HostLeaseEffect/drain(folder:)``: no local claim inside `folder` is granted any more.
    case localClaimsEnded(folder: ItemPath)
    /// The host's key for `folder` is in the store, with this create revision.
    case keyCreated(folder: ItemPath, revision: Int64)
    /// The host's key for `folder` could not be put: `reason` says why.
    case keyFailed(folder: ItemPath, String)
    /// No key of a lower create revision than the host's key `revision` remains for `folder`. The revision tells
    /// the key of the session now from a key of a session the host replaced, still in the store until it expires.
    case becameHolder(folder: ItemPath, revision: Int64)
    /// Another host's key for `folder` came after the host's key `revision`: that host waits for it.
    case otherHostWaiting(folder: ItemPath, host: String, after: Int64)
    /// After ``otherHostWaiting(folder:host:after:)``, the last key after the host's key `revision` went (its claims
    /// gave up waiting, or its session ended): nobody waits any more, and a recall not yet begun is called off.
    case noHostWaiting(folder: ItemPath, after: Int64)
    /// The host's key for `folder` was deleted.
    case keyDeleted(folder: ItemPath)
    /// A timer the table started has fired.
    case timerFired(HostLeaseTimer)
}

/// What a ``HostLeaseTable`` asks its host to do, in order.
public enum HostLeaseEffect: Hashable, Sendable {
    /// Put the host's key for `folder`, bound to the session, after every key already there.
    case putKey(folder: ItemPath)
    /// Delete the host's key for `folder`.
    case deleteKey(folder: ItemPath)
    /// Local claims inside `folder` may be granted from now on; `revision` is the key's, for logs and dumps.
    case admit(folder: ItemPath, revision: Int64)
    /// Grant no local claim inside `folder` from now on (those waiting, and new ones, wait).
    case holdBack(folder: ItemPath)
    /// Let the local claims inside `folder` end (recall the process leases there) and say when none is granted
    /// (``HostLeaseEvent/localClaimsEnded(folder:)``).
    case drain(folder: ItemPath)
    /// Fail the local claims waiting inside `folder`, and the ones that arrive until the host asks again, with
    /// `reason` (`clusterUnreachable`).
    case failClaims(folder: ItemPath, reason: String)
    /// The local claims granted inside `folder` are no longer exclusive across hosts (the session was lost): tell
    /// their holders and log them.
    case claimsLost(folder: ItemPath, reason: String)
    /// Give the session up and open a new one: after a fence, the old one's keys may be gone from the store.
    case replaceSession
    /// Start `timer`, to fire after `after`.
    case startTimer(HostLeaseTimer, after: Duration)
    /// Cancel `timer`.
    case cancelTimer(HostLeaseTimer)
}

/// Where a host is with one shared folder.
public enum HostLeaseState: Hashable, Sendable, CustomStringConvertible {
    /// No key in the store: local claims there wait (or fail, without a session).
    case idle
    /// The key's put was sent.
    case requested
    /// The key is in the store behind another host's.
    case queued(revision: Int64)
    /// Held: local claims there are decided locally.
    case held(revision: Int64, since: Duration)
    /// Held, and another host waits; it is given up once the minimum hold time passes.
    case recallDue(revision: Int64, since: Duration)
    /// Given up: no new local claim is granted; the host waits for its granted ones to end.
    case draining(revision: Int64)
    /// The key's delete was sent.
    case releasing

    /// The state's name, for dumps.
    public var description: String {
        switch self {
        case .idle: "idle"
        case .requested: "requested"
        case .queued(let revision): "queued at revision \(revision)"
        case .held(let revision, _): "held at revision \(revision)"
        case .recallDue(let revision, _): "held at revision \(revision), recall due"
        case .draining(let revision): "draining (revision \(revision))"
        case .releasing: "releasing"
        }
    }
}

/// Where a host's session stands.
public enum HostSessionState: Hashable, Sendable, CustomStringConvertible {
    /// Not opened yet: claims in shared folders wait for it.
    case connecting
    /// Open; the host stops granting at `fenceAt` unless a renewal moves it.
    case live(fenceAt: Duration)
    /// Lost or fenced: claims in shared folders fail with `reason` until a new session opens.
    case unavailable(reason: String)

    /// The state's name, for dumps.
    public var description: String {
        switch self {
        case .connecting: "connecting"
        case .live(let fenceAt): "live (fence at \(fenceAt))"
        case .unavailable(let reason): "unavailable: \(reason)"
        }
    }
}

/// What a ``HostLeaseTable`` knows, for dumps and tests.
public struct HostLeaseSnapshot: Hashable, Sendable {
    /// One shared folder.
    public struct Folder: Hashable, Sendable {
        /// The folder.
        public var folder: ItemPath
        /// Where the host is with it.
        public var state: HostLeaseState
        /// Local claims wait for it.
        public var wanted: Bool
        /// Another host waits for it.
        public var otherHostWaiting: Bool
    }

    /// The session.
    public var session: HostSessionState
    /// Every folder the host has dealt with, by path.
    public var folders: [Folder]
}
