import CInotifyTools
import FCCore
import FCFileSystemPolicy
import FCSystem
import Foundation
import Logging
import SystemPackage

// Adding and dropping the watch of a directory, and the spellings libinotifytools is given. libinotifytools keeps
// the name of every watch it added and never lets it go when the kernel drops the watch (`IN_IGNORED`: the directory
// or linked file was deleted): asked for the descriptor of that name, it hands back the dead watch's, even after a
// new watch of a new item of the same name. So a name it holds for no live watch of this item is given to it spelled
// another way, which the kernel resolves to the same path. And a directory replaced under a path still watched (its
// old watch not dropped yet: the kernel sends `IN_IGNORED` only once nothing holds the old directory, a shell's
// working directory for one) is told by its identity, and watched anew. Everything here runs on the watcher's thread.

extension InotifyWatcher {
    /// What a spelling names: libinotifytools keeps a directory's name with a final `/`.
    enum SpelledItem {
        case directory
        case file
    }

    /// The most spellings tried for one name. The names of dead watches stay in libinotifytools' tables (it frees a
    /// watch only when `inotify_rm_watch` succeeds) until the next renewal (`InotifyWatcher+Renewal.swift`): a
    /// directory deleted and made again this many times while watched asks for one, and is watched after it.
    public static let maximumSpellings = 256

    /// `path` as libinotifytools can be given it: as it is when libinotifytools holds no watch of that name, or holds
    /// a live one of the same item (a directory or a linked file of `identity`); else with one more `/.` before its
    /// last component than the last spelling it holds for another item. `nil` after ``maximumSpellings`` tries, or
    /// for a path of no slash. A linked file replaced under its name by another keeps its watch while it has other
    /// names, and libinotifytools its name: the new file is watched under another spelling.
    func unseenSpelling(_ path: [UInt8], as item: SpelledItem, identity: FileIdentity? = nil) -> [UInt8]? {
        guard let slash = path.lastIndex(of: Self.slash) else { return nil }
        let head = Array(path[..<slash])
        let tail = Array(path[slash...])
        var spelling = path
        for dots in 0..<Self.maximumSpellings {
            if dots > 0 { spelling = head + Array(repeating: [Self.slash, Self.dot], count: dots).joined() + tail }
            switch item {
            case .directory:
                let known = inotifytools_wd_from_filename(Self.cString(spelling + [Self.slash]))
                if known < 0 || (identity != nil && directoryIdentities[known] == identity) { return spelling }
            case .file:
                let known = inotifytools_wd_from_filename(Self.cString(spelling))
                if known < 0 || (identity != nil && linked.watch(known)?.identity == identity) { return spelling }
            }
        }
        return nil
    }

    static let slash = UInt8(ascii: "/")
    static let dot = UInt8(ascii: ".")

    /// A path's bytes with a NUL after them, as libinotifytools takes a name (`const char *`): a name that is not
    /// UTF-8 is given as it is (a `String` would replace its bytes, and name another directory or none).
    static func cString(_ bytes: [UInt8]) -> [CChar] { bytes.map { CChar(bitPattern: $0) } + [0] }

    /// Whether the watch of `directory` is of a directory no longer there (another one is, or nothing): then it is
    /// dropped, and `true` says to add the watch anew. A `stat` per request for a directory already watched.
    func watchesAnother(_ directory: ItemPath) -> Bool {
        guard let descriptor = byPath[directory], let watched = directoryIdentities[descriptor] else { return false }
        let now = try? FileSystemCalls.status(pathBytes: directory.bytes, followingLinks: true, readingMount: false)
            .identity
        guard now != watched else { return false }
        dropWatch(of: directory)
        return true
    }

    /// Lets the watch of `directory` go, and what hangs on it.
    func dropWatch(of directory: ItemPath) {
        indexed.remove(directory)
        guard let descriptor = byPath[directory] else { return }
        forgetWatch(descriptor)
        _ = inotifytools_remove_watch_by_wd(descriptor)
    }

    /// Forgets the directory watch `descriptor` and what hangs on it: dropped here (``dropWatch(of:)``), or by the
    /// kernel (`IN_IGNORED`). Whether it was a directory's watch.
    @discardableResult
    func forgetWatch(_ descriptor: Int32) -> Bool {
        foldsNames[descriptor] = nil
        directoryIdentities[descriptor] = nil
        guard let directory = byDescriptor.removeValue(forKey: descriptor) else { return false }
        byPath[directory] = nil
        indexed.remove(directory)
        removed.append(directory)
        forgetLinkedFiles(in: directory)
        return true
    }

    func add(_ directory: ItemPath, scan: Bool, indexing: Bool, into batch: inout [FileSystemEvent]) {
        if let cap, byDescriptor.count + linked.count >= cap {
            refusedForRoom(directory, indexing: indexing)
            failed(directory, "filecoordd's cap of \(cap) inotify watches (--max-watches) is reached", into: &batch)
            return
        }
        let bytes = directory.bytes
        // What is there now (`nil` when it cannot be looked at: the watch's own call says why).
        let identity = try? FileSystemCalls.status(pathBytes: bytes, followingLinks: true, readingMount: false).identity
        guard let path = unseenSpelling(bytes, as: .directory, identity: identity) else {
            // Every spelling is held by a dead watch: libinotifytools is started again after this batch, and the
            // directory (wanted) watched then under its own name.
            guard renewing else {
                renewalWanted = true
                return
            }
            failed(directory, "\(Self.maximumSpellings) live watches hold every spelling of its name", into: &batch)
            return
        }
        guard inotifytools_watch_file(Self.cString(path), Int32(bitPattern: Self.mask)) != 0 else {
            switch inotifytools_error() {
            case ENOENT, ENOTDIR:
                return  // Not a directory (its parent's watch covers it), or not there yet (asked again once created).
            case ENOSPC:
                refusedForRoom(directory, indexing: indexing)
                let limit = status.kernelMaximumWatches.map { " (\($0))" } ?? ""
                failed(
                    directory,
                    "the kernel's limit of inotify watches, fs.inotify.max_user_watches\(limit), is reached",
                    into: &batch
                )
            case let error:
                failed(directory, "inotify_add_watch failed: \(Errno(rawValue: error))", into: &batch)
            }
            return
        }
        let descriptor = inotifytools_wd_from_filename(Self.cString(path + [Self.slash]))
        guard descriptor >= 0 else { return }
        if let other = byDescriptor[descriptor], other != directory {
            // The same directory under another path (a bind mount): its events keep the first path.
            logger.debug("\(directory) is the directory already watched as \(other)")
            return
        }
        byDescriptor[descriptor] = directory
        byPath[directory] = descriptor
        directoryIdentities[descriptor] = identity
        waitingForRoom[directory] = nil
        added.append(directory)
        // In the batch's order: a failure told before, in this batch or an earlier one, is over from here.
        if toldFailed.remove(directory) != nil { batch.append(.watchAdded(directory)) }
        updateWatchCounts()
        let folds = foldsNames(descriptor, directory)
        // One listing serves both: what a directory made before its watch holds, and its files' identities.
        guard scan || indexing else { return }
        let names = Self.names(in: bytes)
        if scan { self.scan(directory, path: bytes, names: names, folds: folds, into: &batch) }
        if indexing {
            noteEntries(in: directory, names: names, folds: folds)
            indexed.insert(directory)
        }
    }

    /// Whether the names of the watch `descriptor` (directory `directory`) are folded; decided once, on this thread.
    func foldsNames(_ descriptor: Int32, _ directory: ItemPath) -> Bool {
        if let known = foldsNames[descriptor] { return known }
        let path = directory.bytes
        guard let status = try? FileSystemCalls.status(pathBytes: path, followingLinks: true),
            let answer = FileSystemCaseRule.decide(pathBytes: path, device: status.identity.device)
        else { return false }
        foldsNames[descriptor] = answer
        return answer
    }

    /// Tells that `directory` could not be watched (`FileSystemEvent.watchFailed`), and remembers it was told: a
    /// watch added later is told too (``FileSystemEvent/watchAdded(_:)``), in the batch's order.
    private func failed(_ directory: ItemPath, _ reason: String, into batch: inout [FileSystemEvent]) {
        status.failedWatches += 1
        toldFailed.insert(directory)
        batch.append(.watchFailed(directory, reason: reason))
    }

    /// Notes a wanted directory refused for want of a watch.
    private func refusedForRoom(_ directory: ItemPath, indexing: Bool) {
        // Indexed if any who asked wanted it indexed (a presenter's folder; not a live query's alone).
        waitingForRoom[directory] = indexing || waitingForRoom[directory] == true
        watchesAtRefusal = byDescriptor.count + linked.count
        roomRefusals += 1
    }

    /// Gives the watches let go since the last refusal to the directories that wait for one, in path order, one
    /// each, until one is refused again (no room after all): its presenters and live queries hear it is watched
    /// (`WatcherReport.watched`). Not scanned as made: what changed meanwhile is told as such (a did change to the
    /// presenters; the query's tree is read again). At the end of each pass, after the commands and the events that
    /// may have let watches go; costs a comparison while none waits or none was let go. Watches other processes let go
    /// under the kernel's limit are not seen: a directory refused by `ENOSPC` waits for one of the daemon's.
    func retryWaitingForRoom(into batch: inout [FileSystemEvent]) {
        guard !waitingForRoom.isEmpty else { return }
        var room = watchesAtRefusal - (byDescriptor.count + linked.count)
        guard room > 0 else { return }
        for (directory, indexing) in waitingForRoom.sorted(by: { $0.key < $1.key }) {
            guard room > 0 else { return }
            guard wanted.contains(directory), byPath[directory] == nil else {
                waitingForRoom[directory] = nil
                continue
            }
            room -= 1
            let refusals = roomRefusals
            add(directory, scan: false, indexing: indexing, into: &batch)
            if roomRefusals != refusals { return }  // No room after all: wait for the next watch let go.
            // Watched; or gone (asked again once made), or refused for another reason (told): not waiting any more.
            waitingForRoom[directory] = nil
        }
    }

    /// After an overflow: directories that were wanted but not watchable (not created yet) may exist now.
    func rescan(into batch: inout [FileSystemEvent]) {
        status.rescans += 1
        for directory in wanted.sorted() where byPath[directory] == nil {
            // Indexed unless it waits for room for a live query alone: safe whoever wants it.
            add(directory, scan: true, indexing: waitingForRoom[directory] ?? true, into: &batch)
        }
    }
}
