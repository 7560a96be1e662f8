public import Dispatch

/// A serial queue whose jobs may run on the thread that adds them: one at a time, in the order they were added, on a
/// Dispatch queue of its own, or on the adding thread when it asks to (``async(runningHereIfIdle:_:)``) and no job
/// runs or waits.
///
/// Made for the live queries' way from a file system event to an app (issue 44): a thread that hands a small job to a
/// queue that has nothing to do wakes another thread for it, about 60 µs on an idle machine, and that way had five
/// such hops where raw inotify has none. Running the job on the thread that has the news saves the hop, and nothing
/// else changes: jobs still never overlap and keep their order.
///
/// - Important: Thread-safe. Jobs never run concurrently, and always in the order they were added. A job run on the
///   adding thread holds that thread until it ends, so only short jobs are offered so (the caller decides), and a job
///   must never wait for a job of the same queue (``sync(_:)`` from a job deadlocks, as `DispatchQueue.sync` does).
public final class IdleInlineQueue: Sendable {
    public typealias Job = @Sendable () -> Void

    private struct State {
        /// A job runs, here or on `queue`, or a drain of `jobs` is on its way to `queue`.
        var busy = false
        /// Jobs waiting, from `head` on (the taken ones before it are released).
        var jobs: [Job] = []
        var head = 0
    }

    private let state = Locked(State())
    private let queue: DispatchQueue

    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Adds `job`, which runs after every job added before it. With `runningHereIfIdle`, when no job runs or waits,
    /// it runs now on the calling thread, and this returns once it has (jobs added meanwhile then run on the queue).
    public func async(runningHereIfIdle: Bool = false, _ job: @escaping Job) {
        let starts = state.withLock { state -> Bool in
            guard !state.busy else {
                state.jobs.append(job)
                return false
            }
            state.busy = true
            return true
        }
        guard starts else { return }
        if runningHereIfIdle {
            job()
            let more = state.withLock { state -> Bool in
                if state.head == state.jobs.count { state.busy = false }
                return state.busy
            }
            if more { queue.async { self.drain() } }
        } else {
            queue.async {
                job()
                self.drain()
            }
        }
    }

    /// Adds `job` at `deadline`: it then runs after the jobs added before that time, on the queue's thread when the
    /// queue is idle then.
    public func asyncAfter(deadline: DispatchTime, _ job: @escaping Job) {
        queue.asyncAfter(deadline: deadline) { self.async(runningHereIfIdle: true, job) }
    }

    /// Whether no job runs or waits: a job added now with `runningHereIfIdle` would run on the calling thread (unless
    /// another is added first). Just after ``sync(_:)`` returns, the job that held the queue may still be ending.
    public var isIdle: Bool {
        state.withLock { !$0.busy }
    }

    /// Whether jobs wait behind the one running (asked from a job: whether more work is queued already).
    public var hasWaitingJobs: Bool {
        state.withLock { $0.head < $0.jobs.count }
    }

    /// Runs `body` on the calling thread once every job added before has run, with no job running meanwhile.
    ///
    /// - Important: Never from a job of this queue (it would wait for itself).
    public func sync<Result>(_ body: () throws -> Result) rethrows -> Result {
        let turn = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        // A job that holds the queue while `body` runs here.
        async {
            turn.signal()
            done.wait()
        }
        turn.wait()
        defer { done.signal() }
        return try body()
    }

    /// Runs the waiting jobs in order until none is left (on `queue`).
    private func drain() {
        while let job = next() { job() }
    }

    /// The first waiting job, or `nil` (and the queue idle) when none waits.
    private func next() -> Job? {
        state.withLock { state -> Job? in
            guard state.head < state.jobs.count else {
                state.jobs.removeAll()
                state.head = 0
                state.busy = false
                return nil
            }
            let job = state.jobs[state.head]
            state.jobs[state.head] = Self.released
            state.head += 1
            // Taken jobs are dropped from the front once they are half the array: O(1) a job, amortised.
            if state.head >= 64, state.head * 2 >= state.jobs.count {
                state.jobs.removeFirst(state.head)
                state.head = 0
            }
            return job
        }
    }

    /// What stands in a taken job's place, so that the array does not keep the job's captures alive.
    private static let released: Job = {}
}
