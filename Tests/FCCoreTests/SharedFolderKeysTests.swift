import FCCore
import Testing

/// ``SharedFolderKeys``: what a host's copy of a shared folder's keys (a list, then the watch) tells its table
/// (issue 40; the cluster simulator runs it against a model store whose answers and watch reports come in either
/// order).
@Suite struct SharedFolderKeysTests {
    static let folder = try! ItemPath(absolute: "/shared/projects")
    static let gone = HostLeaseEvent.sessionLost("this host's key for \(folder) is gone from the cluster")
    static let held = HostLeaseEvent.becameHolder(folder: folder, revision: 9)

    /// The keys under test, in a box: `#expect` cannot call a mutating method of a local variable.
    final class Box {
        var value: SharedFolderKeys
        init(_ folder: ItemPath) { value = SharedFolderKeys(folder: folder, host: "b") }
        var own: SharedFolderKeys.Own? { value.own }
        var ahead: [String]? { value.ahead }
        var firstHost: String? { value.firstHost }
        func putSent(name: String) { value.putSent(name: name) }
        func putAcknowledged(name: String, listsFrom: Int) -> Bool {
            value.putAcknowledged(name: name, listsFrom: listsFrom)
        }
        func leave() -> String? { value.leave() }
        func forget(name: String) -> Bool { value.forget(name: name) }
        func sessionReplaced() { value.sessionReplaced() }
        func listed(_ keys: [SharedFolderKeys.Key], serial: Int) -> [HostLeaseEvent] {
            value.listed(keys, serial: serial)
        }
        func watched(_ change: SharedFolderKeys.Change) -> [HostLeaseEvent] { value.watched(change) }
    }

    static func key(_ name: String, _ revision: Int64, _ host: String) -> SharedFolderKeys.Key {
        .init(name: name, createRevision: revision, host: host)
    }

    /// Listed with `a/1` (revision 5) and `c/1` (revision 6); then this host ("b") puts `b/1`, acknowledged, and the
    /// watch reports it at revision 9.
    static func queuedBehindTwo() -> Box {
        let keys = Box(folder)
        #expect(keys.listed([key("c/1", 6, "c"), key("a/1", 5, "a")], serial: 1) == [])
        #expect(keys.firstHost == "a")
        keys.putSent(name: "b/1")
        #expect(keys.putAcknowledged(name: "b/1", listsFrom: 2))
        #expect(keys.watched(.put(key("b/1", 9, "b"))) == [.keyCreated(folder: folder, revision: 9)])
        #expect(keys.ahead == ["a/1", "c/1"])
        return keys
    }

    @Test func theLastKeyAheadDeletedMakesThisHostTheHolderWithNoReadOnTheWay() {
        let keys = Self.queuedBehindTwo()
        #expect(keys.watched(.deleted(name: "c/1")) == [])  // a/1 is still ahead.
        #expect(keys.watched(.deleted(name: "x/9")) == [])  // Not a key of the copy.
        #expect(keys.watched(.deleted(name: "a/1")) == [Self.held])
        #expect(keys.firstHost == "b")
    }

    @Test func aKeyPutAfterThisHostsIsAnotherHostWaiting() {
        let keys = Self.queuedBehindTwo()
        #expect(keys.watched(.put(Self.key("b/1", 9, "b"))) == [])  // Reported twice: nothing new.
        let otherWaiting = HostLeaseEvent.otherHostWaiting(folder: Self.folder, host: "d", after: 9)
        #expect(keys.watched(.put(Self.key("d/1", 12, "d"))) == [otherWaiting])
        _ = keys.watched(.deleted(name: "a/1"))
        #expect(keys.watched(.deleted(name: "c/1")) == [Self.held, otherWaiting])
    }

    @Test func thePutsAnswerAndTheWatchComeInEitherOrder() {
        let keys = Box(Self.folder)
        _ = keys.listed([], serial: 1)
        keys.putSent(name: "b/1")
        #expect(
            keys.watched(.put(Self.key("b/1", 9, "b"))) == [.keyCreated(folder: Self.folder, revision: 9), Self.held]
        )
        #expect(keys.putAcknowledged(name: "b/1", listsFrom: 2))  // After the watch: nothing more to say.
        #expect(!keys.putAcknowledged(name: "b/0", listsFrom: 2))  // About a key it no longer has.
    }

    @Test func aListIssuedAfterThePutWasAcknowledgedThatLacksTheKeyFencesAnEarlierOneDoesNot() {
        let keys = Box(Self.folder)
        _ = keys.listed([], serial: 1)
        keys.putSent(name: "b/1")
        #expect(keys.listed([Self.key("a/1", 5, "a")], serial: 2) == [])  // Issued before the put's answer.
        _ = keys.putAcknowledged(name: "b/1", listsFrom: 3)
        #expect(keys.listed([Self.key("a/1", 5, "a")], serial: 2) == [])
        #expect(keys.listed([Self.key("a/1", 5, "a")], serial: 3) == [Self.gone])
        #expect(keys.own == nil)
    }

    @Test func aListShowingTheKeyGivesItsRevisionAndStanding() {
        let keys = Box(Self.folder)
        _ = keys.listed([], serial: 1)
        keys.putSent(name: "b/1")
        _ = keys.putAcknowledged(name: "b/1", listsFrom: 2)
        // The watch was cancelled (compacted) before it reported the put; the list that follows shows it.
        #expect(
            keys.listed([Self.key("b/1", 9, "b"), Self.key("d/1", 12, "d")], serial: 2) == [
                .keyCreated(folder: Self.folder, revision: 9), Self.held,
                .otherHostWaiting(folder: Self.folder, host: "d", after: 9),
            ]
        )
    }

    @Test func itsOwnKeyDeletedByNoneOfItsOwnFencesTheHost() {
        let keys = Self.queuedBehindTwo()
        #expect(keys.watched(.deleted(name: "b/1")) == [Self.gone])
        #expect(keys.own == nil)
        #expect(keys.ahead == nil)
        #expect(keys.firstHost == "a")  // The copy stays: the other keys are still there.
    }

    @Test func aKeyOnItsWayOutSaysNothingMore() {
        let keys = Self.queuedBehindTwo()
        #expect(keys.leave() == "b/1")
        #expect(keys.watched(.deleted(name: "a/1")) == [])
        #expect(keys.watched(.deleted(name: "b/1")) == [])  // Its own delete, before the answer: no fence.
        #expect(keys.watched(.put(Self.key("d/1", 20, "d"))) == [])
        #expect(keys.listed([Self.key("d/1", 20, "d")], serial: 5) == [])
        #expect(!keys.forget(name: "other"))
        #expect(keys.forget(name: "b/1"))
        #expect(keys.own == nil)
        #expect(keys.firstHost == "d")
    }

    @Test func nothingIsTakenFromTheWatchBeforeTheFirstList() {
        let keys = Box(Self.folder)
        keys.putSent(name: "b/1")
        #expect(keys.watched(.put(Self.key("b/1", 9, "b"))) == [])
        #expect(keys.firstHost == nil)
        #expect(
            keys.listed([Self.key("a/1", 5, "a"), Self.key("b/1", 9, "b")], serial: 1) == [
                .keyCreated(folder: Self.folder, revision: 9)
            ]
        )
    }

    @Test func aReplacedSessionLeavesTheCopyAndForgetsTheKey() {
        let keys = Self.queuedBehindTwo()
        keys.sessionReplaced()
        #expect(keys.own == nil)
        #expect(keys.watched(.deleted(name: "a/1")) == [])
        #expect(keys.watched(.deleted(name: "b/1")) == [])  // The old session's key expiring: no fence.
        #expect(keys.firstHost == "c")
    }
}
