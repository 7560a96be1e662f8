import FCCore
import FCTestSupport
import Testing

/// When the watcher read an event's states (`readAt`) decides between a write's echo and a later change where the
/// states cannot: a state read before a write's accessor returned is that write's, or older.
@Suite struct EchoReadTimeTests {
    /// `app` presents `/d/f`; `tool` writes it, and the write ends at `endedAt`, leaving `written`.
    private func presentedFileWritten(
        endedAt: Int64,
        written: ItemStamp
    ) -> (h: ArbiterHarness, tool: ClientID, file: PresenterID) {
        let h = watchingHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let file = h.present("/d/f", client: app)
        finish(h.write("/d/f", client: tool), in: h, endedAt: endedAt, written: written)
        return (h, tool, file)
    }

    private func finish(_ write: ClaimID, in h: ArbiterHarness, endedAt: Int64, written: ItemStamp) {
        h.answerAll()
        h.send(
            .claimFinished(write, created: [], outcome: WriteOutcome(endedAt: endedAt, items: [path("/d/f"): written]))
        )
    }

    /// The file's close, its state `observed` read at `readAt`.
    private func closed(_ h: ArbiterHarness, observed: ItemStamp, readAt: Int64) {
        h.send(
            .fileSystemChanged([.changed(path("/d/f"))], observed: [path("/d/f"): observed], readAt: readAt)
        )
    }

    private func didChanges(_ h: ArbiterHarness, _ presenter: PresenterID) -> Int {
        h.messages(to: presenter).filter { $0 == .presentedItemDidChange }.count
    }

    /// Two writes one after the other, ending in one tick of the kernel's clock (the ConcurrencyTests' eight threads
    /// under load): the first write's event is read while the second runs, in a state the second then changed. It is
    /// held by the second, and when that ends it was reported once more, as a change made after it (same change
    /// time, another size).
    @Test func theFirstWritesEventReadWhileTheSecondRanIsAnEcho() {
        let (h, tool, file) = presentedFileWritten(endedAt: 1_001, written: stamp(size: 10, at: 1_000))
        let second = h.write("/d/f", client: tool)
        h.answerAll()
        #expect(h.isGranted(second))
        // The first write's close, read at 1_002 while the second runs: the file as the first left it.
        closed(h, observed: stamp(size: 10, at: 1_000), readAt: 1_002)
        // The second write ends at 1_003; its change has the same (coarse) change time and another size.
        finish(second, in: h, endedAt: 1_003, written: stamp(size: 20, at: 1_000))
        #expect(didChanges(h, file) == 2, "one per write")
        #expect(h.arbiter.watchingSnapshot().statistics.changesAfterWrites == 0)
    }

    /// The same states read after the write's accessor returned: a change made after it (the tie rule of issue 37
    /// stands when the read time cannot decide).
    @Test func aStateReadAfterTheAccessorReturnedIsStillJudgedByItself() {
        let (h, _, file) = presentedFileWritten(endedAt: 1_001, written: stamp(size: 10, at: 1_000))
        closed(h, observed: stamp(size: 11, at: 1_000), readAt: 1_005)
        #expect(didChanges(h, file) == 2, "the write's, and the append's")
    }
}
