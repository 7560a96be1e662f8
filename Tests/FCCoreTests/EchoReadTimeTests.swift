import FCCore
import FCTestSupport
import Testing

/// When the watcher read an event's states (`readAt`) decides between a write's echo and a later change where the
/// states cannot: a state read before a write's accessor returned is that write's, or older.
@Suite struct EchoReadTimeTests {
    private func harness() -> ArbiterHarness {
        var configuration = ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: nil)
        configuration.watchesFileSystem = true
        configuration.coalescingWindow = .milliseconds(50)
        configuration.echoRetention = .milliseconds(200)
        return ArbiterHarness(configuration: configuration)
    }

    private func stamp(size: Int64, at time: Int64) -> ItemStamp { .present(inode: 7, size: size, changeTime: time) }

    private func didChanges(_ h: ArbiterHarness, _ presenter: PresenterID) -> Int {
        h.messages(to: presenter).filter { $0 == .presentedItemDidChange }.count
    }

    /// Two writes one after the other, ending in one tick of the kernel's clock (the ConcurrencyTests' eight threads
    /// under load): the first write's event is read while the second runs, in a state the second then changed. It is
    /// held by the second, and when that ends it was reported once more, as a change made after it (same change
    /// time, another size).
    @Test func theFirstWritesEventReadWhileTheSecondRanIsAnEcho() {
        let h = harness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let file = h.present("/d/f", client: app)
        let first = h.write("/d/f", client: tool)
        h.answerAll()
        h.send(
            .claimFinished(
                first,
                created: [],
                outcome: WriteOutcome(endedAt: 1_001, items: [path("/d/f"): stamp(size: 10, at: 1_000)])
            )
        )
        let second = h.write("/d/f", client: tool)
        h.answerAll()
        #expect(h.isGranted(second))
        // The first write's close, read at 1_002 while the second runs: the file as the first left it.
        h.send(
            .fileSystemChanged(
                [.closedAfterWriting(path("/d/f"))],
                observed: [path("/d/f"): stamp(size: 10, at: 1_000)],
                readAt: 1_002
            )
        )
        // The second write ends at 1_003; its change has the same (coarse) change time and another size.
        h.send(
            .claimFinished(
                second,
                created: [],
                outcome: WriteOutcome(endedAt: 1_003, items: [path("/d/f"): stamp(size: 20, at: 1_000)])
            )
        )
        #expect(didChanges(h, file) == 2, "one per write")
        #expect(h.arbiter.watchingSnapshot().statistics.changesAfterWrites == 0)
    }

    /// The same states read after the second write's accessor returned: a change made after it (the tie rule of
    /// issue 37 stands when the read time cannot decide).
    @Test func aStateReadAfterTheAccessorReturnedIsStillJudgedByItself() {
        let h = harness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let file = h.present("/d/f", client: app)
        let write = h.write("/d/f", client: tool)
        h.answerAll()
        h.send(
            .claimFinished(
                write,
                created: [],
                outcome: WriteOutcome(endedAt: 1_001, items: [path("/d/f"): stamp(size: 10, at: 1_000)])
            )
        )
        h.send(
            .fileSystemChanged(
                [.closedAfterWriting(path("/d/f"))],
                observed: [path("/d/f"): stamp(size: 11, at: 1_000)],
                readAt: 1_005
            )
        )
        #expect(didChanges(h, file) == 2, "the write's, and the append's")
    }
}
