import FCCore
import Foundation
import Testing

@testable import FCCluster

/// What hosts tell each other about presenters (issue 41): paths by the folder's cluster name, every message and
/// reply through JSON and back, bad input refused.
@Suite struct ClusterWireTests {
    private static func path(_ string: String) -> ItemPath {
        do { return try ItemPath(absolute: string) } catch { preconditionFailure("\(error)") }
    }

    /// Host A mounts the folder `docs` at /mnt/a/docs, host B at /srv/shared.
    private let hostA = SharedPaths([.init(path: path("/mnt/a/docs"), name: "docs")])
    private let hostB = SharedPaths([.init(path: path("/srv/shared"), name: "docs")])

    @Test func aPathIsSentByTheFolderNameAndReadInTheOtherHostsSpelling() throws {
        let wire = try #require(hostA.wire(Self.path("/mnt/a/docs/caf\u{e9}/n.txt")))
        #expect(wire.folder == "docs")
        #expect(hostB.local(wire) == Self.path("/srv/shared/caf\u{e9}/n.txt"))
        #expect(hostA.wire(Self.path("/mnt/a/other")) == nil)
        // A component that is not a name is refused, never turned into a path.
        for bad in ["2e2e", "2f", "", "zz", "6"] {
            #expect(hostB.local(WirePath(folder: "docs", components: [bad])) == nil, "\(bad)")
        }
        #expect(hostB.local(WirePath(folder: "unknown", components: [])) == nil)
    }

    @Test func everyMessageAndReplyComesBackAsSent() throws {
        let a = { (s: String) in Self.path("/mnt/a/docs/" + s) }
        let b = { (s: String) in Self.path("/srv/shared/" + s) }
        let kinds: [(PresenterMessageKind, PresenterMessageKind)] = [
            (.relinquishToReader, .relinquishToReader),
            (.relinquishToWriter, .relinquishToWriter),
            (.savePresentedItemChanges, .savePresentedItemChanges),
            (.accommodatePresentedItemDeletion, .accommodatePresentedItemDeletion),
            (.accommodatePresentedSubitemDeletion(at: a("x")), .accommodatePresentedSubitemDeletion(at: b("x"))),
            (.reacquire(relinquish: RequestID(7)), .reacquire(relinquish: RequestID(7))),
            (.presentedItemDidChange, .presentedItemDidChange),
            (.presentedItemDidMove(to: a("y")), .presentedItemDidMove(to: b("y"))),
            (.presentedSubitemDidChange(at: a("d/x")), .presentedSubitemDidChange(at: b("d/x"))),
            (.presentedSubitemDidAppear(at: a("d/z")), .presentedSubitemDidAppear(at: b("d/z"))),
            (.presentedSubitemDidMove(from: a("p"), to: a("q")), .presentedSubitemDidMove(from: b("p"), to: b("q"))),
            (.presentedItemVersion(.added(VersionID("v1"))), .presentedItemVersion(.added(VersionID("v1")))),
            (
                .presentedSubitemVersion(at: a("s"), .resolved(VersionID("v2"))),
                .presentedSubitemVersion(at: b("s"), .resolved(VersionID("v2")))
            ),
        ]
        for (sent, expected) in kinds {
            let message = PresenterMessage(
                presenter: PresenterID(3),
                client: ClientID(1),
                request: RequestID(4),
                claim: nil,
                kind: sent
            )
            let letter = try #require(MailItem(message, presenter: 42, paths: hostA))
            let decoded = try JSONDecoder().decode(MailItem.self, from: JSONEncoder().encode(letter))
            #expect(decoded.presenter == 42 && decoded.request == 4)
            #expect(decoded.message(paths: hostB) == expected, "\(sent)")
        }
        // A move out of the shared folder cannot be named on the other host: not sent.
        let out = PresenterMessage(
            presenter: PresenterID(3),
            client: ClientID(1),
            request: nil,
            claim: nil,
            kind: .presentedItemDidMove(to: Self.path("/home/me/x"))
        )
        #expect(MailItem(out, presenter: 42, paths: hostA) == nil)
        let replies: [PresenterReply] = [
            .relinquished(reacquirer: true), .relinquished(reacquirer: false), .succeeded,
            .failed(PresenterError(domain: "NSCocoaErrorDomain", code: 512, message: "disk full")),
        ]
        for reply in replies {
            let letter = try JSONDecoder().decode(
                MailItem.self,
                from: JSONEncoder().encode(MailItem(reply: reply, to: 9))
            )
            #expect(letter.replyValue == reply && letter.request == 9)
        }
        #expect(MailItem(kind: "somethingElse").message(paths: hostB) == nil)
    }
}
