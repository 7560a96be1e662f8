import FCToolkit

extension InotifyWatcher {
    /// What answers for a watcher whose thread ended by itself (``end(after:)``), on the callers' threads, one report
    /// at a time and in order (``FileSystemWatcher``: `deliver` is never called concurrently with itself).
    final class Ended: Sendable {
        private let status: WatcherStatus
        /// Its lock is held while a report is delivered, and while ``answer(_:)`` takes what it answers.
        private let deliver: Locked<@Sendable (WatcherReport) -> Void>

        init(status: WatcherStatus, deliver: @escaping @Sendable (WatcherReport) -> Void) {
            self.status = status
            self.deliver = Locked(deliver)
        }

        /// Answers what `take` returns, taken under this object's lock (so that the commands queued before it was
        /// installed go out before any asked after): a barrier is passed at once, a drain is told that everything
        /// was read (nothing will be read: a live query's listing and a write's echo wait for nothing); the rest is
        /// dropped (no watch will be added, and nothing is queued). With `last`, the thread's last report, that
        /// report goes out first and carries the barriers taken, which it passes.
        func answer(after last: WatcherReport? = nil, _ take: () -> [Command]) {
            deliver.withLock { deliver in
                let commands = take()
                if var last {
                    for case .barrier(let token) in commands { last.barriers.append(token) }
                    deliver(last)
                    return
                }
                for command in commands {
                    var report = WatcherReport(events: [], status: status)
                    switch command {
                    case .barrier(let token): report.barriers = [token]
                    case .drain: report.drainedAt = .max
                    case .watch, .unwatch, .fileWritten, .changedSince: continue
                    }
                    deliver(report)
                }
            }
        }
    }
}
