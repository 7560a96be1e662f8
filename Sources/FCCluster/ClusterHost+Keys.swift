import FCCore
import Foundation
import NIOCore

// The cluster adapter's keys in etcd and its watch (ClusterHost.swift has the rest): this host's key per shared
// folder, and a copy of every shared folder's keys, from one list of the cluster's keys and one watch from the
// list's revision on. What the copy means for the table is decided by FCCore's SharedFolderKeys.
//
// - Important: Every method runs on the adapter's loop, as ClusterHost's.

extension ClusterHost {
    // MARK: Keys

    /// A new key of this host in `folder` for the session:
    /// `<prefix>folders/<name, hex>/<host, hex>/<lease, hex>.<put>`. A new name for every put, so that a delete of
    /// an earlier key that etcd applies late (retried on another member) cannot remove this one.
    func newKey(for folder: ItemPath, lease: Int64) -> String {
        puts += 1
        return "\(folderPrefix(folder))\(Self.hex(configuration.hostName))/\(String(lease, radix: 16)).\(puts)"
    }

    func folderPrefix(_ folder: ItemPath) -> String {
        let name = configuration.sharedFolders.first { $0.path == folder }?.name ?? "\(folder)"
        return "\(configuration.keyPrefix)folders/\(Self.hex(name))/"
    }

    func putKey(_ folder: ItemPath) {
        guard let session else {
            handle(.keyFailed(folder: folder, "no cluster session"))
            return
        }
        let key = newKey(for: folder, lease: session.lease)
        views[folder]?.putSent(name: key)
        let attempt = generation
        let (etcd, bound, value) = (self.etcd, self.bound, Array(configuration.hostName.utf8))
        Task {
            do {
                _ = try await etcd.put(key: key, value: value, lease: session.lease)
                bound.execute { $0.keyPut(folder, key: key, attempt) }
            } catch {
                bound.execute { $0.keyPutFailed(folder, key: key, "\(error)", attempt) }
            }
        }
    }

    /// The put was acknowledged. Its answer's revision is not trusted as the key's create revision (a put retried
    /// on another member after the first applied it answers with a later revision): the key's revision comes from
    /// the copy (the watch's report of the put, or a list), and a list issued from now on must show the key.
    func keyPut(_ folder: ItemPath, key: String, _ attempt: Int) {
        guard attempt == generation else { return }
        for event in views[folder]?.putAcknowledged(name: key, listsFrom: listsIssued + 1) ?? [] { handle(event) }
    }

    /// The put failed, or seemed to: it may have been applied all the same, leaving a key of this live session that
    /// would hold the folder for nobody. It is deleted (retried until it is, or the session is replaced); one applied
    /// later still is deleted when the copy shows it (``deleteOrphans(in:)``). The table heard nothing of the key (the
    /// copy speaks of a key only once its put returned), so it is still waiting for it and takes the failure.
    func keyPutFailed(_ folder: ItemPath, key: String, _ reason: String, _ attempt: Int) {
        guard attempt == generation, views[folder]?.forget(name: key) == true else { return }
        noteError("cannot put this host's key for \(folder): \(reason)")
        removeKey(key, attempt)
        handle(.keyFailed(folder: folder, reason))
    }

    /// Hands the folder back: deletes this host's key. Until etcd answers, the key is leaving: a read or a watch
    /// event that no longer shows it is that delete, not a key lost to the session.
    func deleteKey(_ folder: ItemPath) {
        guard let key = views[folder]?.leave() else {
            handle(.keyDeleted(folder: folder))
            return
        }
        let attempt = generation
        removeKey(key, attempt) { host in
            guard host.views[folder]?.forget(name: key) == true else { return }
            host.handle(.keyDeleted(folder: folder))
        }
    }

    /// Deletes `key`, retrying (100 ms to 1 s apart) until etcd takes it or the session `attempt` is replaced (the
    /// replaced session's keys go when it expires), then runs `done`.
    func removeKey(_ key: String, _ attempt: Int, tries: Int = 0, done: (@Sendable (ClusterHost) -> Void)? = nil) {
        let (etcd, bound) = (self.etcd, self.bound)
        Task {
            do {
                _ = try await etcd.delete(key: key)
                bound.execute { host in
                    guard attempt == host.generation else { return }
                    done?(host)
                }
            } catch {
                bound.execute { host in
                    guard attempt == host.generation, !host.stopped else { return }
                    host.noteError("cannot delete this host's key \(key): \(error)")
                    let delay = Int64(100 << min(tries, 3))
                    host.loop.assumeIsolated().scheduleTask(in: .milliseconds(delay)) { [weak host] in
                        guard let host, attempt == host.generation else { return }
                        host.removeKey(key, attempt, tries: tries + 1, done: done)
                    }
                }
            }
        }
    }

    // MARK: Watch

    /// Lists the cluster's keys (every shared folder's, in create order) into the copies, then watches them from the
    /// list's revision on (``startWatch(fromRevision:pause:)``). A list that fails is tried again (200 ms to 2 s
    /// apart).
    func listAndWatch(tries: Int = 0) {
        listsIssued += 1
        let serial = listsIssued
        let (etcd, bound, prefix) = (self.etcd, self.bound, "\(configuration.keyPrefix)folders/")
        watchTask = Task {
            do {
                let range = try await etcd.range(prefix: prefix)
                bound.execute { host in
                    guard !host.stopped else { return }
                    host.listed(range.kvs, revision: range.revision, serial: serial)
                    host.startWatch(fromRevision: range.revision + 1)
                }
            } catch {
                guard !Task.isCancelled else { return }
                bound.execute { host in
                    guard !host.stopped else { return }
                    host.noteError("cannot list the cluster's keys: \(error)")
                    let delay = Int64(200 << min(tries, 3))
                    host.loop.assumeIsolated().scheduleTask(in: .milliseconds(delay)) { [weak host] in
                        guard let host, !host.stopped else { return }
                        host.listAndWatch(tries: tries + 1)
                    }
                }
            }
        }
    }

    /// Lists the keys again beside the watch, while this host has a key: a watch that stalls without ending (a
    /// connection that stops moving) must not leave it waiting for ever, nor another host waiting for it. Called
    /// with each keep-alive (a third of the time to live); the copy ignores a list older than what it shows.
    func listAgainIfHolding() {
        guard !stopped, views.values.contains(where: { $0.own != nil }) else { return }
        listsIssued += 1
        let serial = listsIssued
        let (etcd, bound, prefix) = (self.etcd, self.bound, "\(configuration.keyPrefix)folders/")
        Task {
            guard let range = try? await etcd.range(prefix: prefix) else { return }  // The next one will do.
            bound.execute { host in
                guard !host.stopped else { return }
                host.listed(range.kvs, revision: range.revision, serial: serial)
            }
        }
    }

    func listed(_ kvs: [EtcdKeyValue], revision: Int64, serial: Int) {
        var byFolder: [ItemPath: [SharedFolderKeys.Key]] = [:]
        for kv in kvs {
            guard let folder = folder(ofKey: kv.key) else { continue }
            byFolder[folder, default: []].append(
                .init(name: kv.key, createRevision: kv.createRevision, host: String(decoding: kv.value, as: UTF8.self))
            )
        }
        var events: [HostLeaseEvent] = []
        for folder in views.keys {
            events += views[folder]?.listed(byFolder[folder] ?? [], serial: serial, revision: revision) ?? []
            deleteOrphans(in: folder)
        }
        for event in events { handle(event) }
        sweepReacquirers()
    }

    /// Deletes the keys of this host's live session in `folder` that are not its key: a put that failed or timed
    /// out, applied late, or applied again by a retry after the host deleted the key. Left alone, such a key would
    /// hold the folder for nobody until the session ends.
    func deleteOrphans(in folder: ItemPath) {
        guard let lease = session?.lease, let known = views[folder]?.known else { return }
        let mine = "\(folderPrefix(folder))\(Self.hex(configuration.hostName))/\(String(lease, radix: 16))."
        let own = views[folder]?.own?.name
        for key in known where key.name.hasPrefix(mine) && key.name != own && !orphansDeleting.contains(key.name) {
            orphansDeleting.insert(key.name)
            noteError("deleting a key of this host's session that holds \(folder) for nobody: \(key.name)")
            removeKey(key.name, generation) { $0.orphansDeleting.remove(key.name) }
        }
    }

    /// One watch over every shared folder's keys, from `revision` (the list's, plus one): each change goes to the
    /// folder's copy. A watch that ends is started again after a pause (0.5 s, doubling to 5 s while it keeps
    /// failing) from the revision after the last change it reported, which misses nothing; after etcd cancelled it
    /// (that revision compacted), the keys are listed again first.
    func startWatch(fromRevision revision: Int64, pause: Duration = .milliseconds(500)) {
        let (etcd, bound, prefix) = (self.etcd, self.bound, "\(configuration.keyPrefix)folders/")
        watchTask = Task {
            var next: Int64? = revision
            var delivered = false
            do {
                for try await event in etcd.watch(prefix: prefix, fromRevision: revision) {
                    next = event.modRevision + 1
                    delivered = true
                    bound.execute { $0.watched(event) }
                }
            } catch {
                if let failure = error as? EtcdError, case .watchCanceled = failure.reason { next = nil }
                bound.execute { $0.noteError("the cluster's watch ended: \(error)") }
            }
            guard !Task.isCancelled else { return }
            let wait = delivered ? .milliseconds(500) : pause
            try? await Task.sleep(for: wait)
            let resume = next
            bound.execute { host in
                guard !host.stopped else { return }
                if let resume {
                    host.startWatch(fromRevision: resume, pause: min(wait * 2, .seconds(5)))
                } else {
                    host.listAndWatch()
                }
            }
        }
    }

    /// The shared folder a key of the cluster's prefix belongs to.
    func folder(ofKey key: String) -> ItemPath? {
        let prefix = "\(configuration.keyPrefix)folders/"
        guard key.hasPrefix(prefix) else { return nil }
        let rest = key.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"), let name = Self.unhex(String(rest[..<slash])) else { return nil }
        return folderByName[name]
    }

    /// A change under the cluster's prefix: applied to the folder's copy (``SharedFolderKeys/watched(_:revision:endsBatch:)``:
    /// this host's key created or gone, another host waiting, the last key ahead gone). Where this host stands is told
    /// after the last change of the watch message (``EtcdWatchEvent/endsMessage``), in every folder the message
    /// changed: a revision's changes come in one message.
    func watched(_ event: EtcdWatchEvent) {
        if let folder = folder(ofKey: event.key) {
            let change: SharedFolderKeys.Change =
                switch event.type {
                case .put:
                    .put(
                        .init(
                            name: event.key,
                            createRevision: event.createRevision,
                            host: String(decoding: event.value, as: UTF8.self)
                        )
                    )
                case .delete: .deleted(name: event.key)
                }
            foldersInMessage.insert(folder)
            let events = views[folder]?.watched(change, revision: event.modRevision, endsBatch: false) ?? []
            if event.type == .put { deleteOrphans(in: folder) } else { sweepReacquirers() }
            for event in events { handle(event) }
        }
        guard event.endsMessage else { return }
        let changed = foldersInMessage.sorted()
        foldersInMessage = []
        for folder in changed {
            for event in views[folder]?.endBatch() ?? [] { handle(event) }
        }
    }
}
