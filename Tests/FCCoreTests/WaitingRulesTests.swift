import FCCore
import FCTestSupport
import Testing

/// The claims that keep `claim` from starting, as a set (their order is not part of the rules).
private func blockers(_ h: ArbiterHarness, _ claim: ClaimID) -> Set<ClaimID> {
    Set(h.arbiter.blockers(of: claim))
}

/// docs/SEMANTICS.md §2, "Who waits for whom": one or more tests per numbered rule, each named after its rule.
///
/// Unless a test says otherwise, every claim comes from a coordinator of its own with a purpose of its own (the
/// harness's default), so only rules 1-3 and 5-7 decide who waits.
@Suite("docs/SEMANTICS.md §2: who waits for whom")
struct WaitingRulesTests {
    // MARK: Rule 1. Readers share; a writer excludes readers and writers of the same item.

    @Test func rule1_readersShare() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let r1 = h.read("/d/f", client: a)
        let r2 = h.read("/d/f", client: b)
        let r3 = h.read("/d/f", .withoutChanges, client: b)
        #expect(h.grantedPaths(r1) == [path("/d/f")])
        #expect(h.grantedPaths(r2) == [path("/d/f")])
        #expect(h.grantedPaths(r3) == [path("/d/f")])
        #expect(h.arbiter.blockers(of: r3).isEmpty)
    }

    @Test func rule1_writerExcludesReaders() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let w = h.write("/d/f", client: a)
        let r = h.read("/d/f", client: b)
        #expect(h.isGranted(w))
        #expect(!h.isGranted(r))
        #expect(h.arbiter.phase(of: r) == .waiting)
        #expect(h.arbiter.blockers(of: r) == [w])
        h.finish(w)
        #expect(h.grantedPaths(r) == [path("/d/f")])
        #expect(h.arbiter.phase(of: w) == nil)
    }

    @Test func rule1_writerWaitsForReaders() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let r1 = h.read("/d/f", client: a)
        let r2 = h.read("/d/f", client: a)
        let w = h.write("/d/f", client: b)
        #expect(h.isGranted(r1) && h.isGranted(r2))
        #expect(h.arbiter.phase(of: w) == .waiting)
        #expect(blockers(h, w) == [r1, r2])
        h.finish(r1)
        #expect(!h.isGranted(w))
        #expect(h.arbiter.blockers(of: w) == [r2])
        h.finish(r2)
        #expect(h.isGranted(w))
    }

    @Test func rule1_writerExcludesWriters() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let w1 = h.write("/d/f", client: a)
        let w2 = h.write("/d/f", .forMerging, client: b)
        #expect(h.isGranted(w1))
        #expect(h.arbiter.phase(of: w2) == .waiting)
        #expect(h.arbiter.blockers(of: w2) == [w1])
        h.finish(w1)
        #expect(h.isGranted(w2))
    }

    @Test func rule1_differentItemsDoNotConflict() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let w1 = h.write("/d/a", client: a)
        let w2 = h.write("/d/b", client: b)
        let w3 = h.write("/d/a.txt", client: b)
        #expect(h.isGranted(w1) && h.isGranted(w2) && h.isGranted(w3))
    }

    // MARK: Rule 2. An item inside a package counts as the package as a whole.

    @Test func rule2_itemInsidePackageCountsAsPackage() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        #expect(ArbiterConfiguration.defaultPackageExtensions.contains("rtfd"))
        #expect(h.arbiter.isPackage(path("/d/P.rtfd")))
        #expect(h.arbiter.effectivePath(path("/d/P.rtfd/a")) == path("/d/P.rtfd"))
        let w = h.write("/d/P.rtfd/b", client: a)
        let r = h.read("/d/P.rtfd/a", client: b)
        let rPackage = h.read("/d/P.rtfd", client: b)
        let rDeep = h.read("/d/P.rtfd/sub/c", client: b)
        #expect(h.isGranted(w))
        #expect(h.arbiter.blockers(of: r) == [w])
        #expect(h.arbiter.blockers(of: rPackage) == [w])
        #expect(h.arbiter.blockers(of: rDeep) == [w])
        #expect(h.arbiter.snapshot().claims.map(\.effectivePaths) == Array(repeating: [path("/d/P.rtfd")], count: 4))
        h.finish(w)
        // Granted together (readers share), each with its own path, not the package's.
        #expect(h.grantedPaths(r) == [path("/d/P.rtfd/a")])
        #expect(h.grantedPaths(rPackage) == [path("/d/P.rtfd")])
        #expect(h.grantedPaths(rDeep) == [path("/d/P.rtfd/sub/c")])
    }

    @Test func rule2_sameNamesOutsideAPackageDoNotConflict() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let w = h.write("/d/P.txtdir/b", client: a)
        let r = h.read("/d/P.txtdir/a", client: b)
        #expect(h.isGranted(w) && h.isGranted(r))
    }

    @Test func rule2_nestedPackagesCountAsTheOutermost() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let w = h.write("/d/Outer.bundle/Inner.rtfd/x", client: a)
        let r = h.read("/d/Outer.bundle/y", client: b)
        #expect(h.arbiter.effectivePath(path("/d/Outer.bundle/Inner.rtfd/x")) == path("/d/Outer.bundle"))
        #expect(h.isGranted(w))
        #expect(h.arbiter.blockers(of: r) == [w])
    }

    @Test func rule2_directoryDeclaredPackageByPresenter() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let a = h.connect("a")
        let b = h.connect("b")
        // Without a declaration /d/Doc is a plain directory: items inside it are separate.
        let w0 = h.write("/d/Doc/b", client: a)
        let r0 = h.read("/d/Doc/a", client: b)
        #expect(h.isGranted(w0) && h.isGranted(r0))
        h.finish(w0)
        h.finish(r0)

        h.present("/d/Doc", client: app, callbacks: [], isPackage: true)
        #expect(h.arbiter.isPackage(path("/d/Doc")))
        let w = h.write("/d/Doc/b", client: a)
        let r = h.read("/d/Doc/a", client: b)
        #expect(h.isGranted(w))
        #expect(h.arbiter.blockers(of: r) == [w])
        h.finish(w)
        #expect(h.grantedPaths(r) == [path("/d/Doc/a")])
    }

    @Test func rule2_packageExtensionsAreConfigurable() {
        let h = ArbiterHarness(configuration: ArbiterConfiguration(packageExtensions: ["doc"], presenterTimeout: nil))
        let a = h.connect("a")
        let b = h.connect("b")
        let w1 = h.write("/d/P.doc/b", client: a)
        let r1 = h.read("/d/P.doc/a", client: b)
        let w2 = h.write("/d/P.rtfd/b", client: a)
        let r2 = h.read("/d/P.rtfd/a", client: b)
        #expect(h.arbiter.blockers(of: r1) == [w1])
        #expect(h.isGranted(w2) && h.isGranted(r2))
    }

    // A package declared while claims inside it are live re-indexes them (`reindexClaims`), so a read of /d/Doc/a
    // arriving after the declaration waits for a write of /d/Doc/b that is still running (rule 2).
    @Test func rule2_packageDeclaredWhileClaimsInsideAreLive() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let a = h.connect("a")
        let b = h.connect("b")
        let w = h.write("/d/Doc/b", client: a)
        #expect(h.isGranted(w))
        h.present("/d/Doc", client: app, callbacks: [], isPackage: true)
        let r = h.read("/d/Doc/a", client: b)
        #expect(!h.isGranted(r))
        #expect(h.arbiter.blockers(of: r) == [w])
    }

    // MARK: Rule 3. Plain directories do not block their contents and vice versa, except subtree writers.

    @Test func rule3_plainDirectoryDoesNotBlockContents() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let wDir = h.write("/d", client: a)
        let wMerging = h.write("/m", .forMerging, client: a)
        let rDir = h.read("/e", client: a)
        let inside = h.write("/d/f", client: b)
        let deep = h.write("/d/sub/g", .forDeleting, client: b)
        let insideM = h.read("/m/f", client: b)
        let insideE = h.write("/e/f", .forReplacing, client: b)
        for claim in [wDir, wMerging, rDir, inside, deep, insideM, insideE] {
            #expect(h.isGranted(claim), "\(claim)")
        }
    }

    @Test func rule3_contentsDoNotBlockPlainDirectory() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let inside = h.write("/d/f", client: a)
        let deleteInside = h.write("/d/g", .forDeleting, client: a)
        let moveInside = h.write("/d/h", .forMoving, client: a)
        let wDir = h.write("/d", client: b)
        let rDir = h.read("/d", client: b)
        let rParent = h.read("/", client: b)
        #expect(h.isGranted(inside) && h.isGranted(deleteInside) && h.isGranted(moveInside))
        #expect(h.isGranted(wDir))
        #expect(h.arbiter.blockers(of: rDir) == [wDir])  // Same item: rule 1, not the contents.
        #expect(h.isGranted(rParent))
    }

    @Test(
        "rule3_subtreeWriterWaitsForGrantedClaimsInside",
        arguments: [WritingOptions.forDeleting, .forMoving, .forReplacing]
    )
    func rule3_subtreeWriterWaitsForGrantedClaimsInside(_ options: WritingOptions) {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let reader = h.read("/d/f", client: a)
        let deepReader = h.read("/d/sub/deeper/g", .withoutChanges, client: a)
        let outside = h.read("/e/f", client: a)
        let dir = h.write("/d", options, client: b)
        #expect(h.arbiter.phase(of: dir) == .waiting)
        #expect(blockers(h, dir) == [reader, deepReader])
        h.finish(reader)
        #expect(h.arbiter.blockers(of: dir) == [deepReader])
        h.finish(deepReader)
        #expect(h.grantedPaths(dir) == [path("/d")])
        #expect(h.isGranted(outside))
    }

    @Test(
        "rule3_subtreeWriterWaitsForQueuedClaimsInside",
        arguments: [WritingOptions.forDeleting, .forMoving, .forReplacing]
    )
    func rule3_subtreeWriterWaitsForQueuedClaimsInside(_ options: WritingOptions) {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let c = h.connect("c")
        let granted = h.write("/d/f", client: a)
        let queued = h.read("/d/f", client: b)
        let dir = h.write("/d", options, client: c)
        #expect(h.arbiter.blockers(of: queued) == [granted])
        #expect(blockers(h, dir) == [granted, queued])
        h.finish(granted)
        // The queued reader arrived first: it goes first, and the directory writer still waits for it.
        #expect(h.isGranted(queued))
        #expect(!h.isGranted(dir))
        #expect(h.arbiter.blockers(of: dir) == [queued])
        h.finish(queued)
        #expect(h.isGranted(dir))
    }

    @Test(
        "rule3_laterClaimsInsideWaitForSubtreeWriter",
        arguments: [WritingOptions.forDeleting, .forMoving, .forReplacing]
    )
    func rule3_laterClaimsInsideWaitForSubtreeWriter(_ options: WritingOptions) {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let c = h.connect("c")
        // Queued: the directory writer waits for a granted write inside; later claims inside wait for it.
        let granted = h.write("/d/f", client: a)
        let dir = h.write("/d", options, client: b)
        let laterRead = h.read("/d/g", client: c)
        let laterWrite = h.write("/d/sub/h", client: c)
        let laterPackage = h.read("/d/P.rtfd/x", client: c)
        let outside = h.write("/dd/g", client: c)
        #expect(h.arbiter.blockers(of: dir) == [granted])
        #expect(h.arbiter.blockers(of: laterRead) == [dir])
        #expect(h.arbiter.blockers(of: laterWrite) == [dir])
        #expect(h.arbiter.blockers(of: laterPackage) == [dir])
        #expect(h.isGranted(outside))
        h.finish(granted)
        #expect(h.isGranted(dir))
        #expect(!h.isGranted(laterRead) && !h.isGranted(laterWrite) && !h.isGranted(laterPackage))
        h.finish(dir)
        #expect(h.isGranted(laterRead) && h.isGranted(laterWrite) && h.isGranted(laterPackage))
    }

    @Test func rule3_claimsOnAnItemWaitForSubtreeWriterOnAnyAncestor() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let top = h.write("/a", .forDeleting, client: a)
        let middle = h.write("/a/b", client: b)
        let deep = h.read("/a/b/c/d", .withoutChanges, client: b)
        let sibling = h.read("/ab/c", client: b)
        #expect(h.isGranted(top))
        #expect(h.arbiter.blockers(of: middle) == [top])
        // The waiting plain write of /a/b covers nothing: only the deleting writer two levels up blocks.
        #expect(h.arbiter.blockers(of: deep) == [top])
        #expect(h.isGranted(sibling))
        h.finish(top)
        #expect(h.isGranted(middle) && h.isGranted(deep))
    }

    @Test func rule3_subtreeWriterOnAFileDoesNotCoverItsParentOrSiblings() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let delete = h.write("/d/a", .forDeleting, client: a)
        let parent = h.read("/d", client: b)
        let sibling = h.write("/d/b", client: b)
        let namePrefix = h.read("/d/ab", client: b)
        #expect(h.isGranted(delete))
        #expect(h.isGranted(parent) && h.isGranted(sibling) && h.isGranted(namePrefix))
    }

    // MARK: Rule 4. Same coordinator, same presenter, same purpose: never blocking each other.

    @Test func rule4_sameCoordinatorNeverBlocks() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let coordinator = h.coordinator()
        // A coordinator has one purpose, so the purpose clause would exempt these claims too; distinct purposes
        // here test the coordinator clause on its own.
        let w1 = h.write("/d/f", client: a, coordinator: coordinator, purpose: PurposeID("p1"))
        let w2 = h.write("/d/f", .forMerging, client: a, coordinator: coordinator, purpose: PurposeID("p2"))
        let r = h.read("/d/f", client: a, coordinator: coordinator, purpose: PurposeID("p3"))
        let subtree = h.write("/d", .forDeleting, client: a, coordinator: coordinator, purpose: PurposeID("p4"))
        #expect(h.isGranted(w1) && h.isGranted(w2) && h.isGranted(r) && h.isGranted(subtree))
        // Another coordinator of the same client is not exempt.
        let other = h.read("/d/f", client: a)
        #expect(blockers(h, other) == [w1, w2, subtree])
    }

    @Test func rule4_sameFilePresenterNeverBlocks() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let p = h.present("/d/f", client: app)
        let w1 = h.write("/d/f", client: app, filePresenter: p)
        let w2 = h.write("/d/f", .forDeleting, client: app, filePresenter: p)
        let r = h.read("/d/f", client: app, filePresenter: p)
        #expect(h.isGranted(w1) && h.isGranted(w2) && h.isGranted(r))
        #expect(h.messages(to: p).isEmpty)
        let other = h.read("/d/f", client: app)
        #expect(blockers(h, other) == [w1, w2])
    }

    @Test func rule4_samePurposeAcrossClientsNeverBlocks() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let c = h.connect("c")
        let purpose = PurposeID("com.example.sync")
        let w1 = h.write("/d/f", client: a, purpose: purpose)
        let w2 = h.write("/d/f", client: b, purpose: purpose)
        let deleteDir = h.write("/d", .forDeleting, client: c, purpose: purpose)
        #expect(h.isGranted(w1) && h.isGranted(w2) && h.isGranted(deleteDir))
        // A claim with another purpose waits for all of them: the exemption is not for third parties.
        let other = h.read("/d/f", client: c, purpose: PurposeID("com.example.editor"))
        #expect(blockers(h, other) == [w1, w2, deleteDir])
        h.finish(w1)
        h.finish(w2)
        #expect(!h.isGranted(other))
        h.finish(deleteDir)
        #expect(h.isGranted(other))
    }

    @Test func rule4_nestedReadDoesNotQueueBehindAClaimThatWaitsForItsCoordinator() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let coordinator = h.coordinator()
        let outer = h.write("/d/f", client: a, coordinator: coordinator)
        let waiting = h.write("/d/f", client: b)
        #expect(h.arbiter.blockers(of: waiting) == [outer])
        // Inside the outer accessor, the same coordinator reads and writes again: neither waits (§5).
        let nestedRead = h.read("/d/f", client: a, coordinator: coordinator)
        let nestedWrite = h.write("/d/f", .forMerging, client: a, coordinator: coordinator)
        #expect(h.isGranted(nestedRead) && h.isGranted(nestedWrite))
        #expect(!h.isGranted(waiting))
        h.finish(nestedRead)
        h.finish(nestedWrite)
        #expect(!h.isGranted(waiting))
        h.finish(outer)
        #expect(h.isGranted(waiting))
    }

    // MARK: Rule 5. A presenter's own write while it answers a waiting claim is granted ahead of that claim.

    @Test func rule5_presenterWriteWhileAnsweringSaveIsGrantedAhead() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let p = h.present("/d/f", client: app)
        let read = h.read("/d/f", client: tool)
        let relinquish = try #require(soleRequest(h, of: p))
        #expect(relinquish.kind == .relinquishToReader)
        h.reply(relinquish.id, .relinquished(reacquirer: true))
        let save = try #require(soleRequest(h, of: p))
        #expect(save.kind == .savePresentedItemChanges)
        #expect(h.arbiter.phase(of: read) == .preparing)

        // Answering the save, the presenter writes with a coordinator created with itself.
        let write = h.write("/d/f", client: app, filePresenter: p)
        #expect(h.grantedPaths(write) == [path("/d/f")])
        #expect(!h.isGranted(read))
        h.finish(write)
        #expect(!h.isGranted(read))  // Still waiting for the save's reply.
        h.reply(save.id, .succeeded)
        #expect(h.isGranted(read))
        #expect(h.grantIndex(write)! < h.grantIndex(read)!)
        h.finish(read)
        // The presenter never heard of its own write.
        #expect(
            h.messages(to: p) == [
                .relinquishToReader, .savePresentedItemChanges, .reacquire(relinquish: relinquish.id),
            ]
        )
    }

    @Test func rule5_waitingClaimIsGrantedOnlyAfterThePresenterWriteFinishes() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let p = h.present("/d/f", client: app)
        let read = h.read("/d/f", client: tool)
        h.reply(try #require(soleRequest(h, of: p)).id, .relinquished(reacquirer: false))
        let save = try #require(soleRequest(h, of: p))
        let write = h.write("/d/f", .forMerging, client: app, filePresenter: p)
        #expect(h.isGranted(write))
        // The presenter replies before its write ends: the reader must still wait for the write.
        h.reply(save.id, .succeeded)
        #expect(!h.isGranted(read))
        #expect(h.arbiter.blockers(of: read) == [write])
        h.finish(write)
        #expect(h.isGranted(read))
    }

    @Test func rule5_presenterWriteThatAnswersNothingWaitsItsTurn() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let p = h.present("/d/f", client: app)
        let w1 = h.write("/d/f", client: tool)
        h.reply(try #require(soleRequest(h, of: p)).id, .relinquished(reacquirer: false))
        #expect(h.isGranted(w1))
        // The presenter owes nothing to anyone: its write waits for the granted claim like any other.
        let own = h.write("/d/f", client: app, filePresenter: p)
        #expect(h.arbiter.blockers(of: own) == [w1])
        #expect(h.arbiter.phase(of: own) == .waiting)
        h.finish(w1)
        #expect(h.isGranted(own))
        #expect(h.messages(to: p) == [.relinquishToWriter, .presentedItemDidChange])
    }

    // Rule 5 lets a presenter's write jump only when it is made while the presenter answers a request. Here the
    // write was queued (behind w2) before the presenter was asked anything; when w2 starts and asks the presenter to
    // relinquish, the old queued write must not count as "answering" (`madeWhileAnswering`) and stays behind w2.
    @Test func rule5_presenterWriteQueuedBeforeTheRequestDoesNotJump() throws {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let other = h.connect("other")
        let p = h.present("/d/f", client: app)
        let w1 = h.write("/d/f", client: tool)
        h.reply(try #require(soleRequest(h, of: p)).id, .relinquished(reacquirer: false))
        #expect(h.isGranted(w1))
        let w2 = h.write("/d/f", client: other)
        let own = h.write("/d/f", client: app, filePresenter: p)
        #expect(blockers(h, own) == [w1, w2])
        h.finish(w1)
        // w2 starts and asks the presenter to relinquish; the presenter's earlier write must keep its place.
        #expect(h.arbiter.phase(of: w2) == .preparing)
        #expect(!h.isGranted(own))
        h.reply(try #require(soleRequest(h, of: p)).id, .relinquished(reacquirer: false))
        #expect(h.isGranted(w2))
        #expect(!h.isGranted(own))
        h.finish(w2)
        #expect(h.isGranted(own))
    }

    // MARK: Rule 6. FIFO among conflicting claims; readers do not starve writers; multi-item claims at once.

    @Test func rule6_conflictingClaimsAreGrantedInArrivalOrder() {
        let h = ArbiterHarness()
        let clients = (0..<4).map { h.connect("c\($0)") }
        let w1 = h.write("/d/f", client: clients[0])
        let r2 = h.read("/d/f", client: clients[1])
        let w3 = h.write("/d/f", client: clients[2])
        let r4 = h.read("/d/f", client: clients[3])
        #expect(h.isGranted(w1))
        #expect(h.arbiter.blockers(of: r2) == [w1])
        #expect(blockers(h, w3) == [w1, r2])
        #expect(blockers(h, r4) == [w1, w3])
        h.finish(w1)
        #expect(h.isGranted(r2))
        #expect(!h.isGranted(w3) && !h.isGranted(r4))
        h.finish(r2)
        #expect(h.isGranted(w3))
        #expect(!h.isGranted(r4))
        h.finish(w3)
        #expect(h.isGranted(r4))
        let order = [w1, r2, w3, r4].map { h.grantIndex($0)! }
        #expect(order == order.sorted())
    }

    @Test func rule6_streamOfReadersDoesNotStarveAWaitingWriter() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let r1 = h.read("/d/f", client: a)
        let w = h.write("/d/f", client: b)
        let r2 = h.read("/d/f", client: a)
        let r3 = h.read("/d/f", client: a)
        #expect(h.isGranted(r1))
        #expect(h.arbiter.blockers(of: r2) == [w])
        #expect(h.arbiter.blockers(of: r3) == [w])
        h.finish(r1)
        #expect(h.isGranted(w))
        #expect(!h.isGranted(r2) && !h.isGranted(r3))
        h.finish(w)
        #expect(h.isGranted(r2) && h.isGranted(r3))
    }

    @Test func rule6_multiItemClaimIsGrantedAllAtOnce() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let a = h.connect("a")
        let b = h.connect("b")
        let c = h.connect("c")
        let presenterA = h.present("/a", client: app)
        let holder = h.read("/b", client: b)
        let multi = h.claim([ArbiterHarness.write("/a"), ArbiterHarness.write("/b")], client: a)
        let later = h.write("/a", client: c)
        // /a is free, but the claim takes nothing until it can take everything; nobody is asked anything yet.
        #expect(h.arbiter.phase(of: multi) == .waiting)
        #expect(h.arbiter.blockers(of: multi) == [holder])
        #expect(h.messages(to: presenterA).isEmpty)
        // A later claim on the free item does not overtake it either.
        #expect(h.arbiter.blockers(of: later) == [multi])
        h.finish(holder)
        #expect(h.arbiter.phase(of: multi) == .preparing)
        #expect(h.messages(to: presenterA) == [.relinquishToWriter])
        h.answerAll()
        #expect(h.grantedPaths(multi) == [path("/a"), path("/b")])
        #expect(!h.isGranted(later))
        h.finish(multi)
        h.answerAll()
        #expect(h.isGranted(later))
    }

    @Test func rule6_opposingTwoItemClaimsBothComplete() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        let a = h.connect("a")
        let b = h.connect("b")
        let px = h.present("/x", client: app)
        let py = h.present("/y", client: app)
        let first = h.claim([ArbiterHarness.read("/x"), ArbiterHarness.write("/y")], client: a)
        let second = h.claim([ArbiterHarness.read("/y"), ArbiterHarness.write("/x")], client: b)
        #expect(h.arbiter.phase(of: first) == .preparing)
        #expect(h.arbiter.blockers(of: second) == [first])
        h.answerAll()
        #expect(h.grantedPaths(first) == [path("/x"), path("/y")])
        #expect(!h.isGranted(second))
        h.finish(first)
        h.answerAll()
        #expect(h.grantedPaths(second) == [path("/y"), path("/x")])
        h.finish(second)
        #expect(h.arbiter.snapshot().claims.isEmpty)
        #expect(h.openRequests().isEmpty)
        #expect(
            h.messages(to: px).filter(\.needsReply) == [
                .relinquishToReader, .savePresentedItemChanges, .relinquishToWriter,
            ]
        )
        #expect(
            h.messages(to: py).filter(\.needsReply) == [
                .relinquishToWriter, .relinquishToReader, .savePresentedItemChanges,
            ]
        )
    }

    @Test func rule6_opposingTwoItemWritesBothComplete() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let first = h.claim([ArbiterHarness.write("/x"), ArbiterHarness.write("/y")], client: a)
        let second = h.claim([ArbiterHarness.write("/y"), ArbiterHarness.write("/x")], client: b)
        let third = h.claim([ArbiterHarness.write("/x", .forMoving), ArbiterHarness.write("/y")], client: a)
        #expect(h.isGranted(first))
        #expect(h.arbiter.blockers(of: second) == [first])
        #expect(blockers(h, third) == [first, second])
        h.finish(first)
        #expect(h.grantedPaths(second) == [path("/y"), path("/x")])
        h.finish(second)
        #expect(h.grantedPaths(third) == [path("/x"), path("/y")])
    }

    // §5's nested access passes only waiting claims that wait, directly or transitively, for the coordinator's own
    // granted claim (`waitsTransitively`); one that waits only for a third party cannot deadlock with it. Here the
    // outer claim is on /x; the read of /y must stay behind the writer of /y that arrived first and waits only for
    // another client's reader (rule 6).
    @Test func rule6_nestedClaimDoesNotOvertakeAWriterWaitingForSomeoneElse() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let c = h.connect("c")
        let coordinator = h.coordinator()
        let outer = h.write("/x", client: a, coordinator: coordinator)
        let reader = h.read("/y", client: b)
        let writer = h.write("/y", client: c)
        #expect(h.isGranted(outer) && h.isGranted(reader))
        #expect(h.arbiter.blockers(of: writer) == [reader])
        let nested = h.read("/y", client: a, coordinator: coordinator)
        #expect(!h.isGranted(nested))
        #expect(h.arbiter.blockers(of: nested) == [writer])
        h.finish(reader)
        #expect(h.isGranted(writer))
        h.finish(writer)
        #expect(h.isGranted(nested))
    }

    // MARK: Rule 7. Waiting uses the item's current location, except under .forReplacing.

    @Test func rule7_waitingClaimFollowsAReportedMove() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let mover = h.claim(
            [ArbiterHarness.write("/d/a", .forMoving), ArbiterHarness.write("/d/b", .forReplacing)],
            client: a
        )
        let reader = h.read("/d/a", client: b)
        let writer = h.write("/d/a", .forMerging, client: b)
        let unrelated = h.read("/d/ab", client: b)
        #expect(h.isGranted(mover))
        #expect(h.isGranted(unrelated))
        h.send(.itemMoved(mover, from: path("/d/a"), to: path("/d/b")))
        let claims = h.arbiter.snapshot().claims
        #expect(claims.first { $0.request.id == reader }?.paths == [path("/d/b")])
        #expect(claims.first { $0.request.id == writer }?.paths == [path("/d/b")])
        #expect(claims.first { $0.request.id == unrelated }?.paths == [path("/d/ab")])
        // Still blocked: the mover holds the new location too.
        #expect(h.arbiter.blockers(of: reader) == [mover])
        h.finish(mover)
        #expect(h.grantedPaths(reader) == [path("/d/b")])
        h.finish(reader)
        #expect(h.grantedPaths(writer) == [path("/d/b")])
    }

    // A move may be reported from a single-item write (`item(at:didMoveTo:)` is allowed inside
    // `coordinate(writingItemAt:)`). Waiting claims follow the item to /d/b, and the mover holds /d/b as well from
    // then on, so the reader that waited for the mover still waits until the mover's accessor returns, and so does a
    // new writer of /d/b (rule 1 at the item's new location).
    @Test func rule7_claimThatFollowsAMoveStillWaitsForTheMover() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let mover = h.write("/d/a", .forMoving, client: a)
        let reader = h.read("/d/a", client: b)
        #expect(h.arbiter.blockers(of: reader) == [mover])
        h.send(.itemMoved(mover, from: path("/d/a"), to: path("/d/b")))
        #expect(!h.isGranted(reader))
        #expect(h.arbiter.blockers(of: reader) == [mover])
        let newcomer = h.write("/d/b", client: b)
        #expect(!h.isGranted(newcomer))
        h.finish(mover)
        #expect(h.grantedPaths(reader) == [path("/d/b")])
    }

    @Test func rule7_forReplacingKeepsTheOldLocation() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let mover = h.claim(
            [ArbiterHarness.write("/d/a", .forMoving), ArbiterHarness.write("/d/b", .forReplacing)],
            client: a
        )
        let replacer = h.write("/d/a", .forReplacing, client: b)
        let follower = h.write("/d/a", client: b)
        h.send(.itemMoved(mover, from: path("/d/a"), to: path("/d/b")))
        let claims = h.arbiter.snapshot().claims
        #expect(claims.first { $0.request.id == replacer }?.paths == [path("/d/a")])
        #expect(claims.first { $0.request.id == follower }?.paths == [path("/d/b")])
        h.finish(mover)
        #expect(h.grantedPaths(replacer) == [path("/d/a")])
        #expect(h.grantedPaths(follower) == [path("/d/b")])  // Different items now: both run.
    }

    @Test func rule7_claimsInsideAMovedDirectoryFollowIt() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let mover = h.claim(
            [ArbiterHarness.write("/d/a", .forMoving), ArbiterHarness.write("/d/b", .forReplacing)],
            client: a
        )
        let deep = h.read("/d/a/x/y", client: b)
        let multi = h.claim([ArbiterHarness.read("/d/a/x"), ArbiterHarness.write("/e/z")], client: b)
        #expect(h.arbiter.blockers(of: deep) == [mover])
        h.send(.itemMoved(mover, from: path("/d/a"), to: path("/d/b")))
        h.finish(mover)
        #expect(h.grantedPaths(deep) == [path("/d/b/x/y")])
        #expect(h.grantedPaths(multi) == [path("/d/b/x"), path("/e/z")])
    }

    @Test func rule7_waitingClaimFollowsTheMoveOfItsPackage() {
        let h = ArbiterHarness()
        let a = h.connect("a")
        let b = h.connect("b")
        let mover = h.claim(
            [ArbiterHarness.write("/d/P.rtfd", .forMoving), ArbiterHarness.write("/e/Q.rtfd", .forReplacing)],
            client: a
        )
        let inside = h.read("/d/P.rtfd/TXT.rtf", client: b)
        h.send(.itemMoved(mover, from: path("/d/P.rtfd"), to: path("/e/Q.rtfd")))
        let claim = h.arbiter.snapshot().claims.first { $0.request.id == inside }
        #expect(claim?.paths == [path("/e/Q.rtfd/TXT.rtf")])
        #expect(claim?.effectivePaths == [path("/e/Q.rtfd")])
        #expect(h.arbiter.blockers(of: inside) == [mover])
        h.finish(mover)
        #expect(h.grantedPaths(inside) == [path("/e/Q.rtfd/TXT.rtf")])
    }
}
