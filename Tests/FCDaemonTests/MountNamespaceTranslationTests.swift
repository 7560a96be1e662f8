import FCCore
import Testing

@testable import FCDaemon

// A client's paths through its own mount table and back (issue 26), without mounting: the tables are text.
struct MountNamespaceTranslationTests {
    /// The host: the root file system and a tmpfs at /srv/fs.
    static let host = """
        21 1 8:1 / / rw - ext4 /dev/sda1 rw
        40 21 0:50 / /srv/fs rw - tmpfs tmpfs rw
        """
    /// A container: its own root (an overlay), the tmpfs's /docs at /data, and the host's /home/ann at /home/ann.
    static let container = """
        90 70 0:77 / / rw - overlay overlay rw
        91 90 0:50 /docs /data rw - tmpfs tmpfs rw
        92 90 8:1 /home/ann /home/ann rw - ext4 /dev/sda1 rw
        """

    static let translation = MountNamespaceTranslation.parsing(
        client: Array(container.utf8),
        daemon: Array(host.utf8)
    )

    @Test func aClientsPathsReachTheDaemonsAndComeBack() throws {
        let t = Self.translation
        #expect(t.toDaemon(path("/data/report.txt")) == path("/srv/fs/docs/report.txt"))
        #expect(t.toDaemon(path("/data")) == path("/srv/fs/docs"))
        #expect(t.toClient(path("/srv/fs/docs/report.txt")) == path("/data/report.txt"))
        #expect(t.toDaemon(path("/home/ann/notes")) == path("/home/ann/notes"))
        // What the other side does not see stays as it is.
        #expect(t.toDaemon(path("/etc/hostname")) == path("/etc/hostname"))
        #expect(t.toClient(path("/srv/fs/other")) == path("/srv/fs/other"))
        #expect(t.toClient(path("/var/log")) == path("/var/log"))
    }

    @Test func eventsAndEffectsAreTranslatedWholly() throws {
        let t = Self.translation
        let request = ClaimRequest(
            id: ClaimID(1),
            client: ClientID(1),
            coordinator: CoordinatorID(1),
            purpose: PurposeID("p"),
            items: [ClaimItem(path: path("/data/a"), access: .write([]))]
        )
        guard case .claimRequested(let mapped) = t.inbound(.claimRequested(request)) else {
            Issue.record("not a claim")
            return
        }
        #expect(mapped.items.map(\.path) == [path("/srv/fs/docs/a")])
        let message = PresenterMessage(
            presenter: PresenterID(1),
            client: ClientID(1),
            request: nil,
            claim: nil,
            kind: .presentedSubitemDidMove(from: path("/srv/fs/docs/a"), to: path("/srv/fs/docs/b"))
        )
        guard case .message(let out) = t.outbound(.message(message)) else {
            Issue.record("not a message")
            return
        }
        #expect(out.kind == .presentedSubitemDidMove(from: path("/data/a"), to: path("/data/b")))
        guard
            case .grant(_, _, let paths) = t.outbound(
                .grant(ClaimID(1), client: ClientID(1), paths: [path("/srv/fs/docs/a")])
            )
        else {
            Issue.record("not a grant")
            return
        }
        #expect(paths == [path("/data/a")])
    }

    private func path(_ string: String) -> ItemPath { try! ItemPath(absolute: string) }
}
