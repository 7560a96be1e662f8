import CInotifyTools
import FCCore
import FCSystem
import Foundation
import Logging

// The watcher's part of issue 26 (docs/ARCHITECTURE.md §10 "Files with other names"): the files of watched
// directories are indexed by identity, and those with other names (hard links) are watched by their inode, so that
// a write through a name in another directory reaches the presenters of the watched one. Everything here runs on
// the watcher's thread, as the rest of ``InotifyWatcher``'s state.

extension InotifyWatcher {
    /// An event on a linked file's own watch: a finished write is a change of each of its names in watched
    /// directories, and so, once settled, is a write without one (`IN_MODIFY`); a change of its attributes may be a
    /// link made or removed (which is no change of the other names: the kernel tells it to this watch alone), so its
    /// names are looked at again. An attribute changed through one of its names reaches that name's folder's watch,
    /// when it has one.
    func readLinkedFile(_ mask: UInt32, _ descriptor: Int32, into batch: inout [FileSystemEvent]) {
        if mask & UInt32(IN_IGNORED) != 0 {
            // The file is gone (its last name removed and closed): libinotifytools keeps the watch's name, which
            // ``unseenSpelling(_:as:identity:)`` steps around until the next renewal.
            _ = linked.drop(descriptor)
            echoes.forget(descriptor)
            updateWatchCounts()
            return
        }
        status.events += 1
        guard let watch = linked.watch(descriptor) else { return }
        if mask & UInt32(IN_CLOSE_WRITE) != 0 {
            for name in watch.names.sorted()
            where settling.closed(name, now: { (try? ChangeTimes.state(ofPathBytes: name.bytes)) ?? nil }) {
                if !echoes.isEcho(of: name, watchedBy: descriptor) { batch.append(.changed(name)) }
            }
        } else if mask & UInt32(IN_MODIFY) != 0 {
            // Through any name: each name's change is held until it settles, as a directory's are.
            for name in watch.names.sorted() { hold(name, into: &batch) }
        }
        if mask & UInt32(IN_ATTRIB) != 0 {
            // One lookup per name; a name that reaches another file, or a file with one name left, is let go (its
            // directory's watch covers its only name).
            for name in watch.names.sorted() { noteEntry(name) }
        }
    }

    /// The directory's watch reported a finished write of `path`: if it is a name of a linked file, the file's own
    /// watch reports the same write next, which ``readLinkedFile(_:_:into:)`` then drops (``LinkedWriteEchoes``).
    func noteDirectWrite(of path: ItemPath) {
        if let descriptor = linked.descriptor(named: path) { echoes.directWrite(of: path, watchedBy: descriptor) }
    }

    /// Looks at the entries of a directory just watched (`names`, sorted): each file is indexed by identity, and
    /// those with other names get a watch each. One `lstat` per entry, once per watch added, for at most
    /// ``WatchedFileIdentities/maximumPerDirectory`` entries (in name order; past them, logged once).
    func noteEntries(in directory: ItemPath, names: [[UInt8]], folds: Bool) {
        if names.count > WatchedFileIdentities.maximumPerDirectory { noteCut(directory) }
        for name in names.prefix(WatchedFileIdentities.maximumPerDirectory) {
            noteEntry(directory.appending(folds ? Self.folded(name) : name))
        }
    }

    /// Lists the watched `directory` and indexes its files (``noteEntries(in:names:folds:)``), when it was watched
    /// without: a query's folder the arbiter now wants too, or a folder watched anew by a renewal.
    func indexWatched(_ directory: ItemPath) {
        guard let descriptor = byPath[directory] else { return }
        noteEntries(in: directory, names: Self.names(in: directory.bytes), folds: foldsNames(descriptor, directory))
        indexed.insert(directory)
    }

    /// Looks at one entry `path` of a watched directory (one `lstat`): indexed if it is a file, watched if it has
    /// other names, let go if it was and is not (any more, or not the same file).
    func noteEntry(_ path: ItemPath) {
        guard let directory = path.parent else { return }
        guard let file = try? FileSystemCalls.status(pathBytes: path.bytes, followingLinks: false), file.kind == .other
        else {
            forgetEntry(path)
            return
        }
        if !files.set(path, to: file.identity) { noteCut(directory) }
        guard file.linkCount > 1 else {
            forgetLinkedFile(path)
            return
        }
        if let descriptor = linked.descriptor(of: file.identity) {
            if let emptied = linked.add(path, identity: file.identity, descriptor: descriptor) {
                removeLinkedWatch(emptied)
            }
            updateWatchCounts()
            return
        }
        forgetLinkedFile(path)  // It reached another file before.
        guard linked.hasRoom(in: directory) else {
            noteCut(directory)
            return
        }
        if let cap, byDescriptor.count + linked.count >= cap {
            logger.debug("\(path) has other names but is not watched: the cap of \(cap) watches is reached")
            return
        }
        guard let spelling = unseenSpelling(path.bytes, as: .file, identity: file.identity) else {
            // Every spelling is held by a dead watch: watched after the renewal this asks for (its directory's
            // entries are looked at again then).
            if !renewing { renewalWanted = true }
            return
        }
        guard inotifytools_watch_file(Self.cString(spelling), Int32(bitPattern: Self.linkedFileMask)) != 0 else {
            logger.debug("\(path) has other names but is not watched: errno \(inotifytools_error())")
            return
        }
        let descriptor = inotifytools_wd_from_filename(Self.cString(spelling))
        guard descriptor >= 0, byDescriptor[descriptor] == nil else { return }
        if let emptied = linked.add(path, identity: file.identity, descriptor: descriptor) {
            removeLinkedWatch(emptied)
        }
        updateWatchCounts()
    }

    /// Says once per watch that a directory holds more files than the watcher follows by identity.
    private func noteCut(_ directory: ItemPath) {
        guard cutDirectories.insert(directory).inserted else { return }
        logger.notice(
            "\(directory) holds more than \(WatchedFileIdentities.maximumPerDirectory) files, or more than \(LinkedFileWatches.maximumPerDirectory) with other names: a write through another name of the rest is not reported there"
        )
    }

    /// A coordinated write of the file `identity`, which has other names, ended: its names in watched directories
    /// are reported changed, unless the file's own watch saw the write (its close came before this command, so the
    /// watch's event was read first), and the file is watched from now on. Echoes (the names the claim took) are
    /// the arbiter's to drop.
    func reportWrite(of identity: FileIdentity, into batch: inout [FileSystemEvent]) {
        guard linked.descriptor(of: identity) == nil else { return }
        let names = files.names(of: identity)
        for name in names { batch.append(.changed(name)) }
        for name in names { noteEntry(name) }
    }

    /// Lets the entry `path` go (deleted, renamed away, not a file).
    func forgetEntry(_ path: ItemPath) {
        files.remove(path)
        forgetLinkedFile(path)
    }

    /// Lets the name `path` go (no longer a linked file's): the file's watch goes with its last name.
    func forgetLinkedFile(_ path: ItemPath) {
        guard linked.contains(path) else { return }
        if let descriptor = linked.remove(path) { removeLinkedWatch(descriptor) }
        updateWatchCounts()
    }

    /// Lets the linked files of `directory` go with its watch.
    func forgetLinkedFiles(in directory: ItemPath) {
        cutDirectories.remove(directory)
        files.removeDirectory(directory)
        for descriptor in linked.removeDirectory(directory) { removeLinkedWatch(descriptor) }
        updateWatchCounts()
    }

    private func removeLinkedWatch(_ descriptor: Int32) {
        echoes.forget(descriptor)
        _ = inotifytools_remove_watch_by_wd(descriptor)
    }
}
