import FCCore
import FCSystem
import Foundation

// Changes without a finished write (``SettlingChanges``): held on the watcher's thread until they settle, then told
// as `FileSystemEvent.changed`. Everything here runs on the watcher's thread, as the rest of ``InotifyWatcher``'s
// state; the timer only queues ``InotifyWatcher/Command/settle``.

extension InotifyWatcher {
    /// An `IN_MODIFY` or `IN_ATTRIB` of `path`, read in the batch being read: held until it settles. At the limit,
    /// every held change is told at once.
    func hold(_ path: ItemPath, into batch: inout [FileSystemEvent]) {
        if settling.isFull { tellSettled(into: &batch, everything: true) }
        settling.note(path, at: batchReadAt, drainedBefore: drainedBeforeBatch)
    }

    /// Tells the held changes that are due (all of them, `everything`), each if its item is still there (one `lstat`
    /// each; a folder moved away took its items' names with it), and sets the timer for the next.
    func tellSettled(into batch: inout [FileSystemEvent], everything: Bool = false) {
        let due = settling.takeDue(at: .now, everything: everything)
        for path in due where (try? FileSystemCalls.status(pathBytes: path.bytes, followingLinks: false)) != nil {
            batch.append(.changed(path))
        }
        armSettling()
    }

    /// Sets the timer for the earliest held change, unless it is set: it fires no later than any held change is
    /// due (a change held later is due later), and is set again for what is not due when it fires.
    func armSettling() {
        guard !settleArmed, let next = settling.nextDue else { return }
        settleArmed = true
        let delay = max(.zero, next - .now)
        let (seconds, attoseconds) = delay.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        settleTimers.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            self?.enqueue(.settle)
        }
    }
}
