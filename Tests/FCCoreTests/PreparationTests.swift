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
