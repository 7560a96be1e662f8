import FCCore
import NIOCore
import NIOEmbedded
import Testing

@testable import FCDaemon

/// ``ArbiterTimers``' rule, on an `EmbeddedEventLoop` whose clock the test moves to the real clock's time (deadlines
/// are taken from `NIODeadline.now()`): timers fire in deadline order, each once; a cancelled one does not fire;
/// one not yet due waits for its deadline.
@Suite struct ArbiterTimersTests {
    /// Timers on `loop` that record what fires, and how many times the NIO timer fired.
    private final class Recorder {
        let timers: ArbiterTimers
        var fired: [TimerID] = []
        var firings = 0

        init(loop: EmbeddedEventLoop) {
            timers = ArbiterTimers(loop: loop)
            timers.willFire = { [unowned self] in self.firings += 1 }
            timers.fire = { [unowned self] in self.fired.append($0) }
        }
    }

    @Test func timersFireInDeadlineOrderAndACancelledOneDoesNot() {
        let loop = EmbeddedEventLoop()
        let recorder = Recorder(loop: loop)
        let start = NIODeadline.now()
        recorder.timers.start(.presenterReply(RequestID(1)), after: .seconds(3))
        recorder.timers.start(.deadlockCheck(ClaimID(1)), after: .seconds(1))
        recorder.timers.start(.claimDeadline(ClaimID(2)), after: .seconds(2))
        recorder.timers.start(.deadlockCheck(ClaimID(3)), after: .seconds(2))
        recorder.timers.cancel(.claimDeadline(ClaimID(2)))
        recorder.timers.armUnlessFiring()
        #expect(recorder.timers.count == 3)

        loop.advanceTime(to: start + .milliseconds(1500))
        #expect(recorder.fired == [.deadlockCheck(ClaimID(1))])
        loop.advanceTime(to: start + .seconds(10))
        #expect(
            recorder.fired == [
                .deadlockCheck(ClaimID(1)), .deadlockCheck(ClaimID(3)), .presenterReply(RequestID(1)),
            ]
        )
        #expect(recorder.timers.count == 0)
    }

    /// Timers due when the NIO timer fires (here: due at once, so that the real clock has passed every deadline)
    /// fire in one pass.
    @Test func timersDueTogetherFireInOnePassInTheOrderTheyWereStarted() {
        let loop = EmbeddedEventLoop()
        let recorder = Recorder(loop: loop)
        for id in 1...3 { recorder.timers.start(.deadlockCheck(ClaimID(UInt64(id))), after: .zero) }
        recorder.timers.armUnlessFiring()
        loop.advanceTime(to: .now() + .seconds(5))
        #expect(recorder.fired == [.deadlockCheck(ClaimID(1)), .deadlockCheck(ClaimID(2)), .deadlockCheck(ClaimID(3))])
        #expect(recorder.firings == 1)  // One NIO timer for all three.
    }

    @Test func removeAllCancelsEveryTimer() {
        let loop = EmbeddedEventLoop()
        let recorder = Recorder(loop: loop)
        recorder.timers.start(.deadlockCheck(ClaimID(1)), after: .seconds(1))
        recorder.timers.armUnlessFiring()
        recorder.timers.removeAll()
        loop.advanceTime(to: .now() + .seconds(5))
        #expect(recorder.fired.isEmpty)
        #expect(recorder.firings == 0)
    }
}
