import Dispatch
import FCCore
import FCDaemon
import FCSystem
import Logging
import NIOCore

// Presenters across hosts, part three (issue 41; docs/SEMANTICS.md §14.1): `--shared-scan-interval SECONDS`. inotify
// reports only this kernel's changes, so a program that writes without coordination on another host is seen by no
// watcher here. With the interval set, this host examines every item its presenters present in shared folders (its
// inode, size and change time) at that interval, and reports each change to that presenter as the watcher reports a
// change it found after a registration (`FileSystemEvent.changedBeforeWatch`): `presentedItemDidChange` for an item,
// `presentedSubitemDidChange` for an entry of a folder. The arbiter's echo rules apply (the state read is passed as
// observed), so the result of a coordinated write of this host is not reported again.
//
// - Important: Every method runs on the adapter's loop, as ClusterHost's; the examination itself runs off it (a stat
//   on a network file system can block), one at a time.

extension ClusterHost {
    /// Schedules the next scan, if the interval is set.
    func scheduleSharedScan() {
        guard let interval = configuration.sharedScanInterval, !stopped else { return }
        exchange.scanTask = loop.assumeIsolated().scheduleTask(in: TimeAmount(interval)) { [weak self] in
            self?.scanShared()
        }
    }

    /// Examines this host's presented items in shared folders off the loop, then compares on it.
    func scanShared() {
        guard !stopped, !exchange.scanning else { return }
        var targets: [(PresenterID, ItemPath)] = []
        for (id, entry) in exchange.published {
            if let path = sharedPaths.local(entry.record.path) { targets.append((id, path)) }
        }
        guard !targets.isEmpty else { return scheduleSharedScan() }
        exchange.scanning = true
        let (bound, examined) = (self.bound, targets)
        DispatchQueue.global(qos: .utility).async {
            var found: [(PresenterID, ItemPath, ItemStamp)] = []
            for (id, path) in examined {
                let state: ChangeTimes.FileState?
                do { state = try ChangeTimes.state(ofPathBytes: path.bytes) } catch {
                    continue  // Not readable (no permission, an I/O error): no state, nothing reported.
                }
                let stamp = state.map { ItemStamp.present(inode: $0.inode, size: $0.size, changeTime: $0.changeTime) }
                found.append((id, path, stamp ?? .absent))
            }
            let results = found
            bound.execute { $0.scanned(results) }
        }
    }

    /// Another host asked or told presenter `id` something: a relinquish holds the scan back from its item until the
    /// other host says what happened; anything else means it heard of the change, so the next scan reports none.
    func scanHeard(_ kind: PresenterMessageKind, for id: PresenterID) {
        // Only a published presenter is scanned, and only its entries go when it is withdrawn (publish(_:at:)).
        guard exchange.published[id] != nil else { return }
        switch kind {
        case .relinquishToReader, .relinquishToWriter:
            exchange.scanHeld[id] = .now() + .seconds(60)
        default:
            exchange.scanHeld[id] = nil
            exchange.scanQuiet.insert(id)
        }
    }

    /// Reports each presented item whose state moved since the last scan to its presenter, unless another host told
    /// the presenter of a change meanwhile.
    func scanned(_ found: [(PresenterID, ItemPath, ItemStamp)]) {
        exchange.scanning = false
        var events: [FileSystemEvent] = []
        var observed: [ItemPath: ItemStamp] = [:]
        let now = NIODeadline.now()
        for (id, path, stamp) in found where exchange.published[id] != nil {
            if let until = exchange.scanHeld[id] {
                if until > now { continue }
                exchange.scanHeld[id] = nil
            }
            let previous = exchange.scanStamps.updateValue(stamp, forKey: id)
            if exchange.scanQuiet.remove(id) != nil { continue }
            guard let previous, previous != stamp else { continue }
            events.append(.changedBeforeWatch(path, presenter: id))
            observed[path] = stamp
        }
        if !events.isEmpty {
            logger.debug("cluster: the shared scan found changes", metadata: ["changes": "\(events.count)"])
            gates.fileSystemChanged(events, observed: observed)
        }
        scheduleSharedScan()
    }
}
