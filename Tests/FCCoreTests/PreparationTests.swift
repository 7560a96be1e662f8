import FCCore
import FCTestSupport
import Testing

/// `prepare(forReadingItemsAt:…)`: presenters are asked as for any claim, but the claim itself writes nothing.
@Test func aPreparationAsksPresentersButSendsNoDidChange() {
    let h = ArbiterHarness()
    let app = h.connect("app")
    let finder = h.connect("finder")
    let document = h.present("/d/doc.txt", client: app)
    let folder = h.present("/d", client: app)
    let prepare = h.claim(
        [ArbiterHarness.read("/d/doc.txt"), ArbiterHarness.write("/d/doc.txt")],
        client: finder
    )
    h.answerAll()
    #expect(h.isGranted(prepare))
    h.finish(prepare)
    let preparation = ClaimRequest(
        id: ClaimID(1000),
        client: finder,
        coordinator: h.coordinator(),
        purpose: PurposeID("finder-batch"),
        items: [ArbiterHarness.read("/d/doc.txt"), ArbiterHarness.write("/d/doc.txt")],
        isPreparation: true
    )
    h.clearEffects()
    h.send(.claimRequested(preparation))
    h.answerAll()
    #expect(h.isGranted(ClaimID(1000)))
    h.finish(ClaimID(1000))
    // Asked to relinquish (to a writer) and save, then given back the item: no did change for the preparation.
    #expect(h.messages(to: document).map(\.callback) == [.relinquishToWriter, .savePresentedItemChanges, []])
    #expect(h.messages(to: folder).isEmpty)
}

/// The batch block of a granted preparation returned (issue 30): the claim stays granted and holds back conflicting
/// claims until it finishes (its completion handler); the snapshot says since when it waits. Anything but a granted
/// preparation ignores the event.
@Test func aPreparationWhoseBatchReturnedStaysGrantedUntilItFinishes() {
    let h = ArbiterHarness()
    let finder = h.connect("finder")
    let app = h.connect("app")
    h.now = .seconds(5)
    let plain = h.claim([ArbiterHarness.write("/d/other.txt")], client: app)
    h.send(.preparationReturned(plain))
    let preparation = ClaimRequest(
        id: ClaimID(1000),
        client: finder,
        coordinator: h.coordinator(),
        purpose: PurposeID("finder-batch"),
        items: [ArbiterHarness.write("/d/doc.txt")],
        isPreparation: true
    )
    h.send(.claimRequested(preparation))
    #expect(h.isGranted(ClaimID(1000)))
    h.now = .seconds(7)
    h.send(.preparationReturned(ClaimID(1000)))
    h.now = .seconds(9)
    h.send(.preparationReturned(ClaimID(1000)))  // A second one keeps the first time.
    let claims = h.arbiter.snapshot().claims
    #expect(claims.first { $0.request.id == ClaimID(1000) }?.batchReturnedAt == .seconds(7))
    #expect(claims.first { $0.request.id == plain }?.batchReturnedAt == nil)
    let writer = h.claim([ArbiterHarness.write("/d/doc.txt")], client: app)
    #expect(!h.isGranted(writer))
    h.finish(ClaimID(1000))
    #expect(h.isGranted(writer))
}
