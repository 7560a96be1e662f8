import FCCore
import FCSystem
import Testing

@testable import FCDaemon

/// The watcher's held changes (``SettlingChanges``), by their clock: quiet, the longest hold, a finished write, the
/// bound.
struct SettlingChangesTests {
    private static func path(_ string: String) -> ItemPath { try! ItemPath(absolute: string) }
    private let start = ContinuousClock.now

    private func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test func aChangeIsDueOnceQuietAndAtTheLatestAfterTheLongestHold() {
        var settling = SettlingChanges()
        let quiet = Self.path("/d/quiet")
        let busy = Self.path("/d/busy")
        settling.note(quiet, at: at(0), drainedBefore: 5)
        settling.note(busy, at: at(0), drainedBefore: 7)
        #expect(settling.drainedBefore == 5)
        var due = settling.takeDue(at: at(99))
        #expect(due == [])
        // Changed again every 90 ms: never quiet, so due a second after its first change.
        for milliseconds in stride(from: 90, through: 990, by: 90) {
            settling.note(busy, at: at(milliseconds), drainedBefore: 9)
            if milliseconds == 90 {
                due = settling.takeDue(at: at(100))
                #expect(due == [quiet])
            }
        }
        #expect(settling.drainedBefore == 7)
        due = settling.takeDue(at: at(999))
        #expect(due == [])
        due = settling.takeDue(at: at(1_000))
        #expect(due == [busy])
        #expect(settling.isEmpty && settling.drainedBefore == nil && settling.nextDue == nil)
    }

    @Test func aFinishedWriteTakesTheHeldChangeAndIsNotToldAgainWhenItClosesAChangeTold() {
        var settling = SettlingChanges()
        let file = Self.path("/d/file")
        let toldState = ChangeTimes.FileState(inode: 1, size: 5, changeTime: 100)
        let written = ChangeTimes.FileState(inode: 1, size: 5, changeTime: 200)
        settling.note(file, at: at(0), drainedBefore: 1)
        var looked = false
        var told = settling.closed(file) {
            looked = true
            return toldState
        }
        #expect(told && !looked, "the close of a held change is the change: told, without a look")
        #expect(settling.isEmpty)
        settling.note(file, at: at(200), drainedBefore: 2)
        var due = settling.takeDue(at: at(300))
        #expect(due == [file])
        settling.told(file, as: toldState)
        told = settling.closed(file) { toldState }
        #expect(!told, "the close of a change told, the file as it was told, is no change")
        told = settling.closed(file) { toldState }
        #expect(told, "a close after that is")
        // Written since it was told without an IN_MODIFY (through mmap): its close is told.
        settling.note(file, at: at(400), drainedBefore: 3)
        due = settling.takeDue(at: at(500))
        settling.told(file, as: toldState)
        told = settling.closed(file) { written }
        #expect(told, "written since the change told")
        // Written again (IN_MODIFY) since the change told: the close is the new change.
        settling.note(file, at: at(600), drainedBefore: 4)
        due = settling.takeDue(at: at(700))
        settling.told(file, as: toldState)
        settling.note(file, at: at(800), drainedBefore: 5)
        told = settling.closed(file) { toldState }
        #expect(told, "written again since the change told")
        settling.note(file, at: at(900), drainedBefore: 6)
        settling.forget(file)
        due = settling.takeDue(at: at(2_000))
        #expect(settling.isEmpty && due == [])
    }

    @Test func aMoveTakesTheHeldChangesOfTheItemOrOfTheFolderAtOnce() {
        var settling = SettlingChanges()
        let file = Self.path("/d/file")
        let inner = Self.path("/d/sub/inner")
        let deeper = Self.path("/d/sub/x/deeper")
        let beside = Self.path("/d/subway")
        for path in [file, inner, deeper, beside] { settling.note(path, at: at(0), drainedBefore: 1) }
        let taken = settling.take(file)
        #expect(taken)
        let again = settling.take(file)
        #expect(!again)
        let below = settling.takeAll(under: Self.path("/d/sub"))
        #expect(below == [inner, deeper])
        let due = settling.takeDue(at: at(100))
        #expect(due == [beside])
    }

    @Test func aTimingOfItsOwn() {
        var settling = SettlingChanges(timing: SettlingTiming(quiet: .seconds(5), longest: .seconds(2)))
        let file = Self.path("/d/file")
        settling.note(file, at: at(0), drainedBefore: 1)
        var due = settling.takeDue(at: at(1_999))
        #expect(due == [])
        due = settling.takeDue(at: at(2_000))
        #expect(due == [file])
    }

    @Test func heldChangesAreBounded() {
        var settling = SettlingChanges()
        for index in 0..<SettlingChanges.limit {
            #expect(!settling.isFull)
            settling.note(Self.path("/d/\(index)"), at: at(0), drainedBefore: 0)
        }
        #expect(settling.isFull && settling.count == SettlingChanges.limit)
        let due = settling.takeDue(at: at(0), everything: true)
        #expect(due.count == SettlingChanges.limit)
        #expect(settling.isEmpty)
    }
}
