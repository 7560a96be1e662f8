import FCCore
public import FCDaemon
import FCFileSystemPolicy
import Foundation
import Logging
import NIOCore

// Presenters across hosts, part one (issue 41; docs/ARCHITECTURE.md §15.1): each host publishes its presenters in
// shared folders under its session, `<prefix>presenters/<folder, hex>/<host, hex>/<lease, hex>.<presenter, hex>`,
// and keeps a copy of the other hosts' (one list, then one watch), each as a presenter of a stand-in client of its
// own arbiter. A claim in a subtree where no other host presents meets no stand-in and costs what a local one does.
//
// - Important: Every method runs on the adapter's loop, as ClusterHost's.

extension ClusterHost {
    var presencePrefix: String { "\(configuration.keyPrefix)presenters/" }
    var hostHex: String { Self.hex(configuration.hostName) }

    // MARK: This host's presenters

    /// This daemon's presenters came, went or moved: those in shared folders are published, updated or withdrawn.
    public func presentersChanged(_ changes: [SessionRouter.PresenterChange]) {
        for change in changes {
            switch change {
            case .added(let registration):
                exchange.callbacks[registration.id] = (registration.callbacks.rawValue, registration.isPackage)
                publish(registration.id, at: registration.path)
            case .moved(let id, _, let path):
                publish(id, at: path)
            case .removed(let id, _):
                exchange.callbacks[id] = nil
                publish(id, at: nil)
            }
        }
    }

    /// Publishes the presenter `id` at `path`, or withdraws it (`nil`, or a path outside every shared folder).
    func publish(_ id: PresenterID, at path: ItemPath?) {
        let wire = path.flatMap(sharedPaths.wire)
        let old = exchange.published[id]
        guard let wire, let (callbacks, isPackage) = exchange.callbacks[id] else {
            guard let old else { return }
            exchange.published[id] = nil
            exchange.scanStamps[id] = nil
            exchange.scanQuiet.remove(id)
            exchange.scanHeld[id] = nil
            if let key = old.key { queuePresence(key, nil) }
            return
        }
        let record = PresenceRecord(
            path: wire,
            callbacks: callbacks,
            isPackage: isPackage,
            pathRules: PathRules.revision
        )
        guard old?.record != record else { return }
        let key = session.map { presenceKey(id, record, lease: $0.lease) }
        if let oldKey = old?.key, oldKey != key { queuePresence(oldKey, nil) }
        if old?.record.path != record.path { exchange.scanStamps[id] = nil }  // Another item: no change to report.
        exchange.published[id] = (record, key)
        if let key { queuePresence(key, record) }
    }

    func presenceKey(_ id: PresenterID, _ record: PresenceRecord, lease: Int64) -> String {
        "\(presencePrefix)\(Self.hex(record.path.folder))/\(hostHex)/\(String(lease, radix: 16))."
            + String(id.rawValue, radix: 16)
    }

    /// A new session: every presenter is published again under it (the old session's keys go with it).
    func presenceSessionOpened() {
        guard let lease = session?.lease else { return }
        ownLeaseOpened(String(lease, radix: 16))
        // A new sender session is a new series at every receiver: it counts from 1 again (without this, a receiver
        // waited a second for the numbers the old session had used, then skipped them).
        exchange.sequences = [:]
        // Letters that waited for a session go now.
        for receiver in exchange.outbox.keys { sendMail(to: receiver) }
        exchange.presenceQueue = []
        for (id, entry) in exchange.published {
            let key = presenceKey(id, entry.record, lease: lease)
            exchange.published[id] = (entry.record, key)
            queuePresence(key, entry.record)
        }
        publishMailbox()
    }

    /// The session is gone: nothing is published until the next one.
    func presenceSessionLost() {
        exchange.presenceQueue = []
        // The connections to other hosts' mailboxes said who sends: the next letters say the new session.
        for receiver in Array(exchange.links.keys) { dropLink(receiver) }
        for id in exchange.published.keys { exchange.published[id]?.key = nil }
    }

    func queuePresence(_ key: String, _ record: PresenceRecord?) {
        queuePresenceValue(key, record.flatMap { try? JSONEncoder().encode($0) }.map { Array($0) })
    }

    /// Queues a put (or with `nil`, a delete) of a key under the session: a presence key, or the mailbox.
    func queuePresenceValue(_ key: String, _ value: [UInt8]?) {
        exchange.presenceQueue.append((key, value))
        sendPresence()
    }

    /// Sends the first put or delete of presence keys, one at a time, retrying (200 ms apart) until etcd takes it
    /// or the session is replaced.
    func sendPresence() {
        guard !exchange.presenceSending, !stopped, let session, let (key, value) = exchange.presenceQueue.first
        else { return }
        exchange.presenceSending = true
        let (etcd, bound, attempt) = (self.etcd, self.bound, generation)
        Task {
            var failure: String?
            do {
                if let value {
                    _ = try await etcd.put(key: key, value: value, lease: session.lease)
                } else {
                    _ = try await etcd.delete(key: key)
                }
            } catch { failure = "\(error)" }
            let failed = failure
            bound.execute { $0.presenceSent(attempt, failed) }
        }
    }

    func presenceSent(_ attempt: Int, _ failure: String?) {
        exchange.presenceSending = false
        guard attempt == generation else {
            sendPresence()  // The queue is the new session's.
            return
        }
        if let failure {
            noteError("cannot publish this host's presenters: \(failure)")
            loop.assumeIsolated().scheduleTask(in: .milliseconds(200)) { [weak self] in self?.sendPresence() }
            return
        }
        if !exchange.presenceQueue.isEmpty { exchange.presenceQueue.removeFirst() }
        sendPresence()
    }

    // MARK: The other hosts' presenters

    /// Lists the other hosts' presenters, then watches them (``followPrefix(_:_:into:listed:watched:from:tries:)``).
    func watchPresence() {
        followPrefix(
            presencePrefix,
            "the other hosts' presenters",
            into: \.presenceWatch,
            listed: { $0.presenceListed($1) },
            watched: { $0.presenceWatched($1) }
        )
    }

    /// A list of every host's presenters: the copy becomes it.
    func presenceListed(_ kvs: [EtcdKeyValue]) {
        var seen: Set<String> = []
        for kv in kvs {
            seen.insert(kv.key)
            proxyPut(kv.key, kv.value)
        }
        for key in exchange.proxies.keys where !seen.contains(key) { removeProxy(key) }
    }

    func presenceWatched(_ event: EtcdWatchEvent) {
        switch event.type {
        case .put: proxyPut(event.key, event.value)
        case .delete: removeProxy(event.key)
        }
    }

    /// Another host's presenter, published or moved: its stand-in in this arbiter is added or moved.
    func proxyPut(_ key: String, _ value: [UInt8]) {
        // <folder, hex>/<host, hex>/<lease, hex>.<presenter, hex>
        let parts = key.dropFirst(presencePrefix.count).split(separator: "/")
        guard key.hasPrefix(presencePrefix), parts.count == 3, String(parts[1]) != hostHex else { return }
        let tail = parts[2].split(separator: ".")
        guard tail.count == 2, let presenter = UInt64(tail[1], radix: 16), let host = Self.unhex(String(parts[1])),
            let record = try? JSONDecoder().decode(PresenceRecord.self, from: Data(value)),
            let path = sharedPaths.local(record.path)
        else {
            noteError("another host's presenter key cannot be read, ignored: \(key)")
            return
        }
        if let rules = record.pathRules, rules != PathRules.revision {
            // Its paths may name items otherwise than this host's (docs/SEMANTICS.md §4, §14): not stood in for.
            noteError(
                "a presenter of host \(host) is ignored: that host names items by path rules revision \(rules), this "
                    + "host by revision \(PathRules.revision) (run the same release of filecoordd on every host)"
            )
            return
        }
        let sessionKey = "\(parts[1])/\(tail[0])"
        if let proxy = exchange.proxies[key], let client = exchange.remoteSessions[proxy.session]?.client {
            gates.remote(.presenterURLChanged(PresenterID(presenter), to: path), from: client)
            return
        }
        let client: ClientID
        if let existing = exchange.remoteSessions[sessionKey] {
            client = existing.client
        } else {
            client = gates.connectRemoteHost("host \(host)")
            exchange.remoteSessions[sessionKey] = (host, String(tail[0]), client, 0)
            exchange.sessionOfClient[client] = sessionKey
            logger.info(
                "cluster: another host presents items in shared folders",
                metadata: ["cluster.host": "\(host)", "cluster.lease": "\(tail[0])", "client.id": "\(client.rawValue)"]
            )
        }
        let registration = PresenterRegistration(
            id: PresenterID(presenter),
            client: client,
            path: path,
            callbacks: PresenterCallbacks(rawValue: record.callbacks),
            isPackage: record.isPackage
        )
        guard gates.remote(.presenterAdded(registration), from: client) else {
            if exchange.remoteSessions[sessionKey]?.presenters == 0 { leaveRemoteSession(sessionKey) }
            return
        }
        exchange.proxies[key] = (sessionKey, presenter)
        exchange.remoteSessions[sessionKey]?.presenters += 1
    }

    /// Another host's presenter is gone (removed, or its session ended): its stand-in goes, and what it was asked
    /// counts as answered, as for a local presenter that went away.
    func removeProxy(_ key: String) {
        guard let proxy = exchange.proxies.removeValue(forKey: key),
            let remote = exchange.remoteSessions[proxy.session]
        else { return }
        gates.remote(.presenterRemoved(PresenterID(proxy.presenter)), from: remote.client)
        exchange.remoteSessions[proxy.session]?.presenters -= 1
        if remote.presenters <= 1 { leaveRemoteSession(proxy.session) }
    }

    /// The last presenter of another host's session is gone: its stand-in client leaves, and the mail this host
    /// left for that session is deleted (nobody will read it).
    func leaveRemoteSession(_ sessionKey: String) {
        guard let remote = exchange.remoteSessions.removeValue(forKey: sessionKey) else { return }
        exchange.sessionOfClient[remote.client] = nil
        gates.disconnectRemoteHost(remote.client)
        logger.info(
            "cluster: another host presents nothing in shared folders any more",
            metadata: ["cluster.host": "\(remote.host)", "cluster.lease": "\(remote.lease)"]
        )
        // The session may live on with no presenter (its claims still get replies): the mail left for it is deleted
        // only if, twice its time to live later, nothing is on its way to it and it presents nothing again (a session
        // that ended took its reader with it; what it left unread would stay until this host's session ends).
        let wait = configuration.policy.sessionTTL * 2
        loop.assumeIsolated().scheduleTask(in: TimeAmount(wait)) { [weak self] in
            guard let self, !self.stopped, self.exchange.remoteSessions[sessionKey] == nil,
                self.exchange.outbox[sessionKey] == nil, self.exchange.inFlight[sessionKey] == nil
            else { return }
            let (etcd, prefix) = (self.etcd, "\(self.configuration.keyPrefix)mail/\(sessionKey)/\(self.hostHex)/")
            Task { _ = try? await etcd.delete(prefix: prefix) }
        }
    }
}
