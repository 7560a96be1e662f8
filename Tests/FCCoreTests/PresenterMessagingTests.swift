import FCCore
import FCTestSupport
import Testing

/// The request id of the last relinquish sent to `presenter` (what its reacquire names).
private func relinquishRequest(_ h: ArbiterHarness, of presenter: PresenterID) -> RequestID? {
    h.allMessages.last {
        $0.presenter == presenter && ($0.kind == .relinquishToReader || $0.kind == .relinquishToWriter)
    }?.request
}

/// The reacquire message that answers the last relinquish sent to `presenter`.
private func reacquire(_ h: ArbiterHarness, _ presenter: PresenterID) throws -> PresenterMessageKind {
    .reacquire(relinquish: try #require(relinquishRequest(h, of: presenter)))
}

/// Every callback except the `presentedSubitem…` notifications.
private let withoutSubitemCallbacks = PresenterCallbacks.all.subtracting(.subitemNotifications)

/// docs/SEMANTICS.md §3, "Which presenter hears what, and when": one test per row of the table, then one or more per
/// bullet under it. Presenters belong to the client `app`; claims come from the client `tool` unless a test says
/// otherwise. Every expectation on messages is the presenter's exact sequence.
@Suite("docs/SEMANTICS.md §3: which presenter hears what, and when")
struct PresenterMessagingTests {
    // MARK: Table, row "read"

    @Test func table_read_itemAndEnclosingPackagePresenters() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let item = h.present("/d/P.rtfd/f", client: app)
        let package = h.present("/d/P.rtfd", client: app)
        let plainDirectory = h.present("/d", client: app)
        let read = h.read("/d/P.rtfd/f", client: tool)
        // One step at a time: save follows the answer to relinquish.
        #expect(h.messages(to: item) == [.relinquishToReader])
        #expect(h.messages(to: package) == [.relinquishToReader])
        h.answerAll()
        #expect(h.messages(to: item) == [.relinquishToReader, .savePresentedItemChanges])
        #expect(h.messages(to: package) == [.relinquishToReader, .savePresentedItemChanges])
        #expect(h.isGranted(read))
        h.finish(read)
        #expect(h.messages(to: item) == [.relinquishToReader, .savePresentedItemChanges, try reacquire(h, item)])
        #expect(h.messages(to: package) == [.relinquishToReader, .savePresentedItemChanges, try reacquire(h, package)])
        #expect(h.messages(to: plainDirectory).isEmpty)
    }

    @Test func table_read_enclosingPackagesAtEveryLevel() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let outer = h.present("/d/Outer.bundle", client: app)
        let inner = h.present("/d/Outer.bundle/Inner.rtfd", client: app, isPackage: true)
        let declared = h.present("/d/Outer.bundle/Inner.rtfd/Doc", client: app, isPackage: true)
        let read = h.read("/d/Outer.bundle/Inner.rtfd/Doc/x", client: tool)
        #expect(h.answerAll() == 6)
        #expect(h.isGranted(read))
        h.finish(read)
        for package in [outer, inner, declared] {
            #expect(
                h.messages(to: package) == [.relinquishToReader, .savePresentedItemChanges, try reacquire(h, package)]
            )
        }
    }

    @Test func table_read_presentersInsideADirectoryHearNothing() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let directory = h.present("/d", client: app)
        let inside = h.present("/d/f", client: app)
        let deeper = h.present("/d/sub/g", client: app)
        let read = h.read("/d", client: tool)
        h.answerAll()
        h.finish(read)
        #expect(
            h.messages(to: directory) == [.relinquishToReader, .savePresentedItemChanges, try reacquire(h, directory)]
        )
        #expect(h.messages(to: inside).isEmpty)
        #expect(h.messages(to: deeper).isEmpty)
    }

    // MARK: Table, row "read .withoutChanges"

    @Test func table_readWithoutChanges() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let item = h.present("/d/P.rtfd/f", client: app)
        let package = h.present("/d/P.rtfd", client: app)
        let plainDirectory = h.present("/d", client: app)
        let read = h.read("/d/P.rtfd/f", .withoutChanges, client: tool)
        #expect(h.answerAll() == 2)
        #expect(h.isGranted(read))
        h.finish(read)
        #expect(h.messages(to: item) == [.relinquishToReader, try reacquire(h, item)])
        #expect(h.messages(to: package) == [.relinquishToReader, try reacquire(h, package)])
        #expect(h.messages(to: plainDirectory).isEmpty)
    }

    // MARK: Table, row "write"

    @Test func table_write_itemAndEnclosingPlainDirectories() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let top = h.present("/top", client: app)
        let directory = h.present("/top/d", client: app)
        let item = h.present("/top/d/f", client: app)
        let write = h.write("/top/d/f", client: tool)
        #expect(h.messages(to: item) == [.relinquishToWriter])
        h.answerAll()
        #expect(h.isGranted(write))
        // Enclosing plain directories hear nothing before the write.
        #expect(h.messages(to: top).isEmpty)
        #expect(h.messages(to: directory).isEmpty)
        h.finish(write)
        #expect(h.messages(to: item) == [.relinquishToWriter, .presentedItemDidChange, try reacquire(h, item)])
        #expect(h.messages(to: directory) == [.presentedSubitemDidChange(at: path("/top/d/f"))])
        #expect(h.messages(to: top) == [.presentedSubitemDidChange(at: path("/top/d/f"))])
    }

    @Test func table_write_enclosingPackage() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let package = h.present("/d/P.rtfd", client: app)
        let write = h.write("/d/P.rtfd/f", client: tool)
        #expect(h.messages(to: package) == [.relinquishToWriter])
        h.answerAll()
        h.finish(write)
        #expect(
            h.messages(to: package) == [
                .relinquishToWriter, .presentedSubitemDidChange(at: path("/d/P.rtfd/f")), try reacquire(h, package),
            ]
        )
    }

    @Test func table_write_presentersInsideADirectoryHearNothing() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let directory = h.present("/d", client: app)
        let inside = h.present("/d/f", client: app)
        let write = h.write("/d", client: tool)
        h.answerAll()
        #expect(h.isGranted(write))
        h.finish(write)
        #expect(
            h.messages(to: directory) == [.relinquishToWriter, .presentedItemDidChange, try reacquire(h, directory)]
        )
        #expect(h.messages(to: inside).isEmpty)
    }

    // MARK: Table, row "write .forMerging"

    @Test func table_writeForMerging() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let item = h.present("/d/P.rtfd/f", client: app)
        let package = h.present("/d/P.rtfd", client: app)
        let plainDirectory = h.present("/d", client: app)
        let write = h.write("/d/P.rtfd/f", .forMerging, client: tool)
        h.answerAll()
        #expect(h.isGranted(write))
        #expect(h.messages(to: plainDirectory).isEmpty)
        h.finish(write)
        #expect(
            h.messages(to: item) == [
                .relinquishToWriter, .savePresentedItemChanges, .presentedItemDidChange, try reacquire(h, item),
            ]
        )
        #expect(
            h.messages(to: package) == [
                .relinquishToWriter, .savePresentedItemChanges, .presentedSubitemDidChange(at: path("/d/P.rtfd/f")),
                try reacquire(h, package),
            ]
        )
        #expect(h.messages(to: plainDirectory) == [.presentedSubitemDidChange(at: path("/d/P.rtfd/f"))])
    }

    // MARK: Table, row "write .forMoving" on a directory with presenters inside

    @Test func table_writeForMoving_directoryWithPresentersInside() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let top = h.present("/top", client: app)
        let directory = h.present("/top/d", client: app)
        let inside = h.present("/top/d/f", client: app)
        let deeper = h.present("/top/d/sub/g", client: app)
        let write = h.write("/top/d", .forMoving, client: tool)
        #expect(h.messages(to: directory) == [.relinquishToWriter])
        #expect(h.messages(to: inside) == [.relinquishToWriter])
        #expect(h.messages(to: deeper) == [.relinquishToWriter])
        #expect(h.messages(to: top).isEmpty)
        #expect(h.answerAll() == 3)
        #expect(h.isGranted(write))
        // No move reported: it ends as a plain write of the directory.
        h.finish(write)
        #expect(
            h.messages(to: directory) == [.relinquishToWriter, .presentedItemDidChange, try reacquire(h, directory)]
        )
        #expect(h.messages(to: inside) == [.relinquishToWriter, try reacquire(h, inside)])
        #expect(h.messages(to: deeper) == [.relinquishToWriter, try reacquire(h, deeper)])
        #expect(h.messages(to: top) == [.presentedSubitemDidChange(at: path("/top/d"))])
    }

    // MARK: Table, row "write .forDeleting / .forReplacing"

    @Test("table_deleteOrReplace_item", arguments: [WritingOptions.forDeleting, .forReplacing])
    func table_deleteOrReplace_item(_ options: WritingOptions) throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let directory = h.present("/d", client: app)
        let item = h.present("/d/f", client: app)
        let write = h.write("/d/f", options, client: tool)
        h.answerAll()
        #expect(h.isGranted(write))
        #expect(h.messages(to: item) == [.relinquishToWriter, .accommodatePresentedItemDeletion])
        // Before: the enclosing plain directory is asked to accommodate the deletion of its subitem (issue 10).
        #expect(h.messages(to: directory) == [.accommodatePresentedSubitemDeletion(at: path("/d/f"))])
        h.finish(write)
        // After: no did change for a deletion; a replaced item is written, and its presenter hears it.
        let didChange: [PresenterMessageKind] = options == .forReplacing ? [.presentedItemDidChange] : []
        #expect(
            h.messages(to: item)
                == [.relinquishToWriter, .accommodatePresentedItemDeletion] + didChange + [try reacquire(h, item)]
        )
        #expect(
            h.messages(to: directory) == [
                .accommodatePresentedSubitemDeletion(at: path("/d/f")), .presentedSubitemDidChange(at: path("/d/f")),
            ]
        )
    }

    @Test("table_deleteOrReplace_insidePackage", arguments: [WritingOptions.forDeleting, .forReplacing])
    func table_deleteOrReplace_insidePackage(_ options: WritingOptions) throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let plainDirectory = h.present("/d", client: app)
        let package = h.present("/d/P.rtfd", client: app)
        let item = h.present("/d/P.rtfd/f", client: app)
        let write = h.write("/d/P.rtfd/f", options, client: tool)
        h.answerAll()
        #expect(h.isGranted(write))
        #expect(
            h.messages(to: package) == [
                .relinquishToWriter, .accommodatePresentedSubitemDeletion(at: path("/d/P.rtfd/f")),
            ]
        )
        #expect(h.messages(to: item) == [.relinquishToWriter, .accommodatePresentedItemDeletion])
        #expect(h.messages(to: plainDirectory).isEmpty)
        h.finish(write)
        let didChange: [PresenterMessageKind] = options == .forReplacing ? [.presentedItemDidChange] : []
        #expect(
            h.messages(to: package) == [
                .relinquishToWriter, .accommodatePresentedSubitemDeletion(at: path("/d/P.rtfd/f")),
                .presentedSubitemDidChange(at: path("/d/P.rtfd/f")), try reacquire(h, package),
            ]
        )
        #expect(
            h.messages(to: item)
                == [.relinquishToWriter, .accommodatePresentedItemDeletion] + didChange + [try reacquire(h, item)]
        )
        #expect(h.messages(to: plainDirectory) == [.presentedSubitemDidChange(at: path("/d/P.rtfd/f"))])
    }

    @Test(
        "table_deleteOrReplace_directoryWithPresentersInside",
        arguments: [WritingOptions.forDeleting, .forReplacing]
    )
    func table_deleteOrReplace_directoryWithPresentersInside(_ options: WritingOptions) throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let top = h.present("/top", client: app)
        let directory = h.present("/top/d", client: app)
        let inside = h.present("/top/d/f", client: app)
        let deeper = h.present("/top/d/sub/g", client: app)
        let write = h.write("/top/d", options, client: tool)
        h.answerAll()
        #expect(h.isGranted(write))
        for presenter in [directory, inside, deeper] {
            #expect(h.messages(to: presenter) == [.relinquishToWriter, .accommodatePresentedItemDeletion])
        }
        #expect(h.messages(to: top) == [.accommodatePresentedSubitemDeletion(at: path("/top/d"))])
        h.finish(write)
        let didChange: [PresenterMessageKind] = options == .forReplacing ? [.presentedItemDidChange] : []
        #expect(
            h.messages(to: directory)
                == [.relinquishToWriter, .accommodatePresentedItemDeletion] + didChange + [try reacquire(h, directory)]
        )
        for presenter in [inside, deeper] {
            #expect(
                h.messages(to: presenter)
                    == [.relinquishToWriter, .accommodatePresentedItemDeletion, try reacquire(h, presenter)]
            )
        }
        #expect(
            h.messages(to: top) == [
                .accommodatePresentedSubitemDeletion(at: path("/top/d")),
                .presentedSubitemDidChange(at: path("/top/d")),
            ]
        )
    }

    // MARK: Table, row "item(at:didMoveTo:) inside a write"

    @Test func table_itemMoved_itemContentsAndEnclosingDirectory() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let top = h.present("/top", client: app)
        let directory = h.present("/top/d", client: app)
        let inside = h.present("/top/d/f", client: app)
        let deeper = h.present("/top/d/sub/g", client: app)
        let move = h.claim(
            [ArbiterHarness.write("/top/d", .forMoving), ArbiterHarness.write("/top/e", .forReplacing)],
            client: tool
        )
        h.answerAll()
        #expect(h.isGranted(move))
        h.send(.itemMoved(move, from: path("/top/d"), to: path("/top/e")))
        #expect(h.messages(to: directory) == [.relinquishToWriter, .presentedItemDidMove(to: path("/top/e"))])
        #expect(h.messages(to: inside) == [.relinquishToWriter, .presentedItemDidMove(to: path("/top/e/f"))])
        #expect(h.messages(to: deeper) == [.relinquishToWriter, .presentedItemDidMove(to: path("/top/e/sub/g"))])
        // The destination is written `.forReplacing`: its folder is asked to accommodate its deletion first.
        let accommodate = PresenterMessageKind.accommodatePresentedSubitemDeletion(at: path("/top/e"))
        #expect(
            h.messages(to: top) == [accommodate, .presentedSubitemDidMove(from: path("/top/d"), to: path("/top/e"))]
        )
        let presenters = h.arbiter.snapshot().presenters
        #expect(presenters[directory]?.path == path("/top/e"))
        #expect(presenters[inside]?.path == path("/top/e/f"))
        #expect(presenters[deeper]?.path == path("/top/e/sub/g"))
        h.finish(move)
        #expect(
            h.messages(to: directory) == [
                .relinquishToWriter, .presentedItemDidMove(to: path("/top/e")), try reacquire(h, directory),
            ]
        )
        #expect(
            h.messages(to: inside) == [
                .relinquishToWriter, .presentedItemDidMove(to: path("/top/e/f")), try reacquire(h, inside),
            ]
        )
        #expect(
            h.messages(to: top) == [accommodate, .presentedSubitemDidMove(from: path("/top/d"), to: path("/top/e"))]
        )
    }

    @Test func table_itemMoved_enclosingDirectoriesOfBothEnds() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let common = h.present("/c", client: app)
        let source = h.present("/c/x", client: app)
        let destination = h.present("/c/y", client: app)
        let item = h.present("/c/x/a", client: app)
        let move = h.claim(
            [ArbiterHarness.write("/c/x/a", .forMoving), ArbiterHarness.write("/c/y/a", .forReplacing)],
            client: tool
        )
        h.answerAll()
        h.send(.itemMoved(move, from: path("/c/x/a"), to: path("/c/y/a")))
        h.finish(move)
        let subitemMoved = PresenterMessageKind.presentedSubitemDidMove(from: path("/c/x/a"), to: path("/c/y/a"))
        // The destination's folders are asked to accommodate its deletion (it is written `.forReplacing`).
        let accommodate = PresenterMessageKind.accommodatePresentedSubitemDeletion(at: path("/c/y/a"))
        #expect(h.messages(to: common) == [accommodate, subitemMoved])
        #expect(h.messages(to: source) == [subitemMoved])
        #expect(h.messages(to: destination) == [accommodate, subitemMoved])
        #expect(
            h.messages(to: item) == [
                .relinquishToWriter, .presentedItemDidMove(to: path("/c/y/a")), try reacquire(h, item),
            ]
        )
    }

    @Test func table_itemMoved_insideAPackage() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let package = h.present("/d/P.rtfd", client: app)
        let item = h.present("/d/P.rtfd/a", client: app)
        let move = h.claim(
            [ArbiterHarness.write("/d/P.rtfd/a", .forMoving), ArbiterHarness.write("/d/P.rtfd/b", .forReplacing)],
            client: tool
        )
        h.answerAll()
        h.send(.itemMoved(move, from: path("/d/P.rtfd/a"), to: path("/d/P.rtfd/b")))
        h.finish(move)
        #expect(
            h.messages(to: package) == [
                .relinquishToWriter, .accommodatePresentedSubitemDeletion(at: path("/d/P.rtfd/b")),
                .presentedSubitemDidMove(from: path("/d/P.rtfd/a"), to: path("/d/P.rtfd/b")), try reacquire(h, package),
            ]
        )
        #expect(
            h.messages(to: item) == [
                .relinquishToWriter, .presentedItemDidMove(to: path("/d/P.rtfd/b")), try reacquire(h, item),
            ]
        )
    }

    // MARK: Table, row "version added, removed, resolved"

    @Test func table_versionChanges_reachEveryPresenterIncludingTheWritersOwn() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let other = h.connect("other")
        let own = h.present("/d/f", client: app)
        let second = h.present("/d/f", client: other)
        let directory = h.present("/d", client: other)
        let write = h.write("/d/f", client: app, filePresenter: own)
        #expect(h.messages(to: own).isEmpty)
        h.answerAll()
        #expect(h.isGranted(write))
        let changes: [VersionChange] = [.added(VersionID("v1")), .removed(VersionID("v0")), .resolved(VersionID("c1"))]
        for change in changes {
            h.send(.versionChanged(write, path("/d/f"), change))
        }
        h.finish(write)
        #expect(h.messages(to: own) == changes.map { .presentedItemVersion($0) })
        #expect(
            h.messages(to: second)
                == [.relinquishToWriter] + changes.map { .presentedItemVersion($0) } + [
                    .presentedItemDidChange, try reacquire(h, second),
                ]
        )
        #expect(
            h.messages(to: directory)
                == changes.map { .presentedSubitemVersion(at: path("/d/f"), $0) } + [
                    .presentedSubitemDidChange(at: path("/d/f"))
                ]
        )
    }

    /// Found by the simulator (seed 1592596741 with deadlines and shared queues added): a version change inside a
    /// package whose presenter declares no subitem callbacks reaches that presenter as did change, which is no
    /// version message, so the claim's own presenter must not get it.
    @Test func table_versionChanges_insideAPackageTheClaimsOwnPresenterHearsNothing() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let viewer = h.connect("viewer")
        let noSubitems = PresenterCallbacks.all.subtracting(.subitemNotifications)
        let own = h.present("/d/P.rtfd", client: app, callbacks: noSubitems)
        let other = h.present("/d/P.rtfd", client: viewer, callbacks: noSubitems)
        let read = h.read("/d/P.rtfd/c", client: app, filePresenter: own)
        h.answerAll()
        #expect(h.isGranted(read))
        h.clearEffects()
        h.send(.versionChanged(read, path("/d/P.rtfd/c"), .resolved(VersionID("v1"))))
        #expect(h.messages(to: own).isEmpty)
        #expect(h.messages(to: other) == [.presentedItemDidChange])
    }

    @Test func table_versionChanges_presentersInsideHearNothing() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let directory = h.present("/d", client: app)
        let inside = h.present("/d/f", client: app)
        let write = h.write("/d", client: tool)
        h.answerAll()
        h.send(.versionChanged(write, path("/d"), .added(VersionID("v1"))))
        h.finish(write)
        #expect(
            h.messages(to: directory) == [
                .relinquishToWriter, .presentedItemVersion(.added(VersionID("v1"))), .presentedItemDidChange,
                try reacquire(h, directory),
            ]
        )
        #expect(h.messages(to: inside).isEmpty)
    }

    // MARK: Table, row "after any granted write of the item"

    @Test func table_afterWrite_didChangeAndSubitemDidChange() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let root = h.present("/", client: app)
        let directory = h.present("/d", client: app)
        let item = h.present("/d/f", client: app, callbacks: [.presentedItemDidChange])
        let sibling = h.present("/d/g", client: app)
        for _ in 0..<2 {
            let write = h.write("/d/f", .contentIndependentMetadataOnly, client: tool)
            #expect(h.isGranted(write))  // The item's presenter implements no relinquish: nothing to wait for.
            h.finish(write)
        }
        #expect(h.messages(to: item) == [.presentedItemDidChange, .presentedItemDidChange])
        #expect(h.messages(to: directory) == Array(repeating: .presentedSubitemDidChange(at: path("/d/f")), count: 2))
        #expect(h.messages(to: root) == Array(repeating: .presentedSubitemDidChange(at: path("/d/f")), count: 2))
        #expect(h.messages(to: sibling).isEmpty)
    }

    // MARK: Bullet: never the presenter the coordinator was created with (version messages excepted)

    @Test func bullet_ownItemPresenterIsNeverMessaged() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let own = h.present("/d/f", client: app)
        // A folder that does not implement accommodate subitem deletion, so that every claim is granted at once.
        var folderCallbacks = PresenterCallbacks.all
        folderCallbacks.remove(.accommodatePresentedSubitemDeletion)
        let directory = h.present("/d", client: app, callbacks: folderCallbacks)
        for claim in [
            h.read("/d/f", client: app, filePresenter: own),
            h.write("/d/f", .forMerging, client: app, filePresenter: own),
            h.write("/d/f", .forReplacing, client: app, filePresenter: own),
        ] {
            #expect(h.isGranted(claim))  // Nobody to ask: granted at once.
            h.finish(claim)
        }
        #expect(h.messages(to: own).isEmpty)
        #expect(h.messages(to: directory) == Array(repeating: .presentedSubitemDidChange(at: path("/d/f")), count: 2))

        let move = h.claim(
            [ArbiterHarness.write("/d/f", .forMoving), ArbiterHarness.write("/d/g", .forReplacing)],
            client: app,
            filePresenter: own
        )
        h.send(.itemMoved(move, from: path("/d/f"), to: path("/d/g")))
        #expect(h.arbiter.snapshot().presenters[own]?.path == path("/d/g"))  // Moved, but not told.
        h.send(.versionChanged(move, path("/d/g"), .added(VersionID("v1"))))
        h.finish(move)
        #expect(h.messages(to: own) == [.presentedItemVersion(.added(VersionID("v1")))])
        #expect(
            h.messages(to: directory) == [
                .presentedSubitemDidChange(at: path("/d/f")), .presentedSubitemDidChange(at: path("/d/f")),
                .presentedSubitemDidMove(from: path("/d/f"), to: path("/d/g")),
                .presentedSubitemVersion(at: path("/d/g"), .added(VersionID("v1"))),
            ]
        )
    }

    @Test func bullet_ownDirectoryPresenterIsNeverMessaged() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let own = h.present("/d", client: app)
        let item = h.present("/d/f", client: tool)
        let write = h.write("/d/f", client: app, filePresenter: own)
        h.answerAll()
        h.send(.versionChanged(write, path("/d/f"), .added(VersionID("v1"))))
        h.finish(write, created: ["/d/new"])
        #expect(h.messages(to: own) == [.presentedSubitemVersion(at: path("/d/f"), .added(VersionID("v1")))])
        #expect(
            h.messages(to: item) == [
                .relinquishToWriter, .presentedItemVersion(.added(VersionID("v1"))), .presentedItemDidChange,
                try reacquire(h, item),
            ]
        )
    }

    // MARK: Bullet: every reply is awaited before the accessor runs

    @Test func bullet_everyReplyIsAwaitedBeforeTheGrant() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let other = h.connect("other")
        let tool = h.connect("tool")
        let item = h.present("/d/P.rtfd/f", client: app)
        let package = h.present("/d/P.rtfd", client: other)
        let delete = h.write("/d/P.rtfd/f", .forDeleting, client: tool)
        #expect(h.arbiter.phase(of: delete) == .preparing)

        let steps: [(PresenterID, PresenterMessageKind, PresenterReply)] = [
            (item, .relinquishToWriter, .relinquished(reacquirer: true)),
            (item, .accommodatePresentedItemDeletion, .succeeded),
            (package, .relinquishToWriter, .relinquished(reacquirer: false)),
        ]
        for (presenter, kind, reply) in steps {
            let request = try #require(soleRequest(h, of: presenter))
            #expect(request.kind == kind)
            h.reply(request.id, reply)
            #expect(!h.isGranted(delete))
            #expect(h.arbiter.phase(of: delete) == .preparing)
        }
        let last = try #require(soleRequest(h, of: package))
        #expect(last.kind == .accommodatePresentedSubitemDeletion(at: path("/d/P.rtfd/f")))
        h.reply(last.id, .succeeded)
        #expect(h.isGranted(delete))
        #expect(h.arbiter.snapshot().outstandingRequests.isEmpty)
    }

    // MARK: Bullet: order on one presenter's queue

    @Test func bullet_perPresenterOrder_relinquishSaveNotificationsReacquire() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let item = h.present("/d/f", client: app)
        let write = h.write("/d/f", .forMerging, client: tool)
        #expect(h.messages(to: item) == [.relinquishToWriter])
        h.reply(try #require(soleRequest(h, of: item)).id, .relinquished(reacquirer: true))
        #expect(h.messages(to: item) == [.relinquishToWriter, .savePresentedItemChanges])
        #expect(!h.isGranted(write))
        h.reply(try #require(soleRequest(h, of: item)).id, .succeeded)
        #expect(h.isGranted(write))
        h.send(.versionChanged(write, path("/d/f"), .added(VersionID("v2"))))
        h.finish(write)
        #expect(
            h.messages(to: item) == [
                .relinquishToWriter, .savePresentedItemChanges, .presentedItemVersion(.added(VersionID("v2"))),
                .presentedItemDidChange, try reacquire(h, item),
            ]
        )
    }

    @Test func bullet_perPresenterOrder_packageWithTwoSubitemDeletions() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let package = h.present("/d/P.rtfd", client: app)
        let delete = h.claim(
            [ArbiterHarness.write("/d/P.rtfd/a", .forDeleting), ArbiterHarness.write("/d/P.rtfd/b", .forDeleting)],
            client: tool
        )
        #expect(h.answerAll() == 3)
        h.finish(delete)
        #expect(
            h.messages(to: package) == [
                .relinquishToWriter,
                .accommodatePresentedSubitemDeletion(at: path("/d/P.rtfd/a")),
                .accommodatePresentedSubitemDeletion(at: path("/d/P.rtfd/b")),
                .presentedSubitemDidChange(at: path("/d/P.rtfd/a")),
                .presentedSubitemDidChange(at: path("/d/P.rtfd/b")),
                try reacquire(h, package),
            ]
        )
    }

    // MARK: Bullet: the reacquirer runs when the access ends, if the presenter handed one back

    @Test func bullet_reacquireOnlyWhenTheReplyHandedOneBack() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let other = h.connect("other")
        let tool = h.connect("tool")
        let without = h.present("/d/f", client: app)
        let with = h.present("/d/f", client: other)
        let read = h.read("/d/f", client: tool)
        h.reply(try #require(soleRequest(h, of: without)).id, .relinquished(reacquirer: false))
        h.reply(try #require(soleRequest(h, of: with)).id, .relinquished(reacquirer: true))
        h.answerAll()
        #expect(h.isGranted(read))
        // Nothing before the access ends.
        #expect(h.messages(to: with) == [.relinquishToReader, .savePresentedItemChanges])
        h.finish(read)
        #expect(h.messages(to: without) == [.relinquishToReader, .savePresentedItemChanges])
        #expect(h.messages(to: with) == [.relinquishToReader, .savePresentedItemChanges, try reacquire(h, with)])
    }

    // MARK: Bullet: an error from save or accommodate fails the claim

    @Test func bullet_saveErrorFailsTheClaimWithTheErrorIntact() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let other = h.connect("other")
        let item = h.present("/d/f", client: app)
        let read = h.read("/d/f", client: tool)
        let next = h.write("/d/f", client: other)
        let relinquish = try #require(soleRequest(h, of: item))
        h.reply(relinquish.id, .relinquished(reacquirer: true))
        let error = PresenterError(
            domain: "NSCocoaErrorDomain",
            code: 640,
            message: "The disk \u{201C}Data\u{201D} is full."
        )
        h.reply(try #require(soleRequest(h, of: item)).id, .failed(error))

        #expect(h.failure(read) == .presenterError(error, presenter: item))
        if case .presenterError(let carried, let presenter) = h.failure(read) {
            #expect(carried.domain == "NSCocoaErrorDomain")
            #expect(carried.code == 640)
            #expect(carried.message == "The disk \u{201C}Data\u{201D} is full.")
            #expect(presenter == item)
        }
        #expect(!h.isGranted(read))
        #expect(h.arbiter.phase(of: read) == nil)
        // The presenter that relinquished gets its reacquirer, before anything the next claim asks.
        #expect(
            h.messages(to: item) == [
                .relinquishToReader, .savePresentedItemChanges, .reacquire(relinquish: relinquish.id),
                .relinquishToWriter,
            ]
        )
        h.answerAll()
        #expect(h.isGranted(next))
        #expect(!h.isGranted(read))
    }

    @Test func bullet_accommodateErrorFailsTheClaimAndEveryRelinquisherReacquires() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let second = h.connect("second")
        let third = h.connect("third")
        let tool = h.connect("tool")
        let failing = h.present("/d/f", client: app)
        let relinquished = h.present("/d/f", client: second)
        let slow = h.present("/d/f", client: third)
        let delete = h.write("/d/f", .forDeleting, client: tool)
        let failingRelinquish = try #require(soleRequest(h, of: failing))
        let otherRelinquish = try #require(soleRequest(h, of: relinquished))
        let slowRelinquish = try #require(soleRequest(h, of: slow))
        h.reply(failingRelinquish.id, .relinquished(reacquirer: true))
        h.reply(otherRelinquish.id, .relinquished(reacquirer: true))
        let otherAccommodate = try #require(soleRequest(h, of: relinquished))
        let error = PresenterError(domain: "com.example.editor", code: 7, message: "unsaved changes")
        h.reply(try #require(soleRequest(h, of: failing)).id, .failed(error))

        #expect(h.failure(delete) == .presenterError(error, presenter: failing))
        #expect(h.arbiter.phase(of: delete) == nil)
        #expect(
            h.messages(to: failing) == [
                .relinquishToWriter, .accommodatePresentedItemDeletion, .reacquire(relinquish: failingRelinquish.id),
            ]
        )
        #expect(
            h.messages(to: relinquished) == [
                .relinquishToWriter, .accommodatePresentedItemDeletion, .reacquire(relinquish: otherRelinquish.id),
            ]
        )
        #expect(h.messages(to: slow) == [.relinquishToWriter])

        // Late answers to the failed claim: a reacquirer is handed straight back; anything else changes nothing.
        h.reply(otherAccommodate.id, .succeeded)
        h.reply(slowRelinquish.id, .relinquished(reacquirer: true))
        #expect(h.messages(to: slow) == [.relinquishToWriter, .reacquire(relinquish: slowRelinquish.id)])
        #expect(h.messages(to: relinquished).count == 3)
        #expect(!h.isGranted(delete))
        #expect(h.openRequests().isEmpty)
    }

    // MARK: Bullet: exactly once

    @Test func bullet_exactlyOnce_oneDidMoveAndNoDidChangeForAMove() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let directory = h.present("/d", client: app)
        let item = h.present("/d/a", client: app)
        let move = h.claim(
            [ArbiterHarness.write("/d/a", .forMoving), ArbiterHarness.write("/d/b", .forReplacing)],
            client: tool
        )
        h.answerAll()
        h.send(.itemMoved(move, from: path("/d/a"), to: path("/d/b")))
        h.finish(move)
        #expect(
            h.messages(to: item) == [
                .relinquishToWriter, .presentedItemDidMove(to: path("/d/b")), try reacquire(h, item),
            ]
        )
        // One did move for the directory; it was asked first to accommodate the replaced destination's deletion.
        #expect(
            h.messages(to: directory) == [
                .accommodatePresentedSubitemDeletion(at: path("/d/b")),
                .presentedSubitemDidMove(from: path("/d/a"), to: path("/d/b")),
            ]
        )
    }

    @Test func bullet_exactlyOnce_writeInsideAMovedDirectoryIsReportedAtItsNewPath() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let parent = h.present("/d", client: app)
        let moved = h.present("/d/a", client: app)
        let file = h.present("/d/a/f", client: app)
        let claim = h.claim(
            [
                ArbiterHarness.write("/d/a", .forMoving), ArbiterHarness.write("/d/b", .forReplacing),
                ArbiterHarness.write("/d/a/f"),
            ],
            client: tool
        )
        #expect(h.answerAll() == 3)
        h.send(.itemMoved(claim, from: path("/d/a"), to: path("/d/b")))
        h.finish(claim)
        #expect(
            h.messages(to: parent) == [
                .accommodatePresentedSubitemDeletion(at: path("/d/b")),
                .presentedSubitemDidMove(from: path("/d/a"), to: path("/d/b")),
                .presentedSubitemDidChange(at: path("/d/b/f")),
            ]
        )
        #expect(
            h.messages(to: moved) == [
                .relinquishToWriter, .presentedItemDidMove(to: path("/d/b")),
                .presentedSubitemDidChange(at: path("/d/b/f")), try reacquire(h, moved),
            ]
        )
        #expect(
            h.messages(to: file) == [
                .relinquishToWriter, .presentedItemDidMove(to: path("/d/b/f")), .presentedItemDidChange,
                try reacquire(h, file),
            ]
        )
    }

    @Test func bullet_exactlyOnce_oneDidChangePerWrite() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let directory = h.present("/d", client: app)
        let item = h.present("/d/f", client: app)
        // One claim naming the item three times is one write.
        let write = h.claim(
            [ArbiterHarness.write("/d/f"), ArbiterHarness.write("/d/f", .forMerging), ArbiterHarness.read("/d/f")],
            client: tool
        )
        h.answerAll()
        h.finish(write)
        let first = try reacquire(h, item)
        #expect(
            h.messages(to: item) == [.relinquishToWriter, .savePresentedItemChanges, .presentedItemDidChange, first]
        )
        #expect(h.messages(to: directory) == [.presentedSubitemDidChange(at: path("/d/f"))])
        // A second write is a second did change.
        let again = h.write("/d/f", client: tool)
        h.answerAll()
        h.finish(again)
        #expect(
            h.messages(to: item) == [
                .relinquishToWriter, .savePresentedItemChanges, .presentedItemDidChange, first,
                .relinquishToWriter, .presentedItemDidChange, try reacquire(h, item),
            ]
        )
        #expect(h.messages(to: directory) == Array(repeating: .presentedSubitemDidChange(at: path("/d/f")), count: 2))
    }

    @Test func bullet_exactlyOnce_presenterTouchedByTwoItemsGetsOneRelinquish() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let package = h.present("/d/P.rtfd", client: app)
        let inside = h.present("/e/f", client: app)
        let claim = h.claim(
            [
                ArbiterHarness.read("/d/P.rtfd/a"), ArbiterHarness.write("/d/P.rtfd/b"),
                ArbiterHarness.write("/e", .forMoving), ArbiterHarness.write("/e/f"),
            ],
            client: tool
        )
        #expect(h.messages(to: package) == [.relinquishToWriter])
        #expect(h.messages(to: inside) == [.relinquishToWriter])
        h.answerAll()
        #expect(h.isGranted(claim))
        h.finish(claim)
        #expect(
            h.messages(to: package) == [
                .relinquishToWriter, .savePresentedItemChanges, .presentedSubitemDidChange(at: path("/d/P.rtfd/b")),
                try reacquire(h, package),
            ]
        )
        #expect(h.messages(to: inside) == [.relinquishToWriter, .presentedItemDidChange, try reacquire(h, inside)])
    }

    // A package presenter without subitem callbacks gets presentedItemDidChange as the fallback of the version
    // message; the write's own did change must not come a second time (found in review, fixed by
    // `ClaimRecord.sentNotifications`).
    @Test func bullet_exactlyOnce_packageFallbackGivesOneDidChangePerWrite() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let package = h.present("/d/P.rtfd", client: app, callbacks: withoutSubitemCallbacks)
        let write = h.write("/d/P.rtfd/f", client: tool)
        h.answerAll()
        h.send(.versionChanged(write, path("/d/P.rtfd/f"), .added(VersionID("v1"))))
        h.finish(write)
        #expect(h.messages(to: package) == [.relinquishToWriter, .presentedItemDidChange, try reacquire(h, package)])
    }

    // MARK: Bullet: new items are reported as subitem did change and as subitem did appear

    @Test func bullet_createdItemsAreReportedAsSubitemDidChangeAndDidAppear() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let top = h.present("/top", client: app)
        let directory = h.present("/top/d", client: app)
        let created = h.write("/top/d/new", client: tool)
        h.finish(created, created: ["/top/d/new"])
        func appeared(_ item: String) -> [PresenterMessageKind] {
            [.presentedSubitemDidChange(at: path(item)), .presentedSubitemDidAppear(at: path(item))]
        }
        #expect(h.messages(to: directory) == appeared("/top/d/new"))
        #expect(h.messages(to: top) == appeared("/top/d/new"))

        // Items created inside a written directory.
        let write = h.write("/top/d", client: tool)
        h.answerAll()
        h.finish(write, created: ["/top/d/one", "/top/d/sub/two"])
        #expect(
            h.messages(to: directory)
                == appeared("/top/d/new") + [.relinquishToWriter, .presentedItemDidChange] + appeared("/top/d/one")
                + appeared("/top/d/sub/two") + [try reacquire(h, directory)]
        )
        #expect(
            h.messages(to: top)
                == appeared("/top/d/new") + [.presentedSubitemDidChange(at: path("/top/d"))] + appeared("/top/d/one")
                + appeared("/top/d/sub/two")
        )
    }

    // MARK: Bullet: packages whose presenter implements no subitem method get did change instead

    @Test func bullet_packageWithoutSubitemCallbacksGetsDidChange() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let package = h.present("/d/P.rtfd", client: app, callbacks: withoutSubitemCallbacks)
        let plainDirectory = h.present("/d", client: app, callbacks: withoutSubitemCallbacks)
        let create = h.write("/d/P.rtfd/new", client: tool)
        h.answerAll()
        h.finish(create, created: ["/d/P.rtfd/new"])
        let firstReacquire = try reacquire(h, package)
        #expect(h.messages(to: package) == [.relinquishToWriter, .presentedItemDidChange, firstReacquire])

        let move = h.claim(
            [ArbiterHarness.write("/d/P.rtfd/a", .forMoving), ArbiterHarness.write("/d/P.rtfd/b", .forReplacing)],
            client: tool
        )
        h.answerAll()
        h.send(.itemMoved(move, from: path("/d/P.rtfd/a"), to: path("/d/P.rtfd/b")))
        h.finish(move)
        #expect(
            h.messages(to: package) == [
                .relinquishToWriter, .presentedItemDidChange, firstReacquire,
                .relinquishToWriter, .accommodatePresentedSubitemDeletion(at: path("/d/P.rtfd/b")),
                .presentedItemDidChange, try reacquire(h, package),
            ]
        )
        // A plain directory enclosing the package hears the same fallback (issue 37), once per claim.
        #expect(h.messages(to: plainDirectory) == [.presentedItemDidChange, .presentedItemDidChange])
    }

    // MARK: Bullet: a folder presenter that implements only did change (issue 37)

    @Test func bullet_folderPresenterWithOnlyDidChangeHearsDidChangeOncePerClaim() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let folder = h.present("/d", client: app, callbacks: [.presentedItemDidChange])
        let both = h.present("/d", client: app, callbacks: [.presentedItemDidChange, .presentedSubitemDidChange])
        // A new file: subitem did change and did appear, one did change.
        let create = h.write("/d/new", client: tool)
        h.finish(create, created: ["/d/new"])
        #expect(h.messages(to: folder) == [.presentedItemDidChange])
        // One that implements subitem did change hears it, and did change for the appearance it does not implement.
        #expect(h.messages(to: both) == [.presentedSubitemDidChange(at: path("/d/new")), .presentedItemDidChange])
        h.clearEffects()
        // Two items written by one claim: one did change.
        let two = h.claim([ArbiterHarness.write("/d/a"), ArbiterHarness.write("/d/b")], client: tool)
        h.finish(two)
        #expect(h.messages(to: folder) == [.presentedItemDidChange])
        h.clearEffects()
        // A move inside it, and a version of an item in it.
        let move = h.claim(
            [ArbiterHarness.write("/d/a", .forMoving), ArbiterHarness.write("/d/c", .forReplacing)],
            client: tool
        )
        h.send(.itemMoved(move, from: path("/d/a"), to: path("/d/c")))
        h.send(.versionChanged(move, path("/d/c"), .added(VersionID("v1"))))
        h.finish(move)
        #expect(h.messages(to: folder) == [.presentedItemDidChange])
    }

    // MARK: Bullet: declared callbacks

    @Test func bullet_declaredCallbacks_nothingUndeclaredIsSent() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let item = h.present("/d/f", client: app, callbacks: [.presentedItemDidChange])
        let silent = h.present("/d/f", client: app, callbacks: [])
        let directory = h.present("/d", client: app, callbacks: [.presentedSubitemDidMove])
        let write = h.write("/d/f", .forMerging, client: tool)
        #expect(h.isGranted(write))  // Nothing to ask.
        #expect(h.openRequests().isEmpty)
        h.send(.versionChanged(write, path("/d/f"), .added(VersionID("v1"))))
        h.finish(write, created: ["/d/f"])
        let delete = h.write("/d/f", .forDeleting, client: tool)
        #expect(h.isGranted(delete))
        h.finish(delete)
        #expect(h.messages(to: item) == [.presentedItemDidChange])
        #expect(h.messages(to: silent).isEmpty)
        #expect(h.messages(to: directory).isEmpty)
    }

    @Test func bullet_declaredCallbacks_unimplementedRelinquishOrSaveIsAnImmediateYes() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let saveOnly = h.present("/d/f", client: app, callbacks: [.savePresentedItemChanges])
        let relinquishOnly = h.present("/d/f", client: app, callbacks: [.relinquishToReader])
        let neither = h.present(
            "/d/f",
            client: app,
            callbacks: withoutSubitemCallbacks.subtracting([
                .relinquishToReader, .relinquishToWriter, .savePresentedItemChanges, .accommodatePresentedItemDeletion,
            ])
        )
        let read = h.read("/d/f", client: tool)
        // The save-only presenter is asked to save at once; the other is asked only to relinquish.
        #expect(h.messages(to: saveOnly) == [.savePresentedItemChanges])
        #expect(h.messages(to: relinquishOnly) == [.relinquishToReader])
        #expect(h.messages(to: neither).isEmpty)
        #expect(h.answerAll() == 2)
        #expect(h.isGranted(read))
        h.finish(read)
        #expect(h.messages(to: saveOnly) == [.savePresentedItemChanges])
        #expect(h.messages(to: relinquishOnly) == [.relinquishToReader, try reacquire(h, relinquishOnly)])

        // Nobody implements what a deletion asks: granted with no request at all.
        let before = h.allMessages.count
        let delete = h.write("/d/f", .forDeleting, client: tool)
        #expect(h.isGranted(delete))
        #expect(h.allMessages.count == before)
    }
}
