import Dispatch
import FCCore
import FCToolkit
import Synchronization

/// What a waiting claim became.
enum ClaimOutcome: Sendable {
    case granted([ItemPath])
    case failed(any Error)
}

/// A connection on which a blocked caller reads its own reply (``DaemonTransport``): the caller's thread takes the
/// connection's reader role instead of waiting to be woken by a reader thread.
protocol ReplyReader: AnyObject, Sendable {
    /// Blocks until `waiter` has its outcome, reading the connection on the calling thread when no one else does;
    /// `holdingRole`: the caller took the reader role when it sent the claim, and releases it here.
    func awaitOutcome(of waiter: ClaimWaiter, holdingRole: Bool) -> ClaimOutcome
}

/// How a blocked caller waits for the claim it just submitted (what `submitClaim` returns): on its waiter, resumed
/// by whoever handles the reply, or by reading the connection it was sent on itself.
enum ClaimWait {
    case onWaiter
    /// The caller reads `reader`; `holdingRole`: the submission took the connection's reader role for it already.
    case reading(any ReplyReader, holdingRole: Bool)

    /// Blocks until `waiter`'s claim is granted or fails.
    func outcome(of waiter: ClaimWaiter) -> ClaimOutcome {
        switch self {
        case .onWaiter: waiter.wait()
        case .reading(let reader, let holdingRole): reader.awaitOutcome(of: waiter, holdingRole: holdingRole)
        }
    }
}

/// One waiting claim: resumed once (by whoever reads the reply: the caller itself, the connection's listener, or the
/// in-process arbiter's delivery queue), waited for by a blocked thread, an async task or a callback.
///
/// A blocked thread's waiter (``blocksThread``) publishes its outcome without a lock: the first ``resume(_:)`` wins
/// `phase` (pending to resuming), writes `published`, then marks it readable (published), and readers read it only
/// after they see that mark. So the caller that reads its own reply checks for it, on every frame, with one atomic
/// load. A task's or a callback's waiter keeps its outcome, continuation and callback under `state`.
///
/// - Important: Thread-safe. `state` is never held while a continuation, a callback or a reader runs.
// @unchecked: `published` is written once, by the one thread that won `phase` (0 to 1), before `phase` is stored 2
// with release ordering; it is read only after `phase` is loaded as 2 with acquire ordering.
final class ClaimWaiter: @unchecked Sendable {
    /// Whether a thread blocks on this claim (a synchronous call), rather than a task or a callback: only such a
    /// caller can read its own reply.
    let blocksThread: Bool

    private struct State {
        var outcome: ClaimOutcome?
        var continuation: CheckedContinuation<ClaimOutcome, Never>?
        var callback: (@Sendable (ClaimOutcome) -> Void)?
    }

    private let state = Locked(State())
    /// A blocked thread's outcome: 0 pending, 1 being written, 2 published (in `published`).
    private let phase = Atomic<UInt8>(0)
    private var published: ClaimOutcome?
    /// Where a blocked caller sleeps: signalled by ``resume(_:)`` and by ``nudge()``.
    private let wakeUp = DispatchSemaphore(value: 0)

    init(blocksThread: Bool) {
        self.blocksThread = blocksThread
    }

    /// The outcome, once there is one.
    var outcome: ClaimOutcome? {
        guard blocksThread else { return state.withLock { $0.outcome } }
        return phase.load(ordering: .acquiring) == 2 ? published : nil
    }

    func resume(_ result: ClaimOutcome) {
        if blocksThread {
            guard phase.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged else { return }
            published = result
            phase.store(2, ordering: .releasing)
            wakeUp.signal()
            return
        }
        let resumed = state.withLock {
            state -> (CheckedContinuation<ClaimOutcome, Never>?, (@Sendable (ClaimOutcome) -> Void)?)? in
            guard state.outcome == nil else { return nil }
            state.outcome = result
            defer {
                state.continuation = nil
                state.callback = nil
            }
            return (state.continuation, state.callback)
        }
        guard let (continuation, callback) = resumed else { return }
        continuation?.resume(returning: result)
        callback?(result)
    }

    /// Blocks the calling thread until the claim is granted or fails, resumed by whoever handles its reply (a caller
    /// that reads its connection itself waits through ``ClaimWait`` instead).
    func wait() -> ClaimOutcome {
        while true {
            if let outcome { return outcome }
            wakeUp.wait()
        }
    }

    /// Sleeps until ``resume(_:)`` or ``nudge()`` (which may have come first), or until `timeout` passes (`nil`:
    /// no limit); returns `false` if it timed out. For ``ReplyReader``s.
    func park(timeout: Duration? = nil) -> Bool {
        guard let timeout else {
            wakeUp.wait()
            return true
        }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        return wakeUp.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
    }

    /// Wakes the caller parked in ``park()``: the reader role is free for it. For ``ReplyReader``s.
    func nudge() {
        wakeUp.signal()
    }

    /// Suspends the task until the claim is granted or fails. Not for a blocked thread's waiter.
    func value() async -> ClaimOutcome {
        precondition(!blocksThread, "a blocked thread's claim waiter is waited for with wait(), not value()")
        return await withCheckedContinuation { continuation in
            let known = state.withLock { state -> ClaimOutcome? in
                if let outcome = state.outcome { return outcome }
                state.continuation = continuation
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }

    /// Calls `body` once with the outcome: on the thread that resumes the waiter, or at once if it is known.
    /// No task and no Dispatch queue is involved, so a starved thread pool cannot delay it.
    func onOutcome(_ body: @escaping @Sendable (ClaimOutcome) -> Void) {
        precondition(!blocksThread, "a blocked thread's claim waiter is waited for with wait(), not onOutcome")
        let known = state.withLock { state -> ClaimOutcome? in
            if let outcome = state.outcome { return outcome }
            state.callback = body
            return nil
        }
        if let known { body(known) }
    }
}
