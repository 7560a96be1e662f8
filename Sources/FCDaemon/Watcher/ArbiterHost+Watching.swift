import FCCore
import FCDumpModel
import Logging
import NIOCore

extension ArbiterHost {
    /// A batch from the watcher, on the loop: the arbiter turns it into notifications (docs/SEMANTICS.md §3).
    func fileSystemChanged(_ report: WatcherReport) {
        loop.preconditionInEventLoop()
        watcherStatus = report.status
        for directory in report.unwatched { watchedDirectories.remove(directory) }
        for directory in report.watched { watchedDirectories.insert(directory) }
        // The queries read the events first, then the barriers passed after them (issue 44).
        if !liveQueries.isEmpty, !report.events.isEmpty { queries?.fileSystemChanged(report.events) }
        if !report.barriers.isEmpty { queries?.barriersPassed(report.barriers) }
        guard !report.events.isEmpty else { return }
        cluster?.checkFence()
        apply(router.fileSystemChanged(report.events, observed: report.observed, readAt: report.readAt))
    }
}

extension DaemonService {
    /// Starts the inotify watcher and connects it to the host (``DaemonConfiguration/watchesFileSystem``). When
    /// inotify cannot be used the daemon goes on without it and says so (coordination does not depend on it).
    func startWatcher(host: NIOLoopBound<ArbiterHost>, loop: any EventLoop) async throws -> InotifyWatcher? {
        guard configuration.watchesFileSystem else { return nil }
        let watcher = InotifyWatcher(
            maximumWatches: configuration.maximumWatches,
            wakePath: configuration.socketPath + ".watcher",
            logger: logger
        )
        do {
            try watcher.start { report in
                loop.execute { host.value.fileSystemChanged(report) }
            }
        } catch {
            logger.error(
                "changes made without coordination will not be seen: the file watcher did not start: \(error)"
            )
            return nil
        }
        try await loop.submit {
            host.value.watcher = watcher
            host.value.watcherStatus = WatcherStatus(backend: "inotify")
        }.get()
        return watcher
    }
}

extension ArbiterHost {
    /// The watcher's part of the dump; `nil` when the daemon does not watch. Costs O(watched directories).
    func dumpWatcher() -> DaemonDump.Watcher? {
        guard let status = watcherStatus else { return nil }
        let watching = router.arbiter.watchingSnapshot()
        let limits = [status.watchCap, status.kernelMaximumWatches].compactMap { $0 }
        var dump = DaemonDump.Watcher(
            watches: status.watches,
            maximumWatches: limits.min(),
            overflows: status.overflows,
            recrawls: status.rescans
        )
        dump.backend = status.backend
        dump.watchCap = status.watchCap
        dump.kernelMaximumWatches = status.kernelMaximumWatches
        dump.queueLimit = status.queueLimit
        dump.events = status.events
        dump.failedWatches = status.failedWatches
        dump.linkedFileWatches = status.linkedFileWatches
        dump.notificationsSent = watching.statistics.notificationsSent
        dump.coalesced = watching.statistics.coalesced
        dump.echoesSuppressed = watching.statistics.echoesSuppressed
        dump.directories = watching.directories.filter {
            watchedDirectories.contains($0.path) || $0.failure != nil
        }.map {
            DaemonDump.WatchedDirectory(
                path: $0.path.escapedDescription,
                presenters: $0.presenters,
                failure: $0.failure
            )
        }
        return dump
    }
}
