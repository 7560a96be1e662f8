/// The protocol version and the handshake rule (docs/PROTOCOL.md, "Handshake and versions").
///
/// A client's first frame is `Hello` with its ``current`` version. The daemon accepts a version in its
/// ``supported`` range and answers `HelloReply` with that version; otherwise it answers `Refused`, naming both
/// versions, and closes the connection. Version 1 is the only version so far, so today the rule is equality.
///
/// Stateless: usable from any thread.
public enum ProtocolVersion {
    /// The version this build speaks.
    public static let current: UInt32 = 1

    /// The additions made within ``current`` that this build's daemon understands, announced in
    /// `HelloReply.revision`: a client sends a client-to-daemon message added within the version only to a daemon
    /// whose revision is at least the message's (docs/PROTOCOL.md, section 2). 1: `PreparationReturned`. 2: `Ping`
    /// and `Pong` (the keepalive, issue 28). 3: leases (`LeaseReturned`, `Hello.answers_recalls`; issue 23). 4: a
    /// claim's longest hold (`RequestClaim.maximum_hold_milliseconds`; issue 42), which an older daemon ignores. 5: a
    /// claim that must not wait (`RequestClaim.nonblocking`, `ClaimFailed.FAILURE_KIND_WOULD_WAIT`; issue 43). 6:
    /// file progress (`ProgressPublish` and the messages after it) and live queries (`QueryStart`, `QueryStop`,
    /// `QueryItems`; issue 44). 7: lease counters for a client without a thread (`Hello.lease_counters`,
    /// `LeaseGranted.counters_file`, `LeaseCounterIdle`; issue 42), which an older daemon ignores (no lease). 8: a
    /// live query's result count (`QueryResults`, for fcdump; issue 44). 9: part of a live query's tree not watched
    /// (`QueryWatchUnavailable`, daemon to client: a client before it ignores the message). 10: the daemon refuses a
    /// client whose `Hello.path_rules` are not its own (a daemon before it ignores the field). 11: every folder of a
    /// live query's tree watched again (`QueryWatchAvailable`, daemon to client: a client before it ignores it). 12: the
    /// daemon folds the names of a client that leaves it to the daemon (`Hello.daemon_folds_names`: the preload
    /// library), which a daemon before it keeps as sent. 13: a presenter's directory watched again after it was told
    /// it could not be (`WatchAvailable`, daemon to client: a client before it ignores it).
    public static let revision: UInt32 = 13

    /// The revision that added `PreparationReturned`.
    public static let preparationReturnedRevision: UInt32 = 1

    /// The revision that added `Ping` (answered by `Pong`): a client sends it only to a daemon of this revision or
    /// later.
    public static let keepaliveRevision: UInt32 = 2
    /// The revision that added leases: a client returns leases (`LeaseReturned`) only to a daemon of at least this
    /// revision, which is also the only kind that grants them.
    public static let leasesRevision: UInt32 = 3
    /// The revision that honours `RequestClaim.maximum_hold_milliseconds` (an older daemon ignores the field: the
    /// claim then holds until its client finishes it).
    public static let maximumHoldRevision: UInt32 = 4
    /// The revision that honours `RequestClaim.nonblocking`: an older daemon would ignore the field and let the claim
    /// wait, so a client sends a claim that must not wait only to a daemon of this revision or later, and fails it
    /// itself otherwise.
    public static let nonblockingRevision: UInt32 = 5
    /// The revision that added file progress (`ProgressPublish`, `ProgressSubscribe` and the rest of docs/PROTOCOL.md
    /// section 12): a client sends them only to a daemon of this revision or later.
    public static let progressRevision: UInt32 = 6
    /// The revision that added lease counters (`Hello.lease_counters`, `LeaseCounterIdle`; docs/PROTOCOL.md section
    /// 10.1): the preload library sends `LeaseCounterIdle` only for a lease a daemon of this revision granted it.
    public static let leaseCountersRevision: UInt32 = 7
    /// The revision that added live queries of folder trees (`QueryStart`, `QueryStop`, `QueryItems`; docs/PROTOCOL.md
    /// section 13).
    public static let queriesRevision: UInt32 = 6
    /// The revision that added `QueryResults` (a query's result count, for fcdump): a client sends it only to a
    /// daemon of this revision or later.
    public static let queryResultsRevision: UInt32 = 8

    /// The versions this build's daemon accepts from clients.
    public static let supported: ClosedRange<UInt32> = 1...1

    /// Decides a client's `Hello`: the version to speak, or the refusal to send.
    ///
    /// - Parameters:
    ///   - hello: the client's first frame.
    ///   - supported: the versions the daemon accepts (``supported`` unless a test says otherwise).
    ///   - daemonVersion: the daemon's own version, named in a refusal (``current``).
    ///   - pathRules: the daemon's path rules (FCFileSystemPolicy's `PathRules.revision`): a client that states
    ///     others in `Hello.path_rules` is refused; `nil`: not checked.
    /// - Returns: `.accept(version:)` with the version both ends speak from now on, or `.refuse` with the `Refused`
    ///   message whose reason names the client's and the daemon's versions (or path rules) and what to do.
    public static func check(
        _ hello: Filecoord_V1_Hello,
        supported: ClosedRange<UInt32> = ProtocolVersion.supported,
        daemonVersion: UInt32 = ProtocolVersion.current,
        pathRules: UInt32? = nil
    ) -> HandshakeVerdict {
        let clientVersion = hello.protocolVersion
        if supported.contains(clientVersion) {
            if let pathRules, hello.pathRules != 0, hello.pathRules != pathRules {
                return .refuse(pathRulesRefusal(hello, daemonRules: pathRules, daemonVersion: daemonVersion))
            }
            return .accept(version: clientVersion)
        }
        let accepted =
            supported.lowerBound == supported.upperBound
            ? "version \(supported.lowerBound)" : "versions \(supported.lowerBound) to \(supported.upperBound)"
        let advice: String
        if clientVersion == 0 {
            advice = "the client sent no protocol version; it is not a FileCoordination client"
        } else {
            advice = releaseAdvice(clientIsNewer: clientVersion > supported.upperBound)
        }
        var refused = Filecoord_V1_Refused()
        refused.daemonProtocolVersion = daemonVersion
        refused.reason =
            "protocol version mismatch: client \"\(hello.clientName)\" (pid \(hello.pid)) speaks protocol version "
            + "\(clientVersion), filecoordd speaks protocol version \(daemonVersion) (accepts \(accepted)); \(advice)"
        return .refuse(refused)
    }
}

extension ProtocolVersion {
    /// What a refused client's user is to do when the client and filecoordd come from different releases.
    static func releaseAdvice(clientIsNewer: Bool) -> String {
        clientIsNewer
            ? "the client is newer than filecoordd; restart filecoordd from the client's release"
            : "the client is older than filecoordd; rebuild the application with the daemon's release"
    }

    /// The refusal of a client whose path rules are not the daemon's.
    static func pathRulesRefusal(
        _ hello: Filecoord_V1_Hello,
        daemonRules: UInt32,
        daemonVersion: UInt32
    ) -> Filecoord_V1_Refused {
        let advice = releaseAdvice(clientIsNewer: hello.pathRules > daemonRules)
        var refused = Filecoord_V1_Refused()
        refused.daemonProtocolVersion = daemonVersion
        refused.reason =
            "path rules mismatch: client \"\(hello.clientName)\" (pid \(hello.pid)) makes canonical paths by rules "
            + "revision \(hello.pathRules), filecoordd by revision \(daemonRules), so that the client's claims and "
            + "other clients' on one item might not meet; \(advice)"
        return refused
    }
}

/// The daemon's decision on a client's `Hello`. A value: usable from any thread.
public enum HandshakeVerdict: Hashable, Sendable {
    /// The handshake succeeded: answer `HelloReply` with this version and speak it from now on.
    case accept(version: UInt32)
    /// The versions do not match: send this `Refused` and close the connection.
    case refuse(Filecoord_V1_Refused)
}

extension Filecoord_V1_Hello {
    /// A `Hello` for this build's ``ProtocolVersion/current`` version.
    ///
    /// - Parameters:
    ///   - clientName: a short process name, for logs and `fcdump`.
    ///   - pid: the client's process id as it sees it (the daemon trusts `SO_PEERCRED` instead).
    ///   - answersRecalls: `true` when the client answers `LeaseRecalled`, so that the daemon may grant it leases.
    public init(clientName: String, pid: Int32, answersRecalls: Bool = false) {
        self.init()
        self.protocolVersion = ProtocolVersion.current
        self.clientName = clientName
        self.pid = pid
        self.answersRecalls = answersRecalls
    }
}

extension Filecoord_V1_HelloReply {
    /// A `HelloReply` accepting `version`, announcing the daemon's pid and limits.
    public init(version: UInt32, daemonPID: Int32, limits: ProtocolLimits) {
        self.init()
        self.protocolVersion = version
        self.daemonPid = daemonPID
        self.limits = Filecoord_V1_Limits(limits)
        self.revision = ProtocolVersion.revision
    }
}
