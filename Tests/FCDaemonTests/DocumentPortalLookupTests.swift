import FCCore
import FCProtocol
import FCTestSupport
import Synchronization
import Testing

@testable import FCDaemon

/// The daemon's loop never waits for the document portal (issue 26; "nothing stalls the loop"): a claim naming a
/// document the cache cannot answer waits, with its client's later events, while the portal is asked on another
/// thread; every other client goes on. The portal here is the test's (``DocumentPortalMappingTests/FakePortal``),
/// and its questions run when the test says (``Questions``).
@Suite struct DocumentPortalLookupTests {
    /// The questions the daemon put to the portal, run when the test runs them.
    final class Questions: Sendable {
        private let pending = Mutex<[@Sendable () -> Void]>([])

        var count: Int { pending.withLock { $0.count } }

        func ask(_ question: @escaping @Sendable () -> Void) { pending.withLock { $0.append(question) } }

        /// Runs the questions asked so far (their answers then go to the loop).
        func answer() {
            let asked = pending.withLock { pending in
                defer { pending = [] }
                return pending
            }
            for question in asked { question() }
        }
    }

    static func grantedIDs(_ frames: [Filecoord_V1_Frame]) -> [UInt64] {
        frames.compactMap { frame in
            if case .granted(let granted)? = frame.payload { return granted.claimID }
            return nil
        }
    }

    /// Without a session bus (a server, a CI runner) nothing can answer: the daemon asks nothing, and a connecting
    /// client's events do not wait for a question (they did, and a presenter registered first was then entered after
    /// another client's later write, which it did not hear: `InjectedClientTests` in a clean-clone CI run).
    @Test func withoutASessionBusAConnectingClientsEventsWaitForNothing() throws {
        var fake = DocumentPortalMappingTests.FakePortal(["a1b2": "/home/ann/notes/todo.txt"]).portal
        fake.mayAnswer = { false }
        let questions = Questions()
        let configuration = EmbeddedConnection.configuration { configuration in
            configuration.mapsDocumentPortalPaths = true
            configuration.documentPortal = fake
            configuration.portalLookups = { questions.ask($0) }
        }
        var app = try EmbeddedConnection(configuration: configuration)
        try app.hello(name: "app")
        _ = try app.received()
        try app.send(EmbeddedConnection.writeClaim(1, path: "/tmp/elsewhere.txt"))
        #expect(Self.grantedIDs(try app.received()) == [1])
        #expect(questions.count == 0)
        #expect(app.host.documentPortal.mountPoint == nil)
    }

    @Test func aClaimOnAnUncachedDocumentWaitsOffTheLoopWithItsClientsLaterEventsBehindIt() throws {
        let fake = DocumentPortalMappingTests.FakePortal(["a1b2": "/home/ann/notes/todo.txt"])
        let questions = Questions()
        let configuration = EmbeddedConnection.configuration { configuration in
            configuration.mapsDocumentPortalPaths = true
            configuration.documentPortal = fake.portal
            configuration.portalLookups = { questions.ask($0) }
        }
        var app = try EmbeddedConnection(configuration: configuration)
        try app.hello(name: "app")
        _ = try app.received()
        // The mount point is asked for off the loop too, and the connecting client's events wait for it.
        #expect(questions.count == 1)
        questions.answer()
        _ = try app.received()
        #expect(app.host.documentPortal.mountPoint == (try ItemPath(absolute: "/run/user/1000/doc")))

        var other = try EmbeddedConnection(host: app.host)
        try other.hello(name: "other")
        _ = try other.received()

        try app.send(EmbeddedConnection.writeClaim(1, path: "/run/user/1000/doc/a1b2/todo.txt"))
        try app.send(EmbeddedConnection.writeClaim(2, path: "/tmp/elsewhere.txt"))
        #expect(fake.asked.withLock { $0 } == 0, "the loop asked the portal itself")
        #expect(Self.grantedIDs(try app.received()).isEmpty, "a claim got past the one waiting for the portal")

        // Meanwhile another client is served, and its write of the host file is granted: the app's is not in yet.
        try other.send(EmbeddedConnection.writeClaim(7, path: "/home/ann/notes/todo.txt"))
        #expect(Self.grantedIDs(try other.received()) == [7])

        questions.answer()
        #expect(fake.asked.withLock { $0 } == 1)
        // The app's portal write is the host file's: it waits for the other client's write; the claim behind it
        // comes in after it and, on another file, is granted.
        #expect(Self.grantedIDs(try app.received()) == [2])
        try other.send(Filecoord_V1_Frame(.finishClaim(Filecoord_V1_FinishClaim(claim: ClaimID(7), created: []))))
        _ = try other.received()
        #expect(Self.grantedIDs(try app.received()) == [1])
    }
}
