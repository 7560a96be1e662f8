import FCCore
import Foundation
import NIOCore

// The cluster adapter's keys in etcd and its watch (ClusterHost.swift has the rest): this host's key per shared
// folder, one watch over the cluster's prefix, and the folder's keys read in create order after every change; what
// they mean for the table is decided by FCCore's SharedFolderKeys.
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
        views[folder, default: SharedFolderKeys(folder: folder)].putSent(name: key)
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
    /// on another member after the first applied it answers with a later revision): the folder's keys are read,
    /// and the key's own create revision taken from them.
    func keyPut(_ folder: ItemPath, key: String, _ attempt: Int) {
        guard attempt == generation, views[folder]?.putAcknowledged(name: key, readsFrom: readsIssued + 1) == true
        else { return }
        readKeys(of: folder)
    }

    /// The put failed, or seemed to: it may have been applied all the same, leaving a key of this live session that
    /// would hold the folder for nobody. It is deleted (retried until it is, or the session is replaced).
    func keyPutFailed(_ folder: ItemPath, key: String, _ reason: String, _ attempt: Int) {
        guard attempt == generation, views[folder]?.forget(name: key) == true else { return }
        noteError("cannot put this host's key for \(folder): \(reason)")
        views[folder] = nil
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
            host.views[folder] = nil
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

    /// Reads the folder's keys in create order and tells the table where this host's key stands
    /// (``SharedFolderKeys/read(_:serial:)``). One read per folder at a time: a change that comes while one is out
    /// asks for one more after it. A read that fails is tried again (200 ms to 2 s apart) while this host has a key
    /// there.
    func readKeys(of folder: ItemPath, tries: Int = 0) {
        guard views[folder]?.own != nil else { return }
        guard reading.insert(folder).inserted else {
            readAgain.insert(folder)
            return
        }
        readsIssued += 1
        let serial = readsIssued
        let attempt = generation
        let (etcd, bound, prefix) = (self.etcd, self.bound, folderPrefix(folder))
        Task {
            do {
                let range = try await etcd.range(prefix: prefix)
                bound.execute { $0.keysRead(folder, range.kvs, serial: serial, attempt) }
            } catch {
                bound.execute { host in
                    guard attempt == host.generation else { return }
                    host.reading.remove(folder)
                    host.noteError("cannot read the keys of \(folder): \(error)")
                    let delay = Int64(200 << min(tries, 3))
                    host.loop.assumeIsolated().scheduleTask(in: .milliseconds(delay)) { [weak host] in
                        guard let host, attempt == host.generation else { return }
                        host.readKeys(of: folder, tries: tries + 1)
                    }
                }
            }
        }
    }

    func keysRead(_ folder: ItemPath, _ kvs: [EtcdKeyValue], serial: Int, _ attempt: Int) {
        guard attempt == generation else { return }
        reading.remove(folder)
        defer {
            if readAgain.remove(folder) != nil { readKeys(of: folder) }
        }
        let keys = kvs.map {
            SharedFolderKeys.Key(
                name: $0.key,
                createRevision: $0.createRevision,
                host: String(decoding: $0.value, as: UTF8.self)
            )
        }
        guard let events = views[folder]?.read(keys, serial: serial) else { return }
        if views[folder]?.own == nil { views[folder] = nil }  // Gone: the read fences (sessionLost).
        for event in events { handle(event) }
    }

    // MARK: Watch

    /// One watch over every shared folder's keys: any change under a folder this host has a key in makes it read
    /// that folder's keys again. A watch that ends is started again after a pause (0.5 s, doubling to 5 s while
    /// it keeps failing), from the next revision, or from now after etcd cancelled it (its revision compacted);
    /// every folder this host has a key in is read again then, for what it may have missed.
    func startWatch(fromRevision revision: Int64?, pause: Duration = .milliseconds(500)) {
        let (etcd, bound, prefix) = (self.etcd, self.bound, "\(configuration.keyPrefix)folders/")
        watchTask = Task {
            var next = revision
            var delivered = false
            do {
                for try await event in etcd.watch(prefix: prefix, fromRevision: next) {
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
                host.startWatch(fromRevision: resume, pause: min(wait * 2, .seconds(5)))
                for folder in host.views.keys { host.readKeys(of: folder) }
            }
        }
    }

    /// A change under the cluster's prefix: for a folder this host has a key in, the view learns what the change
    /// itself says (``SharedFolderKeys/watched(_:)``: another host waiting, the last key ahead gone), and the
    /// folder's keys are read again for the rest.
    func watched(_ event: EtcdWatchEvent) {
        let prefix = "\(configuration.keyPrefix)folders/"
        guard event.key.hasPrefix(prefix) else { return }
        let rest = event.key.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"), let name = Self.unhex(String(rest[..<slash])),
            let folder = folderByName[name], views[folder]?.own != nil
        else { return }
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
        let events = views[folder]?.watched(change) ?? []
        for event in events { handle(event) }
        readKeys(of: folder)
    }
}
