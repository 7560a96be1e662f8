/// What a host knows of one shared folder's keys in the cluster's store (issue 40; docs/SEMANTICS.md §14), and the
/// ``HostLeaseEvent``s it tells the host's ``HostLeaseTable`` from it: this host's key, the keys ahead of it from
/// the last read of the folder's keys, and the changes the store's watch reported since.
///
/// Two sources, two speeds:
/// - **A read** of the folder's keys (all of them, in create order; linearizable) says everything: whether this
///   host's key is there (``HostLeaseEvent/keyCreated(folder:revision:)`` the first time; fenced when a read issued
///   after the put was acknowledged does not show it), whether it is first
///   (``HostLeaseEvent/becameHolder(folder:revision:)``), and which host comes next
///   (``HostLeaseEvent/otherHostWaiting(folder:host:after:)``).
/// - **A watch event** says one change, one round trip earlier than the read it makes the host issue:
///   - a key put with a later create revision than this host's is another host waiting
///     (``HostLeaseEvent/otherHostWaiting(folder:host:after:)``), which only makes the host give the folder up
///     sooner;
///   - a key deleted that the last read showed ahead of this host's is gone for good (every put makes a key of a new
///     name, so no key comes back), and when it was the last of them this host holds the folder
///     (``HostLeaseEvent/becameHolder(folder:revision:)``). This is safe because the keys ahead can only shrink: a
///     read that shows this host's key was answered at a revision at or after the key's creation, so every key
///     created before it that still exists was in that read, and nothing created later can come before it.
///
/// A read answered late (issued before a delete the watch already reported) may list a deleted key as ahead again:
/// the host then waits for its next read, never holds early. The host issues a read after every change it watched
/// anyway; the watch only makes the answer come sooner (the cluster benchmarks' recall: two etcd round trips fewer).
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
        /// Its create revision, once a read showed it.
        public var revision: Int64?
        /// The serial of the first read issued after its put was acknowledged (a read issued before may not show
        /// it); `Int.max` while the put is out.
        public var readsFrom: Int = .max
        /// Its delete is out (the folder handed back): reads and the watch say nothing more about it, and the
        /// delete's answer reports it gone.
        public var leaving = false
    }

    /// The folder.
    public let folder: ItemPath
    /// This host's key, if it has one there (in this session).
    public private(set) var own: Own?
    /// The names of the keys ahead of this host's, from the last read that showed it, less those the watch reported
    /// deleted since; `nil` until such a read.
    public private(set) var ahead: Set<String>?
    /// The host whose key came first in the last read (for the dump: whom a waiting claim waits for).
    public private(set) var firstHost: String?

    /// The keys of `folder`, before this host put any.
    public init(folder: ItemPath) {
        self.folder = folder
    }

    /// This host sent the put of a key named `name` (it replaces any key it had).
    public mutating func putSent(name: String) {
        own = Own(name: name)
        ahead = nil
    }

    /// The put of `name` was acknowledged; reads from `serial` on must show the key. Returns whether `name` is
    /// still this host's key (else the answer is about a key it has since replaced or given up).
    public mutating func putAcknowledged(name: String, readsFrom serial: Int) -> Bool {
        guard own?.name == name else { return false }
        own?.readsFrom = serial
        return true
    }

    /// This host sent the delete of its key: returns its name, or `nil` when it has none.
    public mutating func leave() -> String? {
        guard own != nil else { return nil }
        own?.leaving = true
        ahead = nil
        return own?.name
    }

    /// The key named `name` is no longer this host's (its delete was answered, its put failed, the session went).
    /// Returns whether it was.
    @discardableResult
    public mutating func forget(name: String) -> Bool {
        guard own?.name == name else { return false }
        own = nil
        ahead = nil
        return true
    }

    /// A read of the folder's keys, the `serial`th this host issued, answered with `keys` (in any order).
    public mutating func read(_ keys: [Key], serial: Int) -> [HostLeaseEvent] {
        guard let mine = own, !mine.leaving else { return [] }
        let ordered = keys.sorted { $0.createRevision < $1.createRevision }
        firstHost = ordered.first?.host
        guard let key = ordered.first(where: { $0.name == mine.name }) else {
            // Issued after the put was acknowledged, a read that does not show the key means it is gone: deleted by
            // hand, or by a late delete. This host cannot tell what another host was granted since: it fences.
            guard serial >= mine.readsFrom else { return [] }
            own = nil
            ahead = nil
            return [.sessionLost("this host's key for \(folder) is gone from the cluster")]
        }
        let revision = key.createRevision
        var events: [HostLeaseEvent] = []
        if mine.revision == nil {
            own?.revision = revision
            events.append(.keyCreated(folder: folder, revision: revision))
        }
        ahead = Set(ordered.prefix { $0.createRevision < revision }.map(\.name))
        if ahead?.isEmpty == true {
            events.append(.becameHolder(folder: folder, revision: revision))
        }
        if let next = ordered.first(where: { $0.createRevision > revision }) {
            events.append(.otherHostWaiting(folder: folder, host: next.host, after: revision))
        }
        return events
    }

    /// A change the store's watch reported under the folder.
    public mutating func watched(_ change: Change) -> [HostLeaseEvent] {
        guard let mine = own, !mine.leaving, let revision = mine.revision else { return [] }
        switch change {
        case .put(let key):
            guard key.name != mine.name, key.createRevision > revision else { return [] }
            return [.otherHostWaiting(folder: folder, host: key.host, after: revision)]
        case .deleted(let name):
            guard ahead?.remove(name) != nil, ahead?.isEmpty == true else { return [] }
            return [.becameHolder(folder: folder, revision: revision)]
        }
    }
}
