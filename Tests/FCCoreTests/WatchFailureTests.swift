import FCCore
import FCTestSupport
import Testing

/// Directories that cannot be watched (docs/SEMANTICS.md §3): who is told, when it is told again, and that a watch
/// added later is told too.
@Suite("Failed watches and watches added later")
struct WatchFailureTests {
    /// "unavailable P /d" and "available P /d" for the watch effects to presenters, in order.
    private func told(_ h: ArbiterHarness) -> [String] {
        h.effects.compactMap {
            switch $0 {
            case .watchUnavailable(let id, _, let directory, _): "unavailable \(id.rawValue) \(directory)"
            case .watchAvailable(let id, _, let directory): "available \(id.rawValue) \(directory)"
            default: nil
            }
        }
    }

    private func failure(of directory: String, in h: ArbiterHarness) -> String? {
        h.arbiter.watchingSnapshot().directories.first { $0.path == path(directory) }?.failure
    }

    @Test func aWatchAddedLaterIsToldWithAChangeAndAFailureAfterItIsToldAgain() {
        let h = watchingHarness()
        let app = h.connect("app")
        let file = h.present("/d/f", client: app)
        let folder = h.present("/d", client: app)
        let elsewhere = h.present("/e/g", client: app)
        h.send(.fileSystemChanged([.watchFailed(path("/d"), reason: "cap reached")]))
        h.send(.fileSystemChanged([.watchAdded(path("/d"))]))
        // Until stop 66 the failure stayed: fcdump showed it, and a second failure was never told.
        #expect(failure(of: "/d", in: h) == nil)
        #expect(h.messages(to: file) == [.presentedItemDidChange], "what changed meanwhile went unseen")
        #expect(h.messages(to: folder) == [.presentedItemDidChange])
        #expect(h.messages(to: elsewhere).isEmpty)
        h.send(.fileSystemChanged([.watchFailed(path("/d"), reason: "watcher stopped")]))
        #expect(
            told(h) == [
                "unavailable \(folder.rawValue) /d", "unavailable \(file.rawValue) /d",
                "available \(folder.rawValue) /d", "available \(file.rawValue) /d",
                "unavailable \(folder.rawValue) /d", "unavailable \(file.rawValue) /d",
            ]
        )
        #expect(failure(of: "/d", in: h) == "watcher stopped")
    }

    @Test func aWatchAddedWhereNoneFailedTellsNothing() {
        let h = watchingHarness()
        let app = h.connect("app")
        let file = h.present("/d/f", client: app)
        h.send(.fileSystemChanged([.watchAdded(path("/d"))]))
        #expect(told(h).isEmpty)
        #expect(h.messages(to: file).isEmpty)
        #expect(h.arbiter.watchingSnapshot().directories.allSatisfy { $0.failure == nil })
    }

    @Test func aPresenterThatComesToNeedAFailedDirectoryIsToldAtOnceAndOnlyOnce() {
        let h = watchingHarness()
        let app = h.connect("app")
        let first = h.present("/d/f", client: app)
        h.send(.fileSystemChanged([.watchFailed(path("/d"), reason: "cap reached")]))
        // Registered after the failure, moved into the folder, moved within it (told already: not again).
        let joined = h.present("/d/g", client: app)
        let moved = h.present("/e/h", client: app)
        h.send(.presenterURLChanged(moved, to: path("/d/h")))
        h.send(.presenterURLChanged(moved, to: path("/d/h2")))
        #expect(
            told(h) == [
                "unavailable \(first.rawValue) /d", "unavailable \(joined.rawValue) /d",
                "unavailable \(moved.rawValue) /d",
            ]
        )
        #expect(failure(of: "/d", in: h) == "cap reached")
    }

    @Test func aDirectoryMadeAgainKeepsItsFailureUntilItsWatchIsAdded() {
        let h = watchingHarness()
        let app = h.connect("app")
        h.present("/d", client: app)
        let folder = h.present("/d/new", client: app)
        h.send(.fileSystemChanged([.watchFailed(path("/d/new"), reason: "no such directory")]))
        h.clearEffects()
        // Made again: watched again, and told nothing more until the watcher says how that went.
        h.send(.fileSystemChanged([.created(path("/d/new"), isDirectory: true)]))
        #expect(h.effects.contains(.watch(path("/d/new"))))
        #expect(told(h).isEmpty)
        h.send(.fileSystemChanged([.watchFailed(path("/d/new"), reason: "cap reached")]))
        #expect(told(h).isEmpty, "a failure told already is not told twice")
        h.send(.fileSystemChanged([.watchAdded(path("/d/new"))]))
        #expect(told(h) == ["available \(folder.rawValue) /d/new"])
    }
}
