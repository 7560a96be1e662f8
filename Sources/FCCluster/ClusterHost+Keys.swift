import FCCore
import Foundation
import NIOCore

// The cluster adapter's keys in etcd and its watch (ClusterHost.swift has the rest): this host's key per shared
// folder, the folder's keys read in create order after every change, and one watch over the cluster's prefix.
//
// - Important: Every method runs on the adapter's loop, as ClusterHost's.

extension ClusterHost {
    // MARK: Keys

    /// The key of this host in `folder` for the session: `<prefix>folders/<name, hex>/<host, hex>/<lease, hex>`.
    func key(for folder: ItemPath, lease: Int64) -> String {
        "\(folderPrefix(folder))\(Self.hex(configuration.hostName))/\(String(lease, radix: 16))"
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
        let key = key(for: folder, lease: session.lease)
        keys[folder] = (key, nil)
        let attempt = generation
        let (etcd, bound, value) = (self.etcd, self.bound, Array(configuration.hostName.utf8))
        Task {
            do {
                let revision = try await etcd.put(key: key, value: value, lease: session.lease)
                bound.execute { $0.keyPut(folder, key: key, revision: revision, attempt) }
            } catch {
                bound.execute { $0.keyPutFailed(folder, "\(error)", attempt) }
            }
        }
    }

    func keyPut(_ folder: ItemPath, key: String, revision: Int64, _ attempt: Int) {
        guard attempt == generation, keys[folder]?.key == key else { return }
        keys[folder] = (key, revision)
        handle(.keyCreated(folder: folder, revision: revision))
        readKeys(of: folder)
    }

    func keyPutFailed(_ folder: ItemPath, _ reason: String, _ attempt: Int) {
        guard attempt == generation else { return }
        noteError("cannot put this host's key for \(folder): \(reason)")
        keys[folder] = nil
        handle(.keyFailed(folder: folder, reason))
    }

    func deleteKey(_ folder: ItemPath, tries: Int = 0) {
        guard let key = keys[folder]?.key else {
            handle(.keyDeleted(folder: folder))
            return
        }
        let attempt = generation
        let (etcd, bound) = (self.etcd, self.bound)
        Task {
            do {
                _ = try await etcd.delete(key: key)
                bound.execute { $0.keyDeleted(folder, key: key, attempt) }
            } catch {
                bound.execute { $0.keyDeleteFailed(folder, "\(error)", tries: tries, attempt) }
            }
        }
    }

    func keyDeleted(_ folder: ItemPath, key: String, _ attempt: Int) {
        guard attempt == generation, keys[folder]?.key == key else { return }
        keys[folder] = nil
        handle(.keyDeleted(folder: folder))
    }

    func keyDeleteFailed(_ folder: ItemPath, _ reason: String, tries: Int, _ attempt: Int) {
        guard attempt == generation else { return }
        noteError("cannot delete this host's key for \(folder): \(reason)")
        // The other host waits for it; until the session's fence, try again (the fence ends it for good).
        loop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(min(100 << tries, 1000)))) { [weak self] in
            guard let self, attempt == self.generation else { return }
            self.deleteKey(folder, tries: tries + 1)
        }
    }

    /// Reads the folder's keys in create order and tells the table where this host's key stands.
    func readKeys(of folder: ItemPath) {
        guard keys[folder] != nil else { return }
        let attempt = generation
        let (etcd, bound, prefix) = (self.etcd, self.bound, folderPrefix(folder))
        Task {
            do {
                let range = try await etcd.range(prefix: prefix)
                bound.execute { $0.keysRead(folder, range.kvs, attempt) }
            } catch {
                bound.execute { this in
                    guard attempt == this.generation else { return }
                    this.noteError("cannot read the keys of \(folder): \(error)")
                }
            }
        }
    }

    func keysRead(_ folder: ItemPath, _ kvs: [EtcdKeyValue], _ attempt: Int) {
        guard attempt == generation, let mine = keys[folder], let revision = mine.revision else { return }
        let ordered = kvs.sorted { $0.createRevision < $1.createRevision }
        firstHost[folder] = ordered.first.map { String(decoding: $0.value, as: UTF8.self) }
        guard ordered.contains(where: { $0.createRevision == revision }) else { return }  // Gone: the watch says.
        if ordered.first?.createRevision == revision {
            handle(.becameHolder(folder: folder, revision: revision))
        }
        if let next = ordered.first(where: { $0.createRevision > revision }) {
            handle(
                .otherHostWaiting(folder: folder, host: String(decoding: next.value, as: UTF8.self), after: revision)
            )
        }
    }

    // MARK: Watch

    /// One watch over every shared folder's keys: any change under a folder this host has a key in makes it read
    /// that folder's keys again. A watch that ends is started again from the next revision, after a pause.
    func startWatch(fromRevision revision: Int64?) {
        let (etcd, bound, prefix) = (self.etcd, self.bound, "\(configuration.keyPrefix)folders/")
        watchTask = Task {
            var next = revision
            do {
                for try await event in etcd.watch(prefix: prefix, fromRevision: next) {
                    next = event.modRevision + 1
                    bound.execute { $0.watched(key: event.key) }
                }
            } catch {
                bound.execute { $0.noteError("the cluster's watch ended: \(error)") }
            }
            guard !Task.isCancelled else { return }
            try? await Task.sleep(for: .milliseconds(500))
            let resume = next
            bound.execute { this in
                guard !this.stopped else { return }
                this.startWatch(fromRevision: resume)
                // Changes may have been missed while it was down: read every folder this host has a key in.
                for folder in this.keys.keys { this.readKeys(of: folder) }
            }
        }
    }

    func watched(key: String) {
        let prefix = "\(configuration.keyPrefix)folders/"
        guard key.hasPrefix(prefix) else { return }
        let rest = key.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"), let name = Self.unhex(String(rest[..<slash])),
            let folder = folderByName[name]
        else { return }
        readKeys(of: folder)
    }
}
