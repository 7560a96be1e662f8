/// What a host knows of one shared folder's keys in the cluster's store (issue 40; docs/SEMANTICS.md §14), and the
/// ``HostLeaseEvent``s it tells the host's ``HostLeaseTable`` from it.
///
/// The host keeps a copy of every shared folder's keys (``known``, in create order), as etcd clients keep a cache:
/// one read of all the cluster's keys (a *list*, linearizable, answered at a store revision R), then the store's
/// watch from revision R + 1, which reports every put and delete after the list, in order, once. From the copy:
/// - its key's revision, once its put was acknowledged and the copy shows the key
///   (``HostLeaseEvent/keyCreated(folder:revision:)``; nothing is said of a key whose put has not returned, so that a
///   put that fails after etcd applied it never leaves a host holding on a key it then deletes, and no retry of the
///   put is still out when the host deletes the key);
/// - that it holds the folder once no key is ahead of its own (``HostLeaseEvent/becameHolder(folder:revision:)``);
/// - that another host waits once a key comes after its own
///   (``HostLeaseEvent/otherHostWaiting(folder:host:after:)``), and that nobody does once the last such key went
///   (``HostLeaseEvent/noHostWaiting(folder:after:)``);
/// - that its key is gone (``HostLeaseEvent/sessionLost(_:)``: the host fences), when the watch reports its delete
///   while the host did not delete it, or a list issued after its put was acknowledged lacks it.
///
/// **Why the copy is safe to grant on.** The list is complete at R, and the watch from R + 1 misses nothing, so the
/// copy is the store's keys as of the last change reported; the store can only be ahead of it. Every put makes a key
/// of a new name, and a key created later than this host's comes after it (a put that etcd applies late, even one
/// that re-creates a deleted name, gets a later revision): keys ahead of this host's key only leave, and the copy
/// shows one as gone only after the store deleted it. A hand-over is
/// then the waiting host's put, the holder's delete and their two watch reports, with no read on the way (the cluster
/// benchmarks' recall).
///
/// A watch that ended is started again from the revision after the last change it reported, which misses nothing;
/// when etcd can no longer serve that revision (compacted), the host lists again and watches from there. A watch
/// can also stall without ending (a connection that stops moving): while it has a key, the host lists the keys again
/// every third of its session's time to live. The copy remembers the store revision it reflects (``revision``), so
/// that a list or a change older than what it shows is ignored: the copy never goes back. One revision may carry
/// several changes (etcd deletes an expired session's keys in one transaction, `del --prefix` deletes many), which
/// the watch reports one by one: each change of the revision the copy reached is applied, unless a list answered at
/// that revision already shows them all (``listedAt``). Until stop 67 only the first was: the others' keys stayed
/// ahead in the copy (claims waited for ever), and a host whose own key went with them did not fence.
///
/// - Important: A value; not thread-safe (its host's loop owns it).
public struct SharedFolderKeys: Sendable {
    /// A key in the store: its name, the revision that created it, and the host it belongs to (its value).
    public struct Key: Hashable, Sendable {
        /// The key's full name in the store (unique per put).
        public var name: String
        /// The revision of the put that created it: the order of hosts (the oldest first).
        public var createRevision: Int64
        /// The host that put it.
        public var host: String

        /// A key of `host` named `name`, created at `createRevision`.
        public init(name: String, createRevision: Int64, host: String) {
            self.name = name
            self.createRevision = createRevision
            self.host = host
        }
    }

    /// One change the store's watch reported under the folder.
    public enum Change: Hashable, Sendable {
        /// A key was created (a put: the cluster's keys are put once).
        case put(Key)
        /// The key named so was deleted: by its host, or with its session (expired, revoked).
        case deleted(name: String)
    }

    /// This host's key in the folder.
    public struct Own: Hashable, Sendable {
        /// Its name.
        public var name: String
        /// Its create revision, once the copy shows it.
        public var revision: Int64?
        /// The serial of the first list issued after its put was acknowledged (a list issued before may not show it);
        /// `Int.max` while the put is out.
        public var listsFrom: Int = .max
        /// Its delete is out (the folder handed back): the copy says nothing more about it, and the delete's answer
        /// reports it gone.
        public var leaving = false
        /// The host was last told that another host waits after this key (so that it hears when nobody does).
        public var toldWaiting = false
    }

    /// The folder.
    public let folder: ItemPath
    /// This host's name (the value of its keys).
    public let host: String
    /// This host's key, if it has one there (in this session).
    public private(set) var own: Own?
    /// The folder's keys in create order, from the last list and the watch since; `nil` before the first list.
    public private(set) var known: [Key]?
    /// The store revision the copy reflects: the last list's, or the last change's applied since.
    public private(set) var revision: Int64 = 0
    /// The revision of the last list the copy took: a change of that revision or earlier is in it.
    public private(set) var listedAt: Int64 = 0
    /// A change of the watch message being read moved this host's standing: told after the message's last change.
    private var standingOwed = false
    /// A watch message is being read (a change of it came, its last not yet): a put's answer meanwhile leaves where
    /// this host stands to the message's end too.
    private var messageOpen = false

    /// The keys of `folder`, seen by `host`, before they are listed.
    public init(folder: ItemPath, host: String) {
        self.folder = folder
        self.host = host
    }

    /// The host whose key comes first (for the dump: whom a waiting claim waits for).
    public var firstHost: String? { known?.first?.host }

    /// The names of the keys ahead of this host's, once the copy shows it.
    public var ahead: [String]? {
        guard let known, let name = own?.name, let index = known.firstIndex(where: { $0.name == name }) else {
            return nil
        }
        return known[..<index].map(\.name)
    }

    /// This host sent the put of a key named `name` (it replaces any key it had).
    public mutating func putSent(name: String) {
        own = Own(name: name)
    }

    /// The put of `name` was acknowledged; lists from `serial` on must show the key. Returns `nil` when `name` is
    /// not this host's key any more (the answer is about a key it has since replaced or given up), else what the
    /// copy says of it now (nothing until the copy shows it).
    public mutating func putAcknowledged(name: String, listsFrom serial: Int) -> [HostLeaseEvent]? {
        guard let mine = own, mine.name == name else { return nil }
        own?.listsFrom = serial
        guard !mine.leaving, let key = known?.first(where: { $0.name == name }) else { return [] }
        // Between two changes of one watch message: where it stands is told after the message's last.
        guard !messageOpen else {
            standingOwed = true
            return created(key)
        }
        return telling(created(key) + standing())
    }

    /// This host sent the delete of its key: returns its name, or `nil` when it has none.
    public mutating func leave() -> String? {
        guard own != nil else { return nil }
        own?.leaving = true
        return own?.name
    }

    /// The key named `name` is no longer this host's (its delete was answered, its put failed, the session went).
    /// Returns whether it was.
    @discardableResult
    public mutating func forget(name: String) -> Bool {
        guard own?.name == name else { return false }
        own = nil
        return true
    }

    /// The session was replaced: this host has no key any more (its old session's keys stay in the copy until the
    /// store deletes them).
    public mutating func sessionReplaced() {
        own = nil
    }

    /// A list of the cluster's keys, the `serial`th this host issued, answered at store revision `revision` with
    /// this folder's `keys` (in any order): they replace the copy, unless it already reflects a later revision (one
    /// at the copy's revision holds every change of it, some of which the watch may not have reported yet).
    public mutating func listed(_ keys: [Key], serial: Int, revision: Int64) -> [HostLeaseEvent] {
        guard known == nil || revision >= self.revision else { return [] }
        known = keys.sorted { $0.createRevision < $1.createRevision }
        self.revision = revision
        listedAt = revision
        standingOwed = false
        guard let mine = own, !mine.leaving, mine.listsFrom != .max else { return [] }
        guard let key = known?.first(where: { $0.name == mine.name }) else {
            // Issued after the put was acknowledged, a list that does not show the key means it is gone: deleted by
            // hand, or by a late delete. This host cannot tell what another host was granted since: it fences.
            return serial >= mine.listsFrom ? fence() : []
        }
        return telling(created(key) + standing())
    }

    /// A change the store's watch reported under the folder, made at store revision `revision`. `endsBatch`: no
    /// other change of the same watch message follows (etcd sends a revision's changes in one message): until then
    /// the copy takes the changes but says where this host stands only after the last, so that a revision that
    /// deletes the keys ahead and this host's own (an expired session's keys, `del --prefix`) fences it without
    /// telling it holder first.
    public mutating func watched(_ change: Change, revision: Int64, endsBatch: Bool = true) -> [HostLeaseEvent] {
        var events = apply(change, revision: revision)
        messageOpen = !endsBatch
        if events.contains(where: { if case .sessionLost = $0 { true } else { false } }) {
            standingOwed = false
            return events
        }
        if events.contains(where: \.isStanding) { standingOwed = true }
        events.removeAll(where: \.isStanding)
        return endsBatch ? events + endBatch() : events
    }

    /// `events`, as told to the host: notes whether it now knows of a host waiting after its key.
    private mutating func telling(_ events: [HostLeaseEvent]) -> [HostLeaseEvent] {
        for event in events {
            switch event {
            case .otherHostWaiting: own?.toldWaiting = true
            case .noHostWaiting: own?.toldWaiting = false
            default: break
            }
        }
        return events
    }

    /// The watch message being read ended (``watched(_:revision:endsBatch:)``): where this host stands, if a change
    /// of it moved that.
    public mutating func endBatch() -> [HostLeaseEvent] {
        messageOpen = false
        guard standingOwed else { return [] }
        standingOwed = false
        return telling(standing())
    }

    /// A change applied to the copy: what it says, where this host stands included.
    private mutating func apply(_ change: Change, revision: Int64) -> [HostLeaseEvent] {
        // Not listed yet (the watch starts after the list), already in the copy (a list answered at or after it), or
        // older than a change applied. A change applied twice does nothing more: a put is known by its name, and a
        // deleted key is gone.
        guard known != nil, revision > listedAt, revision >= self.revision else { return [] }
        self.revision = revision
        switch change {
        case .put(let key):
            guard !(known?.contains { $0.name == key.name } ?? false) else { return [] }
            let index = known?.firstIndex { $0.createRevision > key.createRevision } ?? known?.count ?? 0
            known?.insert(key, at: index)
            guard let mine = own, !mine.leaving, mine.listsFrom != .max else { return [] }
            return (key.name == mine.name ? created(key) : []) + standing()
        case .deleted(let name):
            known?.removeAll { $0.name == name }
            guard let mine = own, !mine.leaving, mine.listsFrom != .max else { return [] }
            // This host's key, not deleted by this host (it is not leaving): gone with the session, or by hand.
            guard name != mine.name else { return fence() }
            return standing()
        }
    }

    // MARK: Private

    /// The first time the copy shows this host's key: its revision.
    private mutating func created(_ key: Key) -> [HostLeaseEvent] {
        guard own?.revision == nil else { return [] }
        own?.revision = key.createRevision
        return [.keyCreated(folder: folder, revision: key.createRevision)]
    }

    /// Where this host's key stands in ``known``: holder when first, and the host of the key after it, or, when the
    /// host was told of one and none is left, that nobody waits (said before it is told it holds, so that it holds
    /// without a recall).
    private func standing() -> [HostLeaseEvent] {
        guard let known, let revision = own?.revision,
            let index = known.firstIndex(where: { $0.name == own?.name })
        else { return [] }
        var events: [HostLeaseEvent] = []
        let waiting = index + 1 < known.count
        if !waiting && own?.toldWaiting == true { events.append(.noHostWaiting(folder: folder, after: revision)) }
        if index == 0 { events.append(.becameHolder(folder: folder, revision: revision)) }
        if waiting { events.append(.otherHostWaiting(folder: folder, host: known[index + 1].host, after: revision)) }
        return events
    }

    private mutating func fence() -> [HostLeaseEvent] {
        own = nil
        return [.sessionLost("this host's key for \(folder) is gone from the cluster")]
    }
}

extension HostLeaseEvent {
    /// Where a host's key stands in its folder (holder, another host waiting): said after a watch message's last
    /// change (``SharedFolderKeys/watched(_:revision:endsBatch:)``).
    var isStanding: Bool {
        switch self {
        case .becameHolder, .otherHostWaiting, .noHostWaiting: true
        default: false
        }
    }
}
