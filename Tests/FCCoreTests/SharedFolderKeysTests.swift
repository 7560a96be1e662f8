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
        func putAcknowledged(name: String, listsFrom: Int) -> [HostLeaseEvent]? {
            value.putAcknowledged(name: name, listsFrom: listsFrom)
        }
        func leave() -> String? { value.leave() }
        func forget(name: String) -> Bool { value.forget(name: name) }
        func sessionReplaced() { value.sessionReplaced() }
        /// The store's revision in the test: each list and change comes after the one before unless told otherwise.
        var store: Int64 = 100
        func listed(_ keys: [SharedFolderKeys.Key], serial: Int, revision: Int64? = nil) -> [HostLeaseEvent] {
            store += 1
            return value.listed(keys, serial: serial, revision: revision ?? store)
        }
        func watched(
            _ change: SharedFolderKeys.Change,
            revision: Int64? = nil,
            endsBatch: Bool = true
        )
            -> [HostLeaseEvent]
        {
            store += 1
            return value.watched(change, revision: revision ?? store, endsBatch: endsBatch)
        }
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
        #expect(keys.putAcknowledged(name: "b/1", listsFrom: 2) == [])  // The copy does not show it yet.
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

    /// Stop 68: the host heard that another host waits, and never that it stopped waiting.
    @Test func theLastKeyAfterThisHostsGoneSaysNobodyWaitsOnceAndBeforeTheHolding() {
        let keys = Self.queuedBehindTwo()
        let nobody = HostLeaseEvent.noHostWaiting(folder: Self.folder, after: 9)
        #expect(keys.watched(.deleted(name: "c/1")) == [])  // Never told of a host waiting: nothing to call off.
        #expect(
            keys.watched(.put(Self.key("d/1", 12, "d")))
                == [.otherHostWaiting(folder: Self.folder, host: "d", after: 9)]
        )
        #expect(keys.watched(.deleted(name: "d/1")) == [nobody])
        #expect(keys.watched(.put(Self.key("e/1", 13, "e")), endsBatch: false) == [])
        // Put and gone within one watch message: the host hears nothing of it.
        #expect(keys.watched(.deleted(name: "e/1")) == [])
        #expect(keys.watched(.deleted(name: "a/1")) == [Self.held])
        _ = keys.watched(.put(Self.key("f/1", 14, "f")))
        // The key ahead and the one after gone in one revision: nobody waits, then this host holds.
        let (fresh, nobodyAfter) = (Self.queuedBehindTwo(), nobody)
        _ = fresh.watched(.put(Self.key("d/1", 12, "d")))
        _ = fresh.watched(.deleted(name: "c/1"))
        #expect(fresh.watched(.deleted(name: "a/1"), revision: 200, endsBatch: false) == [])
        #expect(fresh.watched(.deleted(name: "d/1"), revision: 200) == [nobodyAfter, Self.held])
    }

    @Test func thePutsAnswerAndTheWatchComeInEitherOrder() {
        let keys = Box(Self.folder)
        _ = keys.listed([], serial: 1)
        keys.putSent(name: "b/1")
        // The watch first: nothing is said of a key whose put has not returned (it may yet fail).
        #expect(keys.watched(.put(Self.key("b/1", 9, "b"))) == [])
        #expect(
            keys.putAcknowledged(name: "b/1", listsFrom: 2) == [
                .keyCreated(folder: Self.folder, revision: 9), Self.held,
            ]
        )
        #expect(keys.putAcknowledged(name: "b/0", listsFrom: 2) == nil)  // About a key it no longer has.
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
        #expect(keys.listed([Self.key("a/1", 5, "a"), Self.key("b/1", 9, "b")], serial: 1) == [])
        #expect(keys.putAcknowledged(name: "b/1", listsFrom: 2) == [.keyCreated(folder: Self.folder, revision: 9)])
    }

    @Test func aReplacedSessionLeavesTheCopyAndForgetsTheKey() {
        let keys = Self.queuedBehindTwo()
        keys.sessionReplaced()
        #expect(keys.own == nil)
        #expect(keys.watched(.deleted(name: "a/1")) == [])
        #expect(keys.watched(.deleted(name: "b/1")) == [])  // The old session's key expiring: no fence.
        #expect(keys.firstHost == "c")
    }

    @Test func aPutThatFailedAfterEtcdAppliedItNeverMadeTheHostHold() {
        // Found by review: the watch reported the put (it was applied), then the put's call failed (its answer lost,
        // a retry refused). The host deletes the key; it must not have told its table anything of it.
        let keys = Box(Self.folder)
        _ = keys.listed([], serial: 1)
        keys.putSent(name: "b/1")
        #expect(keys.watched(.put(Self.key("b/1", 9, "b"))) == [])
        #expect(keys.forget(name: "b/1"))
        #expect(keys.watched(.deleted(name: "b/1")) == [])  // Its own delete of the failed put's key.
        #expect(keys.firstHost == nil)
    }

    @Test func aListOrAChangeOlderThanTheCopyIsIgnored() {
        let keys = Self.queuedBehindTwo()
        let now = keys.store
        // A list answered at an older revision (issued before the changes the watch already reported).
        #expect(keys.listed([Self.key("b/1", 9, "b")], serial: 3, revision: now - 1) == [])
        #expect(keys.ahead == ["a/1", "c/1"])
        // A list answered later: the copy moves to it, and the watch's older reports are already in it.
        #expect(keys.listed([Self.key("c/1", 6, "c"), Self.key("b/1", 9, "b")], serial: 4, revision: now + 10) == [])
        #expect(keys.ahead == ["c/1"])
        #expect(keys.watched(.put(Self.key("a/1", 5, "a")), revision: now + 5) == [])  // Older: not put back.
        #expect(keys.ahead == ["c/1"])
        #expect(keys.watched(.deleted(name: "c/1"), revision: now + 11) == [Self.held])
    }

    /// One revision deletes both keys ahead (two keys of one expired session, or `del --prefix`), reported one by one
    /// in one watch message: the second is applied too, and this host is told holder after the message. Until stop
    /// 67 a change of the revision already reached was dropped: `c/1` stayed ahead, and the claims waited for ever.
    @Test func everyChangeOfOneRevisionIsAppliedAndTheStandingToldAfterTheMessage() {
        let keys = Self.queuedBehindTwo()
        #expect(keys.watched(.deleted(name: "a/1"), revision: 120, endsBatch: false) == [])
        #expect(keys.watched(.deleted(name: "c/1"), revision: 120) == [Self.held])
        #expect(keys.ahead == [])
        // A change older than what the copy reflects is still ignored.
        #expect(keys.watched(.put(Self.key("x/1", 7, "x")), revision: 119) == [])
    }

    /// A revision that deletes the key ahead and this host's own fences it, without telling it holder first.
    @Test func aRevisionThatDeletesTheKeysAheadAndItsOwnFencesWithoutAHolder() {
        let keys = Self.queuedBehindTwo()
        #expect(keys.watched(.deleted(name: "a/1"), revision: 120, endsBatch: false) == [])
        #expect(keys.watched(.deleted(name: "c/1"), revision: 120, endsBatch: false) == [])
        #expect(keys.watched(.deleted(name: "b/1"), revision: 120) == [Self.gone])
    }

    /// A list answered at the revision the copy reached holds every change of it, some not reported yet: taken.
    @Test func aListAtTheCopysRevisionIsTaken() {
        let keys = Self.queuedBehindTwo()
        #expect(keys.watched(.deleted(name: "a/1"), revision: 120, endsBatch: false) == [])
        #expect(keys.listed([Self.key("b/1", 9, "b")], serial: 3, revision: 120) == [Self.held])
        // The rest of the message is in the list already.
        #expect(keys.watched(.deleted(name: "c/1"), revision: 120) == [])
        #expect(keys.ahead == [])
    }

    /// The answer to this host's put comes between two changes of one watch message (the answer and the watch are
    /// two connections): the key's revision is told, where it stands only after the message, so that a message that
    /// also deletes its key fences it without telling it holder first.
    @Test func aPutsAnswerInsideAWatchMessageLeavesTheStandingToItsEnd() {
        for ownKeyGoesToo in [false, true] {
            let keys = Box(Self.folder)
            #expect(keys.listed([Self.key("a/1", 5, "a")], serial: 1) == [])
            keys.putSent(name: "b/1")
            #expect(keys.watched(.put(Self.key("b/1", 9, "b"))) == [])  // Not acknowledged yet: nothing said.
            #expect(keys.watched(.deleted(name: "a/1"), revision: 120, endsBatch: false) == [])
            #expect(keys.putAcknowledged(name: "b/1", listsFrom: 2) == [.keyCreated(folder: Self.folder, revision: 9)])
            if ownKeyGoesToo {
                #expect(keys.watched(.deleted(name: "b/1"), revision: 120) == [Self.gone])
            } else {
                #expect(keys.value.endBatch() == [.becameHolder(folder: Self.folder, revision: 9)])
            }
        }
    }
}
