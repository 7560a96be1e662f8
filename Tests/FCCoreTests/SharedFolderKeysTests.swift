import FCCore
import Testing

/// ``SharedFolderKeys``: what reads of a shared folder's keys and the watch's events tell a host's table (issue 40;
/// the cluster simulator runs it against a model store with reads and watch events overtaking each other).
@Suite struct SharedFolderKeysTests {
    static let folder = try! ItemPath(absolute: "/shared/projects")

    /// The keys under test, in a box: `#expect` cannot call a mutating method of a local variable.
    final class Box {
        var value: SharedFolderKeys
        init(_ folder: ItemPath) { value = SharedFolderKeys(folder: folder) }
        var own: SharedFolderKeys.Own? { value.own }
        var ahead: Set<String>? { value.ahead }
        var firstHost: String? { value.firstHost }
        func putSent(name: String) { value.putSent(name: name) }
        func putAcknowledged(name: String, readsFrom: Int) -> Bool {
            value.putAcknowledged(name: name, readsFrom: readsFrom)
        }
        func leave() -> String? { value.leave() }
        func forget(name: String) -> Bool { value.forget(name: name) }
        func read(_ keys: [SharedFolderKeys.Key], serial: Int) -> [HostLeaseEvent] { value.read(keys, serial: serial) }
        func watched(_ change: SharedFolderKeys.Change) -> [HostLeaseEvent] { value.watched(change) }
    }

    static func key(_ name: String, _ revision: Int64, _ host: String) -> SharedFolderKeys.Key {
        .init(name: name, createRevision: revision, host: host)
    }

    /// This host ("b") put `b/1`, acknowledged before read 1; `a/1` (revision 5) and `c/1` (revision 6) are ahead.
    static func queuedBehindTwo() -> Box {
        let keys = Box(folder)
        keys.putSent(name: "b/1")
        #expect(keys.putAcknowledged(name: "b/1", readsFrom: 1))
        #expect(
            keys.read([key("c/1", 6, "c"), key("b/1", 9, "b"), key("a/1", 5, "a")], serial: 1)
                == [.keyCreated(folder: folder, revision: 9)]
        )
        #expect(keys.ahead == ["a/1", "c/1"])
        #expect(keys.firstHost == "a")
        return keys
    }

    @Test func theLastKeyAheadDeletedMakesThisHostTheHolderWithoutAnotherRead() {
        let keys = Self.queuedBehindTwo()
        #expect(keys.watched(.deleted(name: "c/1")) == [])  // a/1 is still ahead.
        #expect(keys.watched(.deleted(name: "x/9")) == [])  // Not ahead (behind, or another folder's news).
        #expect(keys.watched(.deleted(name: "a/1")) == [.becameHolder(folder: Self.folder, revision: 9)])
        #expect(keys.watched(.deleted(name: "a/1")) == [])  // Told once.
    }

    @Test func aReadAnsweredLateListsADeletedKeyAgainAndTheHostWaitsForTheNextRead() {
        let keys = Self.queuedBehindTwo()
        #expect(keys.watched(.deleted(name: "a/1")) == [])
        // A read issued before a/1's delete, answered after the watch reported it: a/1 is ahead again.
        #expect(
            keys.read([Self.key("a/1", 5, "a"), Self.key("b/1", 9, "b"), Self.key("c/1", 6, "c")], serial: 2) == []
        )
        #expect(keys.watched(.deleted(name: "c/1")) == [])  // Never early: a/1 is not known to be gone.
        // The read issued after those changes says it.
        #expect(keys.read([Self.key("b/1", 9, "b")], serial: 3) == [.becameHolder(folder: Self.folder, revision: 9)])
    }

    @Test func aKeyPutAfterThisHostsIsAnotherHostWaiting() {
        let keys = Box(Self.folder)
        keys.putSent(name: "b/1")
        #expect(keys.watched(.put(Self.key("c/1", 12, "c"))) == [])  // Its own revision not known yet.
        _ = keys.putAcknowledged(name: "b/1", readsFrom: 1)
        #expect(
            keys.read([Self.key("b/1", 9, "b")], serial: 1) == [
                .keyCreated(folder: Self.folder, revision: 9), .becameHolder(folder: Self.folder, revision: 9),
            ]
        )
        #expect(keys.watched(.put(Self.key("b/1", 9, "b"))) == [])  // Its own put, seen late.
        #expect(keys.watched(.put(Self.key("z/0", 3, "z"))) == [])  // Not after it.
        #expect(
            keys.watched(.put(Self.key("c/1", 12, "c")))
                == [.otherHostWaiting(folder: Self.folder, host: "c", after: 9)]
        )
    }

    @Test func aReadIssuedAfterThePutWasAcknowledgedThatLacksTheKeyFencesAnEarlierOneDoesNot() {
        let keys = Box(Self.folder)
        keys.putSent(name: "b/1")
        #expect(keys.read([Self.key("a/1", 5, "a")], serial: 1) == [])  // Issued before the put's answer.
        _ = keys.putAcknowledged(name: "b/1", readsFrom: 2)
        #expect(keys.read([Self.key("a/1", 5, "a")], serial: 1) == [])
        #expect(
            keys.read([Self.key("a/1", 5, "a")], serial: 2) == [
                .sessionLost("this host's key for \(Self.folder) is gone from the cluster")
            ]
        )
        #expect(keys.own == nil)
    }

    @Test func aKeyOnItsWayOutSaysNothingMore() {
        let keys = Self.queuedBehindTwo()
        #expect(keys.leave() == "b/1")
        #expect(keys.watched(.deleted(name: "a/1")) == [])
        #expect(keys.watched(.deleted(name: "c/1")) == [])
        #expect(keys.watched(.put(Self.key("d/1", 20, "d"))) == [])
        #expect(keys.read([Self.key("d/1", 20, "d")], serial: 5) == [])  // Its delete, seen before the answer.
        #expect(!keys.forget(name: "other"))
        #expect(keys.forget(name: "b/1"))
        #expect(keys.own == nil)
    }
}
