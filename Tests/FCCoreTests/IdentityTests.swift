import FCCore
import FCTestSupport
import Testing

/// One file, many names (issue 26): claim items and presenters that carry the file's identity meet through every
/// name the arbiter knows (Arbiter+Identity.swift).
@Suite struct IdentityTests {
    static let file = ItemIdentity(device: 8, inode: 42)

    static func write(_ path: String, _ options: WritingOptions = []) -> ClaimItem {
        ClaimItem(path: ArbiterHarness.path(path), access: .write(options), identity: file)
    }

    static func read(_ path: String) -> ClaimItem {
        ClaimItem(path: ArbiterHarness.path(path), access: .read([]), identity: file)
    }

    @Test func aWriteThroughOneNameWaitsForAWriteThroughTheOther() throws {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let first = h.claim([Self.write("/d/a.txt")], client: a)
        #expect(h.isGranted(first))
        let second = h.claim([Self.write("/e/b.txt")], client: b)
        #expect(!h.isGranted(second))
        h.finish(first)
        #expect(h.isGranted(second))
        // The grant names the requested item alone.
        #expect(h.grantedPaths(second) == [path("/e/b.txt")])
    }

    @Test func readersThroughTwoNamesShareAndAWriterWaitsForBoth() throws {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let r1 = h.claim([Self.read("/d/a.txt")], client: a)
        let r2 = h.claim([Self.read("/e/b.txt")], client: a)
        #expect(h.isGranted(r1) && h.isGranted(r2))
        let w = h.claim([Self.write("/f/c.txt")], client: h.connect("w"))
        #expect(!h.isGranted(w))
        h.finish(r1)
        #expect(!h.isGranted(w))
        h.finish(r2)
        #expect(h.isGranted(w))
    }

    @Test func withoutIdentitiesTwoNamesDoNotMeet() throws {
        let h = ArbiterHarness()
        let first = h.claim([ArbiterHarness.write("/d/a.txt")], client: h.connect("a"))
        let second = h.claim([ArbiterHarness.write("/e/b.txt")], client: h.connect("b"))
        #expect(h.isGranted(first) && h.isGranted(second))
    }

    @Test func presentersOfTheOtherNameAndItsFolderHearAWriteInTheirOwnPaths() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let file = h.present("/d/a.txt", client: app, identity: Self.file)
        let folder = h.present("/d", client: app)
        let writer = h.claim([Self.write("/e/b.txt")], client: h.connect("tool"))
        #expect(h.messages(to: file).contains(.relinquishToWriter))
        h.answerAll()
        #expect(h.isGranted(writer))
        h.finish(writer)
        #expect(h.messages(to: file).contains(.presentedItemDidChange))
        #expect(h.messages(to: folder).contains(.presentedSubitemDidChange(at: path("/d/a.txt"))))
    }

    @Test func aLinkRemovedWhilePresentedNoLongerReachesItsPresenter() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let kept = h.present("/d/a.txt", client: app, identity: Self.file)
        let removed = h.present("/e/b.txt", client: app, identity: Self.file)
        // Deleting one name asks that name's presenter alone: the file stays under the other.
        let delete = h.claim([Self.write("/e/b.txt", .forDeleting)], client: tool)
        h.answerAll()
        #expect(h.isGranted(delete))
        #expect(h.messages(to: removed).contains(.accommodatePresentedItemDeletion))
        #expect(h.messages(to: kept).isEmpty)
        h.finish(delete)
        h.clearEffects()
        let countBefore = h.messages(to: removed).count
        // A write through the kept name no longer asks the removed name's presenter.
        let write = h.claim([Self.write("/d/a.txt")], client: tool)
        h.answerAll()
        #expect(h.isGranted(write))
        h.finish(write)
        #expect(h.messages(to: removed).count == countBefore)
        #expect(h.messages(to: kept).contains(.presentedItemDidChange))
    }

    @Test func aDeletionTheWatcherSawForgetsThePresentersName() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let removed = h.present("/e/b.txt", client: app, identity: Self.file)
        h.send(.fileSystemChanged([.deleted(path("/e/b.txt"))]))
        h.clearEffects()
        let before = h.messages(to: removed).count
        let write = h.claim([Self.write("/d/a.txt")], client: h.connect("tool"))
        h.answerAll()
        h.finish(write)
        #expect(h.messages(to: removed).count == before)
    }

    @Test func theIndexEmptiesWhenClaimsAndPresentersGo() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let presenter = h.present("/d/a.txt", client: app, identity: Self.file)
        let claim = h.claim([Self.write("/e/b.txt")], client: app)
        h.answerAll()
        h.finish(claim)
        h.send(.presenterRemoved(presenter))
        // A write through a third name meets nothing and nobody.
        let later = h.claim([Self.write("/f/c.txt")], client: h.connect("tool"))
        #expect(h.isGranted(later))
        #expect(h.arbiter.snapshot().claims.first?.paths == [path("/f/c.txt")])
    }

    @Test func aNameThatMovedIsMetWhereItIsNow() throws {
        let h = ArbiterHarness()
        let tool = h.connect("tool")
        let mover = h.write("/d", .forMoving, client: tool)
        #expect(h.isGranted(mover))
        // Waits behind the move, and follows it (rule 7): it holds /m/a.txt once granted.
        let first = h.claim([Self.write("/d/a.txt")], client: h.connect("a"))
        #expect(!h.isGranted(first))
        h.send(.itemMoved(mover, from: path("/d"), to: path("/m")))
        h.finish(mover)
        #expect(h.isGranted(first))
        let second = h.claim([Self.write("/e/b.txt")], client: h.connect("b"))
        #expect(!h.isGranted(second), "a write through b.txt ran while a.txt, moved to /m, was written")
        let paths = h.arbiter.snapshot().claims.first { $0.request.id == second }?.paths
        #expect(paths == [path("/e/b.txt"), path("/m/a.txt")])
    }
}

extension IdentityTests {
    /// The harness of a daemon's arbiter, which watches the file system.
    private static func watching() -> ArbiterHarness {
        var configuration = ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: nil)
        configuration.watchesFileSystem = true
        return ArbiterHarness(configuration: configuration)
    }

    private static func linked(_ item: ClaimItem) -> ClaimItem {
        var item = item
        item.hasOtherNames = true
        return item
    }

    private static func reported(_ effects: [ArbiterEffect]) -> [ItemIdentity] {
        effects.compactMap { if case .fileWithOtherNamesWritten(let identity) = $0 { identity } else { nil } }
    }

    @Test func aWriteOfAFileWithOtherNamesIsReportedToTheWatcherWhenItEndsOnce() throws {
        let h = Self.watching()
        let tool = h.connect("tool")
        // Two items naming the one file: one report, after the claim's end and not before.
        let writer = h.claim([Self.linked(Self.write("/e/b.txt")), Self.linked(Self.write("/e/c.txt"))], client: tool)
        #expect(h.isGranted(writer))
        #expect(Self.reported(h.effects).isEmpty)
        h.finish(writer)
        #expect(Self.reported(h.lastEffects) == [Self.file])
    }

    @Test func noReportForAReadADeletionAFileWithOneNameOrAnArbiterThatDoesNotWatch() throws {
        let h = Self.watching()
        let tool = h.connect("tool")
        for item in [
            Self.linked(Self.read("/e/b.txt")), Self.linked(Self.write("/e/b.txt", .forDeleting)),
            Self.linked(Self.write("/e/b.txt", .forMoving)), Self.write("/e/b.txt"),
        ] {
            let claim = h.claim([item], client: tool)
            #expect(h.isGranted(claim))
            h.finish(claim)
        }
        #expect(Self.reported(h.effects).isEmpty)

        let inProcess = ArbiterHarness()
        let claim = inProcess.claim([Self.linked(Self.write("/e/b.txt"))], client: inProcess.connect("tool"))
        inProcess.finish(claim)
        #expect(Self.reported(inProcess.effects).isEmpty)
    }
}
