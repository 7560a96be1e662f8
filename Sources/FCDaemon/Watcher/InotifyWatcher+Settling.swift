import FCCore
import FCSystem
import Foundation

// Changes without a finished write (``SettlingChanges``): held on the watcher's thread until they settle, then told
// as `FileSystemEvent.changed`. Everything here runs on the watcher's thread, as the rest of ``InotifyWatcher``'s
// state; the timer only queues ``InotifyWatcher/Command/settle``.

extension InotifyWatcher {
    /// The timer's finest step: held changes due within it of each other are told together (a timer per change would
    /// cost O(held) each).
    static let settleStep: Duration = .milliseconds(20)

    /// An `IN_MODIFY` or `IN_ATTRIB` of `path` (and of every other name of its file the watcher knows: a change
    /// through one name is one of all), read in the batch being read: held until it settles. At the limit, every held
    /// change is told at once.
    func hold(_ path: ItemPath, into batch: inout [FileSystemEvent]) {
        var names = [path]
        if let descriptor = linked.descriptor(named: path), let watch = linked.watch(descriptor) {
            names = watch.names.sorted()
        }
        for name in names {
            if settling.isFull { tellSettled(into: &batch, everything: true) }
            settling.note(name, at: batchReadAt, drainedBefore: drainedBeforeBatch)
        }
    }

    /// `path` moves away (`IN_MOVED_FROM`): its held change, or those below it for a folder, are told now, before the
    /// move (at the new place the name means another item, and below a folder moved the old paths lead nowhere).
    func tellBeforeMove(of path: ItemPath, isDirectory: Bool, into batch: inout [FileSystemEvent]) {
        if settling.take(path) { batch.append(.changed(path)) }
        guard isDirectory else { return }
        for below in settling.takeAll(under: path) { batch.append(.changed(below)) }
    }

    /// Tells the held changes that are due (all of them, `everything`), each if its item is still there (one `lstat`
    /// each, remembered so that the close of a change told is not told again), and sets the timer for the next.
    func tellSettled(into batch: inout [FileSystemEvent], everything: Bool = false) {
        for path in settling.takeDue(at: .now, everything: everything) {
            do {
                guard let state = try ChangeTimes.state(ofPathBytes: path.bytes) else { continue }  // Gone since.
                batch.append(.changed(path))
                settling.told(path, as: state)
            } catch {
                batch.append(.changed(path))  // Not readable: told, not remembered.
            }
        }
        armSettling()
    }

    /// Sets the timer for the earliest held change, unless it is set: it fires no later than any held change is
    /// due (a change held later is due later) and no sooner than ``settleStep``, and is set again for what is not due
    /// when it fires.
    func armSettling() {
        guard !settleArmed, let next = settling.nextDue else { return }
        settleArmed = true
        let delay = max(Self.settleStep, next - .now)
        let (seconds, attoseconds) = delay.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        settleTimers.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            self?.enqueue(.settle)
        }
    }

    /// A write of the file that wakes this watcher (`wake` is the event's name as the kernel spelled it, in the
    /// folder of watch `descriptor`): compared by the folder's identity, whatever spelling the folder is watched by.
    func isWakeFile(_ descriptor: Int32, name: [UInt8]) -> Bool {
        guard let wakeFile, name == wakeFile.name else { return false }
        return directoryIdentities[descriptor] == wakeFile.folder
    }
}
