import FCCore
import FCTestSupport
import Testing

/// A move whose old and new canonical paths are equal: a case-only rename in a case-insensitive directory, which the
/// client reports as `itemMoved(from: p, to: p)` (issue 14, docs/SEMANTICS.md §4).
@Suite struct InPlaceRenameTests {
    @Test func presentersOfTheItemItsContentsAndItsFolderHearTheRenameAndNothingMoves() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let folder = h.present("/ci", client: app)
        let file = h.present("/ci/my text", client: app)
        let inside = h.present("/ci/my text/a", client: app)
        let rename = h.claim(
            [ArbiterHarness.write("/ci/my text", .forMoving), ArbiterHarness.write("/ci/my text", .forReplacing)],
            client: tool
        )
        h.answerAll()
        #expect(h.isGranted(rename))
        h.send(.itemMoved(rename, from: path("/ci/my text"), to: path("/ci/my text")))
        #expect(h.messages(to: file).contains(.presentedItemDidMove(to: path("/ci/my text"))))
        #expect(h.messages(to: inside).contains(.presentedItemDidMove(to: path("/ci/my text/a"))))
        let subitemMoved = PresenterMessageKind.presentedSubitemDidMove(
            from: path("/ci/my text"),
            to: path("/ci/my text")
        )
        #expect(h.messages(to: folder).filter { $0 == subitemMoved }.count == 1)
        // Nothing was relocated: the presenters are where they were, and a later claim there still meets them.
        let presenters = h.arbiter.snapshot().presenters
        #expect(presenters[file]?.path == path("/ci/my text"))
        #expect(presenters[inside]?.path == path("/ci/my text/a"))
        h.finish(rename)
        let reader = h.claim([ArbiterHarness.read("/ci/my text")], client: tool)
        h.answerAll()
        #expect(h.isGranted(reader))
        #expect(h.messages(to: file).contains(.relinquishToReader))
    }

    @Test func theRenamersOwnPresenterHearsNothing() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let file = h.present("/ci/my text", client: app)
        let rename = h.claim(
            [ArbiterHarness.write("/ci/my text", .forMoving)],
            client: app,
            filePresenter: file
        )
        h.answerAll()
        #expect(h.isGranted(rename))
        h.send(.itemMoved(rename, from: path("/ci/my text"), to: path("/ci/my text")))
        #expect(h.messages(to: file).isEmpty)
    }

    /// The mover's spelling of the old name (`fromName`) reaches the folders' did-move messages, for clients that
    /// never spelled it; an ordinary move carries none.
    @Test func theMoversSpellingOfTheOldNameGoesWithTheFoldersMessages() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let folder = h.present("/ci", client: app)
        let file = h.present("/ci/my text", client: app)
        let rename = h.claim([ArbiterHarness.write("/ci/my text", .forMoving)], client: tool)
        h.answerAll()
        #expect(h.isGranted(rename))
        h.send(.itemMoved(rename, from: path("/ci/my text"), to: path("/ci/my text"), fromName: Array("My Text".utf8)))
        let sent = h.effects.compactMap { effect -> PresenterMessage? in
            if case .message(let message) = effect { return message }
            return nil
        }
        let toFolder = sent.filter { $0.presenter == folder && $0.kind.callback == .presentedSubitemDidMove }
        #expect(toFolder.map(\.movedFromName) == [Array("My Text".utf8)])
        let toFile = sent.filter { $0.presenter == file && $0.kind.callback == .presentedItemDidMove }
        #expect(toFile.count == 1)
        #expect(toFile.first?.movedFromName == nil)

        let move = h.claim([ArbiterHarness.write("/ci/other", .forMoving)], client: tool)
        h.answerAll()
        h.send(.itemMoved(move, from: path("/ci/other"), to: path("/ci/else"), fromName: Array("Other".utf8)))
        let moved = h.effects.compactMap { effect -> PresenterMessage? in
            if case .message(let message) = effect, message.presenter == folder,
                message.kind == .presentedSubitemDidMove(from: path("/ci/other"), to: path("/ci/else"))
            {
                return message
            }
            return nil
        }
        #expect(moved.count == 1)
        #expect(moved.first?.movedFromName == nil)
    }
}
