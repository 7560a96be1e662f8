import FCCore
import Logging
import NIOCore

extension ArbiterHost {
    /// A batch from the watcher, on the loop: the arbiter turns it into notifications (SEMANTICS.md §3).
    func fileSystemChanged(_ report: WatcherReport) {
        loop.preconditionInEventLoop()
        watcherStatus = report.status
        guard !report.events.isEmpty else { return }
        apply(router.fileSystemChanged(report.events))
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
