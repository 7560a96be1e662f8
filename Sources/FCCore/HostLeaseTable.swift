/// One host's host leases on shared folders (issue 40; docs/SEMANTICS.md §14): a pure state machine, driven by its
/// host's events (``HostLeaseEvent``) at the host's time, that answers with what the host should do
/// (``HostLeaseEffect``). The host (the daemon's cluster adapter) carries the effects out against the store (etcd)
/// and its arbiter, and reports back; the seeded simulator drives several tables against a model store.
///
/// The rules:
///
/// - **Alone, locally.** A local claim in a shared folder the host does not hold puts the host's key for it
///   (``HostLeaseEffect/putKey(folder:)``); once no key of a lower revision remains, the host holds the folder and
///   admits its claims there (``HostLeaseEffect/admit(folder:revision:)``) until another host asks. Holding costs
///   nothing per claim.
/// - **Recall.** When another host's key comes after the host's, the host keeps the folder for the minimum hold
///   time, then holds its new claims back, lets the granted ones end (``HostLeaseEffect/drain(folder:)``), and deletes
///   its key. Claims that arrive meanwhile put the key again, behind the other host's: revision order, so no host
///   starves.
/// - **Fence.** Every event is judged first against the session's fence: the send time of the last renewal the store
///   acknowledged, plus the time to live, less the margin (``HostLeasePolicy``). The store cannot expire the session
///   before that moment, and another host is granted the folder only after it expires. At the fence, or when the
///   session is lost, the host stops admitting in every shared folder, reports the claims granted there as lost,
///   fails the waiting ones, and replaces its session; a late acknowledgement does not revive it.
/// - **No session, no shared claim.** While the first session opens, claims in shared folders wait; without a
///   session they fail at once, with the reason.
///
/// Per event, the work is O(folders the event names); a fence is O(folders dealt with).
///
/// - Important: Not thread-safe: one owner calls it, from one thread or under one lock.
public final class HostLeaseTable {
    /// The settings.
    public let policy: HostLeasePolicy
    /// Where the session stands: the host checks the fence with it before anything that could grant (O(1)).
    public private(set) var session: HostSessionState = .connecting
    private var folders: [ItemPath: FolderRecord] = [:]
    private var effects: [HostLeaseEffect] = []

    private struct FolderRecord {
        var state: HostLeaseState = .idle
        var wanted = false
        var otherHostWaiting = false
    }

    /// A table for a host that has not opened its session yet.
    public init(policy: HostLeasePolicy = HostLeasePolicy()) {
        self.policy = policy
    }

    /// Whether the host admits local claims in `folder` now: it holds the folder and its session is live. O(1).
    public func admits(_ folder: ItemPath, at now: Duration) -> Bool {
        guard case .live(let fenceAt) = session, now < fenceAt else { return false }
        switch folders[folder]?.state {
        case .held?, .recallDue?: return true
        default: return false
        }
    }

    /// Handles `event` at `now` (the host's monotonic time) and returns what the host should do, in order.
    public func handle(_ event: HostLeaseEvent, at now: Duration) -> [HostLeaseEffect] {
        effects = []
        checkFence(at: now)
        switch event {
        case .sessionStarted(let sentAt):
            sessionStarted(sentAt: sentAt, at: now)
        case .sessionRenewed(let sentAt):
            guard case .live(let fenceAt) = session else { break }  // Lost or fenced: a late answer revives nothing.
            let renewed = sentAt + policy.sessionTTL - policy.fenceMargin
            if renewed > fenceAt {
                session = .live(fenceAt: renewed)
                effects.append(.cancelTimer(.fence))
                effects.append(.startTimer(.fence, after: renewed - now))
            }
        case .sessionLost(let reason):
            if case .unavailable = session { break }
            fence(reason)
        case .claimArrived(let folder):
            claimArrived(in: folder)
        case .localClaimsEnded(let folder):
            guard case .draining? = folders[folder]?.state else { break }
            folders[folder]?.state = .releasing
            effects.append(.deleteKey(folder: folder))
        case .keyCreated(let folder, let revision):
            guard case .requested? = folders[folder]?.state else { break }
            folders[folder]?.state = .queued(revision: revision)
        case .keyFailed(let folder, let reason):
            guard case .requested? = folders[folder]?.state else { break }
            folders[folder] = FolderRecord()
            effects.append(
                .failClaims(folder: folder, reason: "the cluster did not take this host's request: \(reason)")
            )
        case .becameHolder(let folder, let revision):
            becameHolder(folder, revision: revision, at: now)
        case .otherHostWaiting(let folder, _, let revision):
            otherHostWaiting(folder, after: revision, at: now)
        case .noHostWaiting(let folder, let revision):
            noHostWaiting(folder, after: revision)
        case .keyDeleted(let folder):
            guard case .releasing? = folders[folder]?.state else { break }
            folders[folder]?.state = .idle
            folders[folder]?.otherHostWaiting = false
            if folders[folder]?.wanted == true, case .live = session {
                folders[folder]?.state = .requested
                effects.append(.putKey(folder: folder))
            }
        case .timerFired(.fence):
            break  // checkFence(at:) did what is due.
        case .timerFired(.minimumHold(let folder)):
            guard case .recallDue(let revision, _)? = folders[folder]?.state else { break }
            drain(folder, revision: revision)
        }
        return effects
    }

    /// A picture of the table, folders by path.
    public func snapshot() -> HostLeaseSnapshot {
        HostLeaseSnapshot(
            session: session,
            folders: folders.sorted { $0.key < $1.key }.map {
                .init(
                    folder: $0.key,
                    state: $0.value.state,
                    wanted: $0.value.wanted,
                    otherHostWaiting: $0.value.otherHostWaiting
                )
            }
        )
    }

    // MARK: Rules

    private func sessionStarted(sentAt: Duration, at now: Duration) {
        let fenceAt = sentAt + policy.sessionTTL - policy.fenceMargin
        guard now < fenceAt else {
            fence("the cluster's session answered too late to be of use (after its time to live)")
            return
        }
        session = .live(fenceAt: fenceAt)
        effects.append(.startTimer(.fence, after: fenceAt - now))
        // Claims that waited for the session ask for their folders now.
        for (folder, record) in folders.sorted(by: { $0.key < $1.key }) where record.wanted {
            guard case .idle = record.state else { continue }
            folders[folder]?.state = .requested
            effects.append(.putKey(folder: folder))
        }
    }

    private func claimArrived(in folder: ItemPath) {
        switch session {
        case .unavailable(let reason):
            effects.append(.failClaims(folder: folder, reason: reason))
            return
        case .connecting:
            folders[folder, default: FolderRecord()].wanted = true
            return
        case .live:
            break
        }
        var record = folders[folder, default: FolderRecord()]
        switch record.state {
        case .idle:
            record.state = .requested
            record.wanted = true
            effects.append(.putKey(folder: folder))
        case .requested, .queued, .draining, .releasing:
            record.wanted = true
        case .held, .recallDue:
            break  // Admitted: the claim was granted locally.
        }
        folders[folder] = record
    }

    private func becameHolder(_ folder: ItemPath, revision key: Int64, at now: Duration) {
        guard case .queued(let revision)? = folders[folder]?.state, revision == key else { return }
        folders[folder]?.wanted = false
        effects.append(.admit(folder: folder, revision: revision))
        if folders[folder]?.otherHostWaiting == true {
            recallWhenDue(folder, revision: revision, since: now, at: now)
        } else {
            folders[folder]?.state = .held(revision: revision, since: now)
        }
    }

    private func otherHostWaiting(_ folder: ItemPath, after key: Int64, at now: Duration) {
        guard var record = folders[folder] else { return }
        switch record.state {
        case .queued(let revision), .held(let revision, _), .recallDue(let revision, _), .draining(let revision):
            guard revision == key else { return }  // About a key of a replaced session.
        case .idle, .requested, .releasing:
            return  // No key of this session, or its revision not known yet: the key's standing follows keyCreated.
        }
        record.otherHostWaiting = true
        folders[folder] = record
        if case .held(let revision, let since) = record.state {
            recallWhenDue(folder, revision: revision, since: since, at: now)
        }
    }

    /// Nobody waits after the key `key` any more: the folder is no longer given up for another host, unless its
    /// drain began (the claims held back then are admitted again when the key is put anew). Until stop 68 the flag
    /// stayed set, and the host later gave the folder up for nobody: its leases recalled, its key deleted and put
    /// again.
    private func noHostWaiting(_ folder: ItemPath, after key: Int64) {
        guard var record = folders[folder], record.otherHostWaiting else { return }
        switch record.state {
        case .queued(let revision), .held(let revision, _), .recallDue(let revision, _), .draining(let revision):
            guard revision == key else { return }  // About a key of a replaced session.
        case .idle, .requested, .releasing:
            return
        }
        record.otherHostWaiting = false
        if case .recallDue(let revision, let since) = record.state {
            record.state = .held(revision: revision, since: since)
            effects.append(.cancelTimer(.minimumHold(folder)))
        }
        folders[folder] = record
    }

    /// Gives `folder` up once it has been held for the minimum hold time.
    private func recallWhenDue(_ folder: ItemPath, revision: Int64, since: Duration, at now: Duration) {
        let due = since + policy.minimumHold
        guard now < due else {
            drain(folder, revision: revision)
            return
        }
        folders[folder]?.state = .recallDue(revision: revision, since: since)
        effects.append(.startTimer(.minimumHold(folder), after: due - now))
    }

    private func drain(_ folder: ItemPath, revision: Int64) {
        folders[folder]?.state = .draining(revision: revision)
        effects.append(.holdBack(folder: folder))
        effects.append(.drain(folder: folder))
    }

    /// Fences the host if its session may have expired in the store by `now`.
    private func checkFence(at now: Duration) {
        guard case .live(let fenceAt) = session, now >= fenceAt else { return }
        fence("this host could not renew its cluster session within its time to live (\(policy.sessionTTL))")
    }

    /// Stops deciding in every shared folder: held ones are held back and their granted claims reported lost,
    /// waiting claims fail; the session is replaced.
    private func fence(_ reason: String) {
        let message = "cluster unreachable: \(reason)"
        session = .unavailable(reason: message)
        effects.append(.cancelTimer(.fence))
        // Every folder is held back before any waiting claim is failed: a failed claim may have held back another
        // claim in a folder still admitted, which would then be granted between the two.
        let sorted = folders.sorted(by: { $0.key < $1.key })
        for (folder, record) in sorted {
            switch record.state {
            case .held, .recallDue:
                effects.append(.cancelTimer(.minimumHold(folder)))
                effects.append(.holdBack(folder: folder))
                effects.append(.claimsLost(folder: folder, reason: message))
            case .draining:
                // Closed already, but passable by nested claims while it drains: held back whole now.
                effects.append(.holdBack(folder: folder))
                effects.append(.claimsLost(folder: folder, reason: message))
            case .idle, .requested, .queued, .releasing:
                break
            }
        }
        for (folder, record) in sorted where record.wanted {
            effects.append(.failClaims(folder: folder, reason: message))
        }
        folders = [:]
        effects.append(.replaceSession)
    }
}
