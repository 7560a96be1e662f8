public import FCCore

/// The file progress published and subscribed to (issue 44; docs/SEMANTICS.md §16): who publishes a progress about
/// which item, who listens at which item, and what each event makes the owner send. The daemon keeps one for its
/// clients (FCDaemon's `ArbiterHost+Progress.swift`); a process that coordinates in process keeps one for itself.
///
/// A subscription at a path matches a publication at the same path or at an item directly inside it (Apple's rule
/// for `Progress.addSubscriber(forFileURL:withPublishingHandler:)`). Every method returns the frames it causes as
/// ``Delivery`` values, in order; the board sends nothing itself. Each event costs what it touches: the
/// publications at one path and inside one folder, the subscriptions at one path and at its parent, and a leaving
/// client's own entries.
///
/// Publication ids in ``Delivery`` are the board's own (one numbering for every client, like lease ids), so that
/// a subscriber that heard of one publication through two subscriptions knows it is one.
///
/// - Important: Not thread-safe: one owner (the daemon's event loop; an in-process client's progress queue).
public final class ProgressBoard {
    /// What the board asks the daemon to send.
    public enum Delivery: Equatable, Sendable {
        /// Tell `client` that `publication` matches its subscription `subscription` (the client's own id).
        case appeared(
            client: ClientID,
            subscription: UInt64,
            publication: UInt64,
            path: ItemPath,
            state: Filecoord_V1_ProgressState
        )
        /// Tell `client`, which heard of `publication`, its new state.
        case changed(client: ClientID, publication: UInt64, state: Filecoord_V1_ProgressState)
        /// Tell `client`, which heard of `publication`, that it ended.
        case gone(client: ClientID, publication: UInt64)
        /// Ask `client`, the publisher, to act on its publication `publication` (the client's own id).
        case control(client: ClientID, publication: UInt64, action: Filecoord_V1_ProgressAction)
    }

    /// Why a client's progress frame is refused; the connection's handler turns it into a protocol error.
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case duplicate(String)
        case tooMany(String, limit: Int)

        public var description: String {
            switch self {
            case .duplicate(let what): "\(what) reused while live"
            case .tooMany(let what, let limit): "more than \(limit) \(what) on one connection"
            }
        }
    }

    /// A live publication.
    public struct Publication: Sendable {
        public let owner: ClientID
        /// The owner's own id for it.
        public let local: UInt64
        public let path: ItemPath
        public var state: Filecoord_V1_ProgressState
    }

    /// A live subscription, known by its owner and the owner's id for it.
    public struct SubscriptionKey: Hashable, Sendable {
        public let client: ClientID
        public let local: UInt64
    }

    /// How many publications and subscriptions one connection may have at once.
    public let maximumPublications: Int
    public let maximumSubscriptions: Int

    public private(set) var publications: [UInt64: Publication] = [:]
    private var publicationIDs: [SubscriptionKey: UInt64] = [:]
    /// Publications by their item's path, and by their item's parent folder.
    private var publicationsAt: [ItemPath: Set<UInt64>] = [:]
    private var publicationsInside: [ItemPath: Set<UInt64>] = [:]
    /// Subscriptions by path.
    public private(set) var subscriptions: [SubscriptionKey: ItemPath] = [:]
    private var subscriptionsAt: [ItemPath: Set<SubscriptionKey>] = [:]
    /// Each client's own entries, so that a client that leaves costs what it had.
    private var ownPublications: [ClientID: Set<UInt64>] = [:]
    private var ownSubscriptions: [ClientID: Set<UInt64>] = [:]
    private var lastID: UInt64 = 0

    public init(maximumPublications: Int = 4096, maximumSubscriptions: Int = 1024) {
        self.maximumPublications = maximumPublications
        self.maximumSubscriptions = maximumSubscriptions
    }

    // MARK: Publishers

    /// `client` publishes a progress about `path` under its own id `local`: every matching subscription hears of it.
    public func publish(
        _ local: UInt64,
        at path: ItemPath,
        state: Filecoord_V1_ProgressState,
        by client: ClientID
    )
        throws(Refusal) -> [Delivery]
    {
        let key = SubscriptionKey(client: client, local: local)
        guard publicationIDs[key] == nil else { throw .duplicate("progress publication id \(local)") }
        guard ownPublications[client, default: []].count < maximumPublications else {
            throw .tooMany("progress publications", limit: maximumPublications)
        }
        lastID += 1
        let id = lastID
        publications[id] = Publication(owner: client, local: local, path: path, state: state)
        publicationIDs[key] = id
        publicationsAt[path, default: []].insert(id)
        if let parent = path.parent { publicationsInside[parent, default: []].insert(id) }
        ownPublications[client, default: []].insert(id)
        return matchingSubscriptions(of: path).sorted(by: Self.order).map {
            .appeared(client: $0.client, subscription: $0.local, publication: id, path: path, state: state)
        }
    }

    /// `client`'s publication `local` changed: every client with a matching subscription hears it once.
    public func update(_ local: UInt64, state: Filecoord_V1_ProgressState, by client: ClientID) -> [Delivery] {
        guard let id = publicationIDs[SubscriptionKey(client: client, local: local)] else { return [] }
        publications[id]?.state = state
        guard let path = publications[id]?.path else { return [] }
        return listeners(of: path).map { .changed(client: $0, publication: id, state: state) }
    }

    /// `client` unpublishes its publication `local`.
    public func unpublish(_ local: UInt64, by client: ClientID) -> [Delivery] {
        guard let id = publicationIDs[SubscriptionKey(client: client, local: local)] else { return [] }
        return remove(publication: id)
    }

    // MARK: Subscribers

    /// `client` subscribes at `path` under its own id `local`: it hears of every publication that matches now.
    public func subscribe(_ local: UInt64, at path: ItemPath, by client: ClientID) throws(Refusal) -> [Delivery] {
        let key = SubscriptionKey(client: client, local: local)
        guard subscriptions[key] == nil else { throw .duplicate("progress subscription id \(local)") }
        guard ownSubscriptions[client, default: []].count < maximumSubscriptions else {
            throw .tooMany("progress subscriptions", limit: maximumSubscriptions)
        }
        subscriptions[key] = path
        subscriptionsAt[path, default: []].insert(key)
        ownSubscriptions[client, default: []].insert(local)
        let matching = publicationsAt[path, default: []].union(publicationsInside[path, default: []])
        return matching.sorted().compactMap { id in
            publications[id].map {
                .appeared(client: client, subscription: local, publication: id, path: $0.path, state: $0.state)
            }
        }
    }

    /// `client` ends its subscription `local`. Nothing is sent: the client drops its proxies itself.
    public func unsubscribe(_ local: UInt64, by client: ClientID) {
        let key = SubscriptionKey(client: client, local: local)
        guard let path = subscriptions.removeValue(forKey: key) else { return }
        subscriptionsAt[path]?.remove(key)
        if subscriptionsAt[path]?.isEmpty == true { subscriptionsAt[path] = nil }
        ownSubscriptions[client]?.remove(local)
        if ownSubscriptions[client]?.isEmpty == true { ownSubscriptions[client] = nil }
    }

    /// `client` asks to cancel, pause or resume `publication` (the board's id). Passed to the publisher only when
    /// the client subscribes where the publication matches and the publication allows the action (it is not
    /// cancellable, or not pausable, otherwise); ignored else.
    public func control(_ publication: UInt64, _ action: Filecoord_V1_ProgressAction, by client: ClientID) -> [Delivery]
    {
        guard let entry = publications[publication], listeners(of: entry.path).contains(client) else { return [] }
        switch action {
        case .cancel: guard entry.state.cancellable, !entry.state.cancelled else { return [] }
        case .pause, .resume: guard entry.state.pausable else { return [] }
        default: return []
        }
        return [.control(client: entry.owner, publication: entry.local, action: action)]
    }

    // MARK: Clients

    /// `client` went away: its publications end (their subscribers hear it) and its subscriptions are dropped.
    public func disconnect(_ client: ClientID) -> [Delivery] {
        for local in ownSubscriptions[client] ?? [] { unsubscribe(local, by: client) }
        ownSubscriptions[client] = nil
        var deliveries: [Delivery] = []
        for id in (ownPublications[client] ?? []).sorted() { deliveries += remove(publication: id) }
        ownPublications[client] = nil
        return deliveries
    }

    /// How many publications and subscriptions `client` has (for tests and the dump).
    public func counts(of client: ClientID) -> (publications: Int, subscriptions: Int) {
        (ownPublications[client]?.count ?? 0, ownSubscriptions[client]?.count ?? 0)
    }

    /// Every item with a publication or a subscription, in path order, with them (for the dump; O(entries)).
    public func items() -> [(path: ItemPath, publications: [(id: UInt64, entry: Publication)], subscribers: [ClientID])]
    {
        var paths = Set(publicationsAt.keys)
        paths.formUnion(subscriptionsAt.keys)
        return paths.sorted().map { path in
            let here = (publicationsAt[path] ?? []).sorted().compactMap { id in publications[id].map { (id, $0) } }
            let subscribers = (subscriptionsAt[path] ?? []).sorted(by: Self.order).map(\.client)
            return (path, here, subscribers)
        }
    }

    // MARK: Matching

    private func remove(publication id: UInt64) -> [Delivery] {
        guard let entry = publications.removeValue(forKey: id) else { return [] }
        publicationIDs[SubscriptionKey(client: entry.owner, local: entry.local)] = nil
        publicationsAt[entry.path]?.remove(id)
        if publicationsAt[entry.path]?.isEmpty == true { publicationsAt[entry.path] = nil }
        if let parent = entry.path.parent {
            publicationsInside[parent]?.remove(id)
            if publicationsInside[parent]?.isEmpty == true { publicationsInside[parent] = nil }
        }
        ownPublications[entry.owner]?.remove(id)
        return listeners(of: entry.path).map { .gone(client: $0, publication: id) }
    }

    /// The subscriptions a publication at `path` matches: at the path, and at its parent folder.
    private func matchingSubscriptions(of path: ItemPath) -> Set<SubscriptionKey> {
        var matching = subscriptionsAt[path] ?? []
        if let parent = path.parent, let inParent = subscriptionsAt[parent] { matching.formUnion(inParent) }
        return matching
    }

    /// The clients with a subscription that matches a publication at `path`, each once, in id order.
    private func listeners(of path: ItemPath) -> [ClientID] {
        Set(matchingSubscriptions(of: path).map(\.client)).sorted()
    }

    private static func order(_ a: SubscriptionKey, _ b: SubscriptionKey) -> Bool {
        (a.client, a.local) < (b.client, b.local)
    }
}

@available(*, unavailable)
extension ProgressBoard: Sendable {}
