import FCCore
import FCTestSupport
import Testing

/// The whole life of one write with a presenter and a waiting reader, message by message.
@Test func writeThenReadWithOnePresenter() {
    let h = ArbiterHarness()
    let a = h.connect("editor")
    let b = h.connect("sync")
    let p = h.present("/d/f.txt", client: a)
    let dir = h.present("/d", client: a)
    let w = h.write("/d/f.txt", client: b)
    #expect(!h.isGranted(w))
    let r = h.read("/d/f.txt", client: b)
    #expect(h.arbiter.phase(of: r) == .waiting)
    #expect(h.arbiter.blockers(of: r) == [w])
    h.answerAll()
    #expect(h.isGranted(w))
    #expect(!h.isGranted(r))
    h.finish(w)
    h.answerAll()
    #expect(h.isGranted(r))
    h.finish(r)
    #expect(
        h.messages(to: p) == [
            .relinquishToWriter, .presentedItemDidChange, .reacquire(relinquish: RequestID(1)),
            .relinquishToReader, .savePresentedItemChanges, .reacquire(relinquish: RequestID(2)),
        ]
    )
    #expect(h.messages(to: dir) == [.presentedSubitemDidChange(at: ArbiterHarness.path("/d/f.txt"))])
    h.send(.clientDisconnected(a))
    h.send(.clientDisconnected(b))
    // Nothing is held any more: every node but the root is an idle one kept for reuse (issue 12), within bounds.
    let end = h.arbiter.snapshot()
    #expect(end.nodeCount == 1 + end.idleNodeCount)
    #expect(end.idleLeafCount <= ArbiterConfiguration.defaultIdleNodeRetention)
}
