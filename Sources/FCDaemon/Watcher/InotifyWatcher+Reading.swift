import CInotifyTools
import FCCore
import FCSystem
import Foundation
import Logging

// One inotify event read into the batch being read: the watcher's translation of the kernel's events
// (`FileSystemEvent`). On the watcher's thread, as the rest of ``InotifyWatcher``'s state.

extension InotifyWatcher {
    func read(
        _ event: UnsafeMutablePointer<inotify_event>,
        into batch: inout [FileSystemEvent],
        wake: inout Bool
    ) {
        let mask = event.pointee.mask
        let descriptor = event.pointee.wd
        // Set for all but a change to hold (put back where one is held).
        let otherBefore = readOther
        readOther = true
        if mask & UInt32(IN_IGNORED) != 0 { noteDropped(descriptor) }
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            status.overflows += 1
            logger.warning("inotify's event queue overflowed: watched presenters are told of a change")
            batch.append(.overflow)
            settling.clear()  // The overflow tells each held change's item.
            rescan(into: &batch)
            wake = true  // Commands' wake-ups may be lost with the rest.
            return
        }
        if descriptor == wakeWatch {
            wake = true
            return
        }
        if linked.watch(descriptor) != nil {
            readLinkedFile(mask, descriptor, into: &batch)
            if mask == UInt32(IN_MODIFY) { readOther = otherBefore }
            return
        }
        if mask & UInt32(IN_IGNORED) != 0 {
            // The directory is gone (deleted, or on an unmounted file system); its parent's watch said so.
            if forgetWatch(descriptor) { updateWatchCounts() }
            return
        }
        guard let directory = byDescriptor[descriptor], event.pointee.len > 0 else { return }
        status.events += 1
        let name = UnsafeRawPointer(event).advanced(by: MemoryLayout<inotify_event>.size)
            .assumingMemoryBound(to: UInt8.self)
        let length = strnlen(UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self), Int(event.pointee.len))
        var bytes = Array(UnsafeBufferPointer(start: name, count: length))
        if mask & UInt32(IN_MODIFY | IN_ATTRIB) != 0, isWakeFile(descriptor, name: bytes) {
            readOther = otherBefore
            return
        }
        if foldsNames(descriptor, directory) { bytes = Self.folded(bytes) }
        let path = directory.appending(bytes)
        let isDirectory = mask & UInt32(IN_ISDIR) != 0
        // A file moved to a name that held none before (known only in a folder whose files are indexed).
        let toFreeName =
            mask & UInt32(IN_MOVED_TO) != 0 && !isDirectory && indexed.contains(directory)
            && !cutDirectories.contains(directory) && !files.contains(path)
        if !isDirectory {
            if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 { forgetEntry(path) }
            // A file made or moved in: indexed, and watched if it has other names (a link made into the directory).
            if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 { noteEntry(path) }
        }
        if mask & UInt32(IN_MOVED_FROM) != 0 {
            tellBeforeMove(of: path, isDirectory: isDirectory, cookie: event.pointee.cookie, into: &batch)
        } else if mask & UInt32(IN_DELETE | IN_MOVED_TO) != 0 {
            settling.forget(path)  // Deleted, or the name holds another item now.
            // Renamed within the watched folders: the rename is told (a save through a temporary is a change), and
            // tells the change too unless the name was free.
            if mask & UInt32(IN_MOVED_TO) != 0 {
                dropToldBeforeMove(cookie: event.pointee.cookie, toFreeName: toFreeName)
            }
        } else if mask & UInt32(IN_MODIFY | IN_ATTRIB) != 0 {
            hold(path, into: &batch)
            readOther = otherBefore
            return
        }
        if mask & UInt32(IN_CLOSE_WRITE) != 0 {
            if settling.closed(path, now: { (try? ChangeTimes.state(ofPathBytes: path.bytes)) ?? nil }) {
                batch.append(.changed(path))
            }
            noteDirectWrite(of: path)
        }
        if mask & UInt32(IN_CREATE) != 0 { batch.append(.created(path, isDirectory: isDirectory)) }
        if mask & UInt32(IN_DELETE) != 0 { batch.append(.deleted(path)) }
        if mask & UInt32(IN_MOVED_FROM) != 0 { batch.append(.movedFrom(path, cookie: event.pointee.cookie)) }
        if mask & UInt32(IN_MOVED_TO) != 0 {
            batch.append(.movedTo(path, cookie: event.pointee.cookie, isDirectory: isDirectory))
        }
    }
}
