import FCCore
import FCTestSupport
import Testing

@Test func writeWithPresenterSequence() {
    let h = ArbiterHarness()
    let a = h.connect("editor")
    let b = h.connect("sync")
    let p = h.present("/d/f.txt", client: a)
    let dir = h.present("/d", client: a)
    let w = h.write("/d/f.txt", client: b)
    #expect(!h.isGranted(w))
    let r = h.read("/d/f.txt", client: b)
    #expect(h.arbiter.phase(of: r) == .waiting)
    h.answerAll()
    #expect(h.isGranted(w))
    #expect(!h.isGranted(r))
    h.finish(w)
    #expect(h.messages(to: p).count == 3)
    print(h.messages(to: p), h.messages(to: dir))
    h.answerAll()
    #expect(h.isGranted(r))
    h.finish(r)
    print(h.messages(to: p))
    h.send(.clientDisconnected(a))
    h.send(.clientDisconnected(b))
    #expect(h.arbiter.snapshot().nodeCount == 1)
}
