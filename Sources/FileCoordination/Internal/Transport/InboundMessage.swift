import FCCore
import FCProtocol

/// What a transport hands the client: the client's own vocabulary, the same whether the daemon or the in-process
/// arbiter sent it. Failures arrive already mapped to the caller's error (``ClaimFailureMapping``), so what handles
/// these never sees the wire's failure kinds. (The arbiters a client runs itself, in process and in its leases, hand
/// it their effects directly: ``LocalArbiterTransport`` and ``LeaseTable`` turn them into these, or into outcomes.)
///
/// A value type: `Sendable`, handed from a transport's reading thread (or delivery queue) to the client.
enum InboundMessage: Sendable {
    /// The claim was granted; `paths` are its items' canonical paths as the arbiter knows them now.
    case granted(ClaimID, paths: [ItemPath])
    /// The claim failed; the error is the one the caller gets.
    case failed(ClaimID, any Error)
    /// A message for one of this client's presenters.
    case presenter(PresenterMessage)
    /// The daemon's answer to a version store request (issue 15).
    case versionReply(VersionStoreReply)
    /// The daemon of connection `on` granted this client a lease on `subtree` (issue 23; docs/SEMANTICS.md §13).
    /// Lease ids are the daemon's: leases are known by their connection and id together.
    case leaseGranted(LeaseID, subtree: ItemPath, on: DaemonTransport)
    /// The daemon of connection `on` wants the lease back.
    case leaseRecalled(LeaseID, on: DaemonTransport)
    /// The claim lies inside lease `lease` of this client: decide it there (or send it again if the lease is gone).
    case claimInsideLease(ClaimID, lease: LeaseID, on: DaemonTransport)
    /// File progress news from the daemon of connection `on` (issue 44).
    case progress(ProgressNews, on: DaemonTransport)
    /// Items of a live query (issue 44), from the daemon of connection `on`.
    case queryItems(Filecoord_V1_QueryItems, on: DaemonTransport)
}
