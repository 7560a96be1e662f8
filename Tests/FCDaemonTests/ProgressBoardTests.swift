import FCCore
import FCProtocol
import Testing

@testable import FCDaemon

/// The daemon's file progress table (issue 44): who hears of which publication, and what a control may do.
@Suite struct ProgressBoardTests {
    private let a = ClientID(1)
    private let b = ClientID(2)
    private let c = ClientID(3)

    private func path(_ string: String) -> ItemPath { try! ItemPath(absolute: string) }

    private func state(
        _ completed: Int64,
        cancellable: Bool = false,
        pausable: Bool = false
    )
        -> Filecoord_V1_ProgressState
    {
        var state = Filecoord_V1_ProgressState()
        state.totalUnitCount = 10
        state.completedUnitCount = completed
        state.cancellable = cancellable
        state.pausable = pausable
        return state
    }

    @Test func aSubscriptionMatchesItsItemAndItsChildrenOnly() throws {
        let board = ProgressBoard()
        #expect(try board.subscribe(1, at: path("/d"), by: b).isEmpty)
        #expect(try board.subscribe(2, at: path("/d/f"), by: b).isEmpty)
        #expect(try board.subscribe(3, at: path("/"), by: c).isEmpty)
        let published = try board.publish(7, at: path("/d/f"), state: state(0), by: a)
        #expect(
            published == [
                .appeared(client: b, subscription: 1, publication: 1, path: path("/d/f"), state: state(0)),
                .appeared(client: b, subscription: 2, publication: 1, path: path("/d/f"), state: state(0)),
            ]
        )
        // One change per client, however many of its subscriptions match.
        #expect(board.update(7, state: state(4), by: a) == [.changed(client: b, publication: 1, state: state(4))])
        // Subscribed later: handed what is published now.
        #expect(
            try board.subscribe(1, at: path("/d"), by: c)
                == [.appeared(client: c, subscription: 1, publication: 1, path: path("/d/f"), state: state(4))]
        )
        #expect(board.unpublish(7, by: a) == [.gone(client: b, publication: 1), .gone(client: c, publication: 1)])
        #expect(board.publications.isEmpty)
    }

    @Test func controlsReachThePublisherOnlyFromASubscriberAndOnlyWhatItAllows() throws {
        let board = ProgressBoard()
        _ = try board.publish(5, at: path("/d/f"), state: state(0, cancellable: true), by: a)
        // Not subscribed: ignored.
        #expect(board.control(1, .cancel, by: b).isEmpty)
        _ = try board.subscribe(1, at: path("/d/f"), by: b)
        #expect(board.control(1, .cancel, by: b) == [.control(client: a, publication: 5, action: .cancel)])
        // Not pausable: ignored; unknown publication: ignored.
        #expect(board.control(1, .pause, by: b).isEmpty)
        #expect(board.control(9, .cancel, by: b).isEmpty)
    }

    @Test func aClientThatLeavesEndsItsPublicationsAndDropsItsSubscriptions() throws {
        let board = ProgressBoard()
        _ = try board.subscribe(1, at: path("/d"), by: b)
        _ = try board.publish(1, at: path("/d/x"), state: state(0), by: a)
        _ = try board.publish(2, at: path("/d/y"), state: state(0), by: a)
        #expect(board.disconnect(a) == [.gone(client: b, publication: 1), .gone(client: b, publication: 2)])
        #expect(board.counts(of: a) == (0, 0))
        #expect(board.disconnect(b).isEmpty)
        #expect(board.subscriptions.isEmpty)
        // Nothing is left to hear of later.
        #expect(try board.publish(3, at: path("/d/z"), state: state(0), by: c).isEmpty)
    }

    @Test func idsReusedWhileLiveAndTooManyEntriesAreRefused() throws {
        let board = ProgressBoard(maximumPublications: 1, maximumSubscriptions: 1)
        _ = try board.publish(1, at: path("/f"), state: state(0), by: a)
        #expect(throws: ProgressBoard.Refusal.duplicate("progress publication id 1")) {
            try board.publish(1, at: path("/g"), state: state(0), by: a)
        }
        #expect(throws: ProgressBoard.Refusal.tooMany("progress publications", limit: 1)) {
            try board.publish(2, at: path("/g"), state: state(0), by: a)
        }
        _ = try board.subscribe(1, at: path("/f"), by: a)
        #expect(throws: ProgressBoard.Refusal.tooMany("progress subscriptions", limit: 1)) {
            try board.subscribe(2, at: path("/g"), by: a)
        }
        // Unpublished, the id may be used again.
        _ = board.unpublish(1, by: a)
        _ = try board.publish(1, at: path("/g"), state: state(0), by: a)
    }
}
