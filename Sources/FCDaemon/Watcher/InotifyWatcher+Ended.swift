import FCCore
import FCToolkit

extension InotifyWatcher {
    /// What answers for a watcher whose thread ended by itself (``end(after:because:lost:)``), on the callers'
    /// threads, one report at a time and in order (``FileSystemWatcher``: `deliver` is never called concurrently with
    /// itself).
    final class Ended: Sendable {
        /// Why no directory is watched any more, as `FileSystemEvent.watchFailed` tells it.
        let reason: String
        /// Its lock is held while a report is delivered, and while ``answer(after:_:)`` takes what it answers.
        private let state: Locked<(status: WatcherStatus, deliver: @Sendable (WatcherReport) -> Void)>

        init(status: WatcherStatus, reason: String, deliver: @escaping @Sendable (WatcherReport) -> Void) {
            self.reason = reason
            state = Locked((status, deliver))
        }

        /// Answers what `take` returns, taken under this object's lock (so that the commands queued before it was
        /// installed go out before any asked after): a barrier is passed at once, a drain is told that everything
        /// was read (nothing will be read: a live query's listing and a write's echo wait for nothing), a watch is
        /// told it failed (``reason``: the arbiter tells the presenters that relied on it, the query service the
        /// queries); the rest is dropped (nothing is queued). With `last`, the thread's last report, that report
        /// goes out first and carries the barriers taken, which it passes, and the failures of the watches taken.
        func answer(after last: WatcherReport? = nil, _ take: () -> [Command]) {
            state.withLock { state in
                let commands = take()
                if var last {
                    // The directories the last report tells as lost: a watch of one still queued is not told again.
                    var told = Set(
                        last.events.compactMap { if case .watchFailed(let path, _) = $0 { path } else { nil } }
                    )
                    for command in commands {
                        switch command {
                        case .barrier(let token): last.barriers.append(token)
                        case .watch(let directory, _):
                            guard told.insert(directory).inserted else { continue }
                            last.events.append(.watchFailed(directory, reason: reason))
                            state.status.failedWatches += 1
                        case .unwatch, .fileWritten, .changedSince, .drain, .settle: continue
                        }
                    }
                    last.status = state.status
                    state.deliver(last)
                    return
                }
                for command in commands {
                    var report = WatcherReport(events: [], status: state.status)
                    switch command {
                    case .barrier(let token): report.barriers = [token]
                    case .drain: report.drainedAt = .max
                    case .watch(let directory, _):
                        state.status.failedWatches += 1
                        report.status = state.status
                        report.events = [.watchFailed(directory, reason: reason)]
                    case .unwatch, .fileWritten, .changedSince, .settle: continue
                    }
                    state.deliver(report)
                }
            }
        }
    }
}
