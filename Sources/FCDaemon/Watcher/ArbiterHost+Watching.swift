import FCCore
import FCDumpModel
import FCToolkit
import Logging
import NIOCore

extension ArbiterHost {
    /// A batch from the watcher, on the loop: the arbiter turns it into notifications (docs/SEMANTICS.md §3).
    func fileSystemChanged(_ report: WatcherReport) {
        loop.preconditionInEventLoop()
        watcherStatus = report.status
        for directory in report.unwatched { watchedDirectories.remove(directory) }
        for directory in report.watched { watchedDirectories.insert(directory) }
        // The queries had the events and the barriers from the watcher's thread (``QueryRelay``).
        guard !report.events.isEmpty else {
            // How far the watcher has read, when the arbiter asked (``ArbiterEffect/drainWatcher``) or the watcher
            // stopped: other empty reports (a watch added, a barrier) would cost the arbiter a pass each.
            if let drainedAt = report.drainedAt, router.arbiter.asksWatcherToDrain || drainedAt == .max {
                cluster?.checkFence()  // Claims that waited for the watcher may end: others may be granted.
                apply(router.fileSystemChanged([], drainedAt: drainedAt))
            }
            return
        }
        cluster?.checkFence()
        apply(
            router.fileSystemChanged(
                report.events,
                observed: report.observed,
                readAt: report.readAt,
                drainedAt: report.drainedAt
            )
        )
    }
}

extension ArbiterHost {
    /// ``ArbiterEffect/drainWatcher``: the watcher reports how far it has read once it has read what is queued now.
    /// With no watcher (it did not start), the host answers after this pass: no event is still to come.
    func drainWatcher() {
        if let watcher {
            watcher.drain()
            return
        }
        loop.assumeIsolated().execute { [weak self] in
            guard let self else { return }
            self.apply(self.router.fileSystemChanged([], drainedAt: .max))
        }
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
        let relay = try await loop.submit { host.value.queryRelay }.get()
        do {
            try watcher.start { report in
                relay.pass(report)
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
        dump.retiredWatches = status.retiredWatches
        dump.renewals = status.renewals
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

/// Hands the watcher's batches to the live queries from the watcher's own thread (issue 44): the query service
/// works on its own queue, and going through the loop first was one thread hop more on the way of every change to a
/// query (the create-arrival benchmark counted five). The events of a batch, then its barriers, are handed over in
/// the watcher's order, as the loop did.
///
/// - Important: Thread-safe; ``pass(_:)`` runs on the watcher's thread (once that thread has ended by itself, on the
///   loop, which asks the barriers then answered at once: ``FileSystemWatcher``), ``service`` is set on the loop.
final class QueryRelay: Sendable {
    private let slot = Locked<QueryService?>(nil)

    /// The host's query service, once it has one (made at the first query).
    var service: QueryService? {
        get { slot.withLock { $0 } }
        set { slot.withLock { $0 = newValue } }
    }

    /// Hands `report`'s events, the watches it added, then its barriers, to the query service, if there is one.
    func pass(_ report: WatcherReport) {
        guard !report.events.isEmpty || !report.barriers.isEmpty || !report.watched.isEmpty, let service else { return }
        if !report.events.isEmpty { service.fileSystemChanged(report.events) }
        if !report.watched.isEmpty { service.watchesAdded(report.watched) }
        if !report.barriers.isEmpty { service.barriersPassed(report.barriers) }
    }
}
