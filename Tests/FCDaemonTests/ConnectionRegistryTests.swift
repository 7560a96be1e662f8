import FCCore
import NIOCore
import NIOEmbedded
import Testing

@testable import FCDaemon

/// ``ConnectionRegistry``'s rule, on embedded channels of one `EmbeddedEventLoop`: at most `maximumConnections` are
/// open at once; a connection the daemon closes is closed once and gets nothing more; a closed connection is
/// forgotten once, with what was read about its client.
@Suite struct ConnectionRegistryTests {
    @Test func opensAtMostTheMaximumAndASlotFreedServesAgain() {
        var registry = ConnectionRegistry(maximumConnections: 2)
        let first = registry.opened()
        let second = registry.opened()
        let third = registry.opened()
        #expect(first && second)
        #expect(!third)
        #expect(registry.openConnections == 2)
        registry.closedOne()
        #expect(registry.openConnections == 1)
        let again = registry.opened()
        #expect(again)
    }

    @Test func aConnectionIsClosedByTheDaemonOnceAndThenReachesNobody() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        var registry = ConnectionRegistry(maximumConnections: 4)
        let client = ClientID(1)
        registry.add(channel, for: client, arguments: ["app"], namespace: nil)
        #expect(registry.reachable(client) === channel)

        let closing = registry.startClosing(client)
        let closingAgain = registry.startClosing(client)
        let notConnected = registry.startClosing(ClientID(2))
        #expect(closing === channel)
        #expect(closingAgain == nil)  // Closed once.
        #expect(registry.reachable(client) == nil)  // Nothing more is sent to it.
        #expect(registry[client] === channel)  // Still connected until its channel says it closed.
        #expect(notConnected == nil)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test func aClosedConnectionIsForgottenOnceWithWhatWasReadAboutItsClient() throws {
        let loop = EmbeddedEventLoop()
        let closedByDaemon = EmbeddedChannel(loop: loop)
        let closedByClient = EmbeddedChannel(loop: loop)
        var registry = ConnectionRegistry(maximumConnections: 4)
        registry.add(closedByDaemon, for: ClientID(1), arguments: ["one"], namespace: nil)
        registry.add(closedByClient, for: ClientID(2), arguments: ["two"], namespace: nil)
        registry.countTimedOutClaim(of: ClientID(1))
        registry.countTimedOutClaim(of: ClientID(1))
        #expect(registry.timedOutClaims[ClientID(1)] == 2)
        _ = registry.startClosing(ClientID(1))

        let forgotten = registry.forget(ClientID(1))
        let forgottenAgain = registry.forget(ClientID(1))
        let closedByItsClient = registry.forget(ClientID(2))
        #expect(forgotten == true)  // The daemon closed it.
        #expect(forgottenAgain == nil)  // Once.
        #expect(closedByItsClient == false)
        #expect(registry[ClientID(1)] == nil)
        #expect(registry.arguments.isEmpty)
        #expect(registry.timedOutClaims.isEmpty)
        #expect(registry.namespaces.isEmpty)
        #expect(registry.allChannels.isEmpty)
        _ = try closedByDaemon.finish(acceptAlreadyClosed: true)
        _ = try closedByClient.finish(acceptAlreadyClosed: true)
    }
}
