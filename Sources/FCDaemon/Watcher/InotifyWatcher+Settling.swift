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

    /// `path` moves away (`IN_MOVED_FROM`): its held change, and those below it for a folder, are told now, before the
    /// move (at the new place the name means another item, and below a folder moved the old paths lead nowhere). The
    /// item's own is dropped again when the move's other half comes in the same batch (``dropToldBeforeMove(cookie:toFreeName:)``);
    /// those below a folder are not: the rename tells them a move, not their change.
    func tellBeforeMove(of path: ItemPath, isDirectory: Bool, cookie: UInt32, into batch: inout [FileSystemEvent]) {
        if settling.take(path) {
            toldBeforeMoves[cookie] = batch.count
            batch.append(.changed(path))
        }
        if isDirectory {
            for below in settling.takeAll(under: path) { batch.append(.changed(below)) }
        }
    }

    /// The move `cookie` ended in a watched folder (`IN_MOVED_TO`): the moved item's change told before it is dropped,
    /// since the rename is told, and a rename over an item (a save through a temporary file whose times or mode were
    /// set after its last write, as rsync and `shutil.copy2` do) is a change of that item: told at the temporary's
    /// name, it reached the folder's presenters for a name gone at once. A change and a rename of one item within the
    /// quiet time is then told as the rename alone, unless the rename was to a name known to be free (`toFreeName`:
    /// a file moved in a folder whose files are indexed, a presenter's): the rename then tells no change, and the
    /// change stays, told before the move.
    func dropToldBeforeMove(cookie: UInt32, toFreeName: Bool) {
        guard let index = toldBeforeMoves.removeValue(forKey: cookie), !toFreeName else { return }
        droppedFromBatch.insert(index)
    }

    /// The batch as it is to be reported: without the changes ``dropToldBeforeMove(cookie:toFreeName:)`` dropped. O(batch) when
    /// one was dropped, else O(1).
    func finishReading(_ batch: inout [FileSystemEvent]) {
        toldBeforeMoves = [:]
        guard !droppedFromBatch.isEmpty else { return }
        batch = batch.enumerated().filter { !droppedFromBatch.contains($0.offset) }.map(\.element)
        droppedFromBatch = []
    }

    /// Tells the held changes that are due, or due within ``settleStep`` (all of them, `everything`), and sets the
    /// timer for the next. Each item's state is read (one `lstat`) and remembered, so that the close of a change told
    /// is not told again. An item not there is told all the same: a deletion or a move in a watched folder took its
    /// change before; one made since has its event next in the queue, after this change, as it happened.
    func tellSettled(into batch: inout [FileSystemEvent], everything: Bool = false) {
        for path in settling.takeDue(at: .now + Self.settleStep, everything: everything) {
            batch.append(.changed(path))
            if let state = (try? ChangeTimes.state(ofPathBytes: path.bytes)) ?? nil { settling.told(path, as: state) }
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
