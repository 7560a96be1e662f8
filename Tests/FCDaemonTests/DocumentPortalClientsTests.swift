import FCCore
import NIOCore
import NIOEmbedded
import Testing

@testable import FCDaemon

/// ``DocumentPortalClients``' rule, on an `EmbeddedEventLoop`: a client's events wait, in order, behind the one that
/// asked the portal, until its answer is back on the loop; another client's do not wait; a client forgotten while
/// the portal is asked has nothing resumed; its spellings are forgotten with it.
@Suite struct DocumentPortalClientsTests {
    private static func path(_ string: String) -> ItemPath {
        do { return try ItemPath(absolute: string) } catch { preconditionFailure("\(error)") }
    }

    private static func presenterIDs(_ events: [ArbiterEvent]) -> [UInt64] {
        events.compactMap { event in
            if case .presenterRemoved(let id) = event { return id.rawValue }
            return nil
        }
    }

    @Test func aClientsEventsWaitInOrderForThePortalsAnswerOnTheLoop() {
        let loop = EmbeddedEventLoop()
        let questions = DocumentPortalLookupTests.Questions()
        let portal = DocumentPortalClients(loop: loop, lookups: { questions.ask($0) })
        let waiting = ClientID(1)
        #expect(!portal.queueIfWaiting(.presenterRemoved(PresenterID(9)), from: waiting))  // Nothing waits yet.

        portal.startWaiting(waiting, with: [.presenterRemoved(PresenterID(1))])
        var answers: [Int] = []
        var resumed: [ArbiterEvent]?
        portal.ask(for: waiting, { 42 }, then: { answers.append($0) }, resume: { resumed = $0 })
        #expect(portal.queueIfWaiting(.presenterRemoved(PresenterID(2)), from: waiting))
        #expect(portal.queueIfWaiting(.presenterRemoved(PresenterID(3)), from: waiting))
        #expect(!portal.queueIfWaiting(.presenterRemoved(PresenterID(4)), from: ClientID(2)))  // Others go on.

        loop.run()
        #expect(questions.count == 1)
        #expect(resumed == nil)
        questions.answer()  // On the portal's thread: the answer goes to the loop.
        #expect(answers.isEmpty)
        loop.run()
        #expect(answers == [42])
        #expect(resumed.map(Self.presenterIDs) == [1, 2, 3])
        #expect(!portal.queueIfWaiting(.presenterRemoved(PresenterID(5)), from: waiting))  // No longer waits.
    }

    @Test func aClientForgottenWhileThePortalIsAskedHasNothingResumed() {
        let loop = EmbeddedEventLoop()
        let questions = DocumentPortalLookupTests.Questions()
        let portal = DocumentPortalClients(loop: loop, lookups: { questions.ask($0) })
        let client = ClientID(1)
        portal.remember(host: Self.path("/home/ann/notes"), portal: Self.path("/run/user/1000/doc/a1b2"), for: client)
        #expect(portal.spellings[client] != nil)
        portal.startWaiting(client, with: [])
        var answered = false
        var resumed = false
        portal.ask(for: client, { true }, then: { answered = $0 }, resume: { _ in resumed = true })
        portal.forget(client)
        #expect(portal.spellings[client] == nil)
        questions.answer()
        loop.run()
        #expect(answered)  // The answer is recorded for everyone...
        #expect(!resumed)  // ...but nothing of the client gone is received.
    }
}
