import Dispatch
import FCToolkit
import Foundation
import Testing

/// The live queries' serial queue (issue 44): a job offered to the adding thread runs there only when nothing runs or
/// waits, and jobs never overlap and keep their order whichever thread runs them.
@Suite struct IdleInlineQueueTests {
    /// A record of the jobs run: their order, and how many ran at once at most.
    // Locked, not Mutex: the thread sanitizer sees its lock, so these tests can run under it as the library's do.
    private final class Runs: Sendable {
        private let order = Locked<[Int]>([])
        private let counts = Locked((running: 0, most: 0))

        func run(_ number: Int) {
            counts.withLock { counts in
                counts.running += 1
                counts.most = max(counts.most, counts.running)
            }
            order.withLock { $0.append(number) }
            counts.withLock { $0.running -= 1 }
        }

        var numbers: [Int] { order.withLock { $0 } }
        var mostAtOnce: Int { counts.withLock { $0.most } }
    }

    @Test func aJobOfferedToAnIdleQueueRunsOnTheAddingThreadBeforeAsyncReturns() {
        let queue = IdleInlineQueue(label: "test")
        let caller = pthread_self()
        let ranHere = Locked<Bool?>(nil)
        queue.async(runningHereIfIdle: true) {
            let here = pthread_equal(pthread_self(), caller) != 0
            ranHere.withLock { $0 = here }
        }
        #expect(ranHere.withLock { $0 } == true)
        // Not offered: it runs on the queue's thread.
        let elsewhere = Locked<Bool?>(nil)
        queue.async {
            let here = pthread_equal(pthread_self(), caller) != 0
            elsewhere.withLock { $0 = here }
        }
        queue.sync {}
        #expect(elsewhere.withLock { $0 } == false)
    }

    @Test func aJobOfferedWhileAnotherRunsWaitsItsTurn() {
        let queue = IdleInlineQueue(label: "test")
        let runs = Runs()
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        queue.async {
            started.signal()
            release.wait()
            runs.run(1)
        }
        started.wait()
        #expect(!queue.hasWaitingJobs)
        let caller = pthread_self()
        let ranHere = Locked<Bool?>(nil)
        // Returns at once: the first job still runs, so this one is queued behind it.
        queue.async(runningHereIfIdle: true) {
            let here = pthread_equal(pthread_self(), caller) != 0
            ranHere.withLock { $0 = here }
            runs.run(2)
        }
        #expect(queue.hasWaitingJobs)
        #expect(runs.numbers.isEmpty)
        release.signal()
        queue.sync {}
        #expect(runs.numbers == [1, 2])
        #expect(ranHere.withLock { $0 } == false)
        #expect(!queue.hasWaitingJobs)
    }

    @Test func jobsAddedMeanwhileRunAfterTheOneOnTheAddingThread() {
        let queue = IdleInlineQueue(label: "test")
        let runs = Runs()
        queue.async(runningHereIfIdle: true) {
            runs.run(1)
            // Added while the first runs here: queued, and run on the queue's thread once it ends.
            queue.async(runningHereIfIdle: true) { runs.run(2) }
            queue.async { runs.run(3) }
            #expect(queue.hasWaitingJobs)
        }
        queue.sync {}
        #expect(runs.numbers == [1, 2, 3])
    }

    @Test func jobsFromManyThreadsNeverOverlapAndKeepEachThreadsOrder() async {
        let queue = IdleInlineQueue(label: "test")
        let runs = Runs()
        let threads = 4
        let jobsPerThread = 2_000
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    for job in 0..<jobsPerThread {
                        // Half offered to the adding thread, half not.
                        queue.async(runningHereIfIdle: job % 2 == 0) { runs.run(thread * jobsPerThread + job) }
                    }
                }
            }
        }
        queue.sync {}
        let numbers = runs.numbers
        #expect(numbers.count == threads * jobsPerThread)
        #expect(runs.mostAtOnce == 1)
        for thread in 0..<threads {
            let own = numbers.filter { $0 / jobsPerThread == thread }
            #expect(own == own.sorted())
        }
    }

    @Test func syncWaitsForEveryJobAddedBefore() {
        let queue = IdleInlineQueue(label: "test")
        let runs = Runs()
        for number in 0..<100 { queue.async { runs.run(number) } }
        let seen = queue.sync { runs.numbers }
        #expect(seen == Array(0..<100))
    }

    @Test func aJobAddedForLaterRunsAfterTheJobsWaitingThen() {
        let queue = IdleInlineQueue(label: "test")
        let runs = Runs()
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        queue.async {
            started.signal()
            release.wait()
        }
        started.wait()
        // Due at once, but the queue's thread is busy: it comes after the job added next, which waits already.
        queue.asyncAfter(deadline: .now()) {
            runs.run(2)
            done.signal()
        }
        queue.async { runs.run(1) }
        release.signal()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(runs.numbers == [1, 2])
    }
}
