import FCCore
import NIOCore

/// What the cluster adapter keeps to carry presenters across hosts (issue 41; docs/ARCHITECTURE.md §15.1). A value in
/// ``ClusterHost``, read and written only on its loop.
///
/// Every table is bounded: by this host's presenters, by the other hosts' published presenters (each host's router
/// limit applies to its stand-in client), by ``maximumOpenRelays``, or by the sessions alive in etcd (the mail's
/// series per session, checked every two times to live: ClusterHost+MailSweep.swift).
struct PresenterExchange {
    // MARK: This host's presenters, published

    /// This host's presenters in shared folders: the record the other hosts read, and its key in etcd under the
    /// current session (`nil` until it has one).
    var published: [PresenterID: (record: PresenceRecord, key: String?)] = [:]
    /// What every presenter of this daemon implements (`PresenterCallbacks.rawValue`, package or not), for one that
    /// moves into a shared folder.
    var callbacks: [PresenterID: (UInt32, Bool)] = [:]
    /// Puts and deletes of presence keys, in order, one at a time (a delete must never overtake its put: a key left
    /// behind would stand for a presenter that never answers until the session ends).
    var presenceQueue: [(key: String, value: [UInt8]?)] = []
    var presenceSending = false

    // MARK: The other hosts' presenters, in this arbiter

    /// A stand-in client per session of another host (`<host, hex>/<lease, hex>`): the host's name, its lease, the
    /// client, and how many presenters it stands in for now (it leaves at zero).
    var remoteSessions: [String: (host: String, lease: String, client: ClientID, presenters: Int)] = [:]
    /// The session of each stand-in client (for the mail of its presenters).
    var sessionOfClient: [ClientID: String] = [:]
    /// Each other host's presence key this arbiter knows: its session and the presenter's id there (also its id in
    /// the stand-in client).
    var proxies: [String: (session: String, presenter: UInt64)] = [:]

    // MARK: Mail

    /// Letters waiting to go, per receiving session (`<host, hex>/<lease, hex>`), one put in flight per receiver so
    /// that they arrive in order.
    var outbox: [String: [MailItem]] = [:]
    /// Puts on their way, per receiving session (at most ``putsInFlight``).
    var inFlight: [String: Int] = [:]
    /// The number of the last put to each receiving session: a series of its own per receiver, from 1.
    var sequences: [String: Int] = [:]
    /// The next number this host reads from each sender's series (`<own lease>/<sender host>/<sender lease>`), the
    /// batches that came ahead of it, and the series whose wait for a missing number is running.
    var expected: [String: Int] = [:]
    var early: [String: [Int: MailBatch]] = [:]
    var gapTimers: Set<String> = []
    /// The last letter read per sender's session (its keys' prefix), until the range up to it is deleted; and the
    /// prefixes whose delete is on its way (one at a time each).
    var readUpTo: [String: String] = [:]
    var deletingRead: Set<String> = []
    /// Relayed messages waiting for this host's presenter: the relay request id → the sender's session and request.
    var relayOrigin: [RequestID: (session: String, request: UInt64, relinquish: Bool, presenter: UInt64)] = [:]
    /// A relinquish relayed and answered with a reacquirer: `<sender session>#<sender's request>` → the relay request
    /// id the presenter's client knows the reacquirer by, and the presenter.
    var reacquirers: [String: (relay: RequestID, presenter: UInt64)] = [:]
    var sweepScheduled = false
    /// The last ``maximumOwnLeases`` session leases this process opened (hexadecimal), the oldest first: mail for
    /// any of them is for its presenters (replies to what was asked under an earlier session still come there).
    var ownLeases: [String] = []
    /// Whether a check of the sessions the mail keeps series for is scheduled or on its way
    /// (ClusterHost+MailSweep.swift).
    var mailSweepScheduled = false
    var mailSweepTask: Scheduled<Void>?
    /// The most own sessions kept: an earlier one's series go, and mail for it counts as an earlier process's.
    static let maximumOwnLeases = 16
    /// The most batches of one series kept ahead of a missing one; past it, the missing ones are skipped at once.
    static let maximumEarly = 16
    /// The most relayed requests and reacquirers kept; past it, a new one is answered at once (and logged).
    static let maximumOpenRelays = 65_536
    /// The most letters waiting for one receiver; past it, letters are dropped (and logged): the receiver's
    /// presenters count as not answering.
    static let maximumOutbox = 4_096
    /// The most letters in one put.
    static let lettersPerPut = 64
    /// The most puts on their way to one receiver: a letter does not wait for the put before it to be answered.
    static let putsInFlight = 4

    // MARK: Direct mail (ClusterHost+PeerMail.swift)

    /// This process's token, shown by every sender to its mailbox.
    let token = ClusterHost.newToken()
    /// This host's mailbox, once it listens; the listening channel.
    var mailbox: MailboxRecord?
    var listener: (any Channel)?
    /// The other hosts' mailboxes, per session (`<host, hex>/<lease, hex>`).
    var mailboxes: [String: MailboxRecord] = [:]
    /// The connection to each receiving session's mailbox.
    var links: [String: PeerLink] = [:]
    /// Connects begun so far (each link's attempt is known by its number).
    var connects = 0
    /// The connections other hosts opened to this host's mailbox.
    var peers: [ObjectIdentifier: any Channel] = [:]
    /// Letters sent, each way, since the daemon started (fcdump).
    var lettersDirect = 0
    var lettersThroughEtcd = 0
    /// The most connections to this host's mailbox at once.
    static let maximumPeers = 256
    /// The largest frame a connection may carry: a batch of ``lettersPerPut`` letters, each with two paths.
    static let maximumFrame = 4 << 20
    /// How long a connection may take to show its token.
    static let helloTimeout = TimeAmount.seconds(5)
    /// The most bytes a connection may send before its hello is accepted, and the largest frame a sender reads.
    static let maximumHello = 4_096
    /// How long a sender waits for a connection and its acceptance before its letters go through etcd.
    static let greetingTimeout = TimeAmount.seconds(1)
    /// How long a sender's connection may take nothing (a full socket buffer) before it counts as broken.
    static let stalledLink = TimeAmount.seconds(2)
    /// A sender closes a connection it wrote nothing on for this long; a receiver one it read nothing on for
    /// ``idlePeer`` (its sender's host is gone).
    static let idleLink = TimeAmount.seconds(30)
    static let idlePeer = TimeAmount.seconds(90)

    /// A connection to another host's mailbox.
    enum PeerLink {
        /// The connect with this number (``connects``) is on its way.
        case connecting(Int)
        case open(any Channel)
        /// Failed or broke: letters go through etcd until then.
        case broken(until: NIODeadline)
    }

    // MARK: The scan for changes made on other hosts (`--shared-scan-interval`)

    /// The state of each published presenter's item at the last scan.
    var scanStamps: [PresenterID: ItemStamp] = [:]
    /// Presenters another host told of a change since the last scan: the next scan takes their state as it finds it,
    /// and reports nothing (they heard already).
    var scanQuiet: Set<PresenterID> = []
    /// Presenters another host asked to relinquish, until it tells them what happened (or a minute passed): the scan
    /// leaves them alone, so that the other host's coordinated change is not reported a second time.
    var scanHeld: [PresenterID: NIODeadline] = [:]
    var scanTask: Scheduled<Void>?
    var scanning = false

    // MARK: Watches

    var presenceWatch: Task<Void, Never>?
    var mailWatch: Task<Void, Never>?
    var mailboxWatch: Task<Void, Never>?
}
