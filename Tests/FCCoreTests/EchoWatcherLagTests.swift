import FCCore
import FCTestSupport
import Testing

/// A write's echo read by a watcher that lags behind (its thread busy adding a query's watches, a loaded machine):
/// the write's record waits until the watcher has read every event queued before the write ended (``ArbiterEvent/
/// fileSystemChanged(_:observed:readAt:drainedAt:)``), within a bound. Without it the echo came after the record's
/// retention and was reported as a change nobody coordinated (ConcurrencyTests in CI: 260 didChange for 257 writes).
@Suite struct EchoWatcherLagTests {
    /// `app` presents `/d/f` (to `h`, by default an arbiter whose watcher says how far it has read); the watcher has
    /// read everything up to `drainedAt`, if it said; `tool` writes the file, ending at 1_001 and leaving `written`.
    private func presentedFileWritten(
        in h: ArbiterHarness? = nil,
        drainedAt: Int64? = 500
    ) -> (h: ArbiterHarness, file: PresenterID) {
        let h = h ?? laggingWatcherHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let file = h.present("/d/f", client: app)
        if let drainedAt { h.send(.fileSystemChanged([], drainedAt: drainedAt)) }
        let write = h.write("/d/f", client: tool)
        h.answerAll()
        h.send(
            .claimFinished(write, created: [], outcome: WriteOutcome(endedAt: 1_001, items: [path("/d/f"): written]))
        )
        return (h, file)
    }

    private let written = stamp(size: 10, at: 1_000)

    /// A watching arbiter whose host's watcher says how far it has read (the daemon's).
    private func laggingWatcherHarness() -> ArbiterHarness {
        var configuration = ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: nil)
        configuration.watchesFileSystem = true
        configuration.watcherSaysHowFarItRead = true
        configuration.echoRetention = configuration.coalescingWindow * 4
        return ArbiterHarness(configuration: configuration)
    }

    private func windowsElapse(_ h: ArbiterHarness, _ count: Int) {
        for _ in 0..<count { h.send(.timerFired(.fileSystemWindow)) }
    }

    private func didChanges(_ h: ArbiterHarness, _ presenter: PresenterID) -> Int {
        h.messages(to: presenter).filter { $0 == .presentedItemDidChange }.count
    }

    private func drainRequested(_ h: ArbiterHarness) -> Bool {
        h.lastEffects.contains(.drainWatcher)
    }

    @Test func aWritesEchoReadLongAfterItsRetentionIsStillAnEchoWhileTheWatcherLags() {
        let (h, file) = presentedFileWritten()
        // Twenty windows (a second at 50 ms): far past the retention of 250 ms.
        windowsElapse(h, 20)
        #expect(h.arbiter.watchingSnapshot().echoes == 1, "kept: the watcher has not read past the write's end")
        h.send(
            .fileSystemChanged(
                [.changed(path("/d/f"))],
                observed: [path("/d/f"): written],
                readAt: 5_000,
                drainedAt: 4_990
            )
        )
        #expect(didChanges(h, file) == 1, "the write's own, and no second one for its echo")
        #expect(h.arbiter.watchingSnapshot().statistics.changesAfterWrites == 0)
        // Read past the write's end: the record goes at the next window.
        windowsElapse(h, 1)
        #expect(h.arbiter.watchingSnapshot().echoes == 0)
    }

    @Test func aRecordPastItsRetentionAsksTheWatcherToCatchUpOnceAndGoesWhenItHas() {
        let (h, _) = presentedFileWritten()
        var asked = 0
        for _ in 0..<12 {
            h.send(.timerFired(.fileSystemWindow))
            if drainRequested(h) { asked += 1 }
        }
        #expect(asked == 1, "asked once, not at every window")
        // The watcher's empty report, read after the write ended.
        h.send(.fileSystemChanged([], drainedAt: 1_002))
        windowsElapse(h, 1)
        #expect(h.arbiter.watchingSnapshot().echoes == 0)
        #expect(h.arbiter.watchingSnapshot().openWindows == 0)
        #expect(!h.lastEffects.contains(.startTimer(.fileSystemWindow, after: .milliseconds(50))), "the timer stops")
    }

    @Test func aChangeMadeAfterTheWriteIsReportedWhileTheRecordWaits() {
        let (h, file) = presentedFileWritten()
        windowsElapse(h, 20)
        h.send(
            .fileSystemChanged(
                [.changed(path("/d/f"))],
                observed: [path("/d/f"): stamp(size: 11, at: 3_000)],
                readAt: 5_000,
                drainedAt: 4_990
            )
        )
        #expect(didChanges(h, file) == 2, "the write's, and the later change's")
    }

    @Test func aWatcherThatNeverCatchesUpKeepsARecordBoundedTime() {
        let (h, _) = presentedFileWritten()
        // 30 s of windows at 50 ms, and more.
        windowsElapse(h, 620)
        #expect(h.arbiter.watchingSnapshot().echoes == 0)
    }

    @Test func aWriteEndedBeforeTheWatchersFirstReportWaitsForIt() {
        let (h, file) = presentedFileWritten(drainedAt: nil)
        windowsElapse(h, 20)
        h.send(
            .fileSystemChanged([.changed(path("/d/f"))], observed: [path("/d/f"): written], readAt: 5_000)
        )
        #expect(didChanges(h, file) == 1)
    }

    @Test func withoutAWatcherThatSaysHowFarItReadRecordsGoAfterTheRetentionAsBefore() {
        let (h, _) = presentedFileWritten(in: watchingHarness(), drainedAt: nil)
        windowsElapse(h, 8)
        #expect(h.arbiter.watchingSnapshot().echoes == 0)
    }
}
