// `fcdump watcher`: the inotify watches against their limits, the watched directories and the watcher's counters.

import FCDumpModel

extension Renderer {
    /// The watcher's health, then one line per watched directory (failed ones say why).
    func watcher() -> String {
        guard let watcher = dump.watcher else { return "filecoordd does not watch the file system\n" }
        func number(_ value: Int?) -> String { value.map(String.init) ?? "?" }
        var out = "watcher (\(watcher.backend ?? "?")): \(watcher.watches) watches in use"
        if let linked = watcher.linkedFileWatches, linked > 0 { out += " (\(linked) on files with other names)" }
        out += watcher.maximumWatches.map { " of at most \($0)" } ?? ""
        out += " (cap \(watcher.watchCap.map(String.init) ?? "none"), kernel max_user_watches "
        out += "\(number(watcher.kernelMaximumWatches)), queue max_queued_events \(number(watcher.queueLimit)))\n"
        out += "events \(number(watcher.events)), overflows \(watcher.overflows), rescans \(watcher.recrawls), "
        out += "failed watches \(number(watcher.failedWatches)), "
        out += "dropped watches held \(number(watcher.retiredWatches)), renewals \(number(watcher.renewals)); "
        out += "notifications \(number(watcher.notificationsSent)), "
        out +=
            "coalesced \(number(watcher.coalesced)), echoes of coordinated writes \(number(watcher.echoesSuppressed))\n"
        let directories = watcher.directories ?? []
        if directories.isEmpty { out += "no directory watched\n" }
        for directory in directories {
            let presenters = directory.presenters == 1 ? "1 presenter" : "\(directory.presenters) presenters"
            out += "  \(directory.path)  \(presenters)"
            if let failure = directory.failure { out += "  NOT WATCHED: \(failure)" }
            out += "\n"
        }
        return out
    }
}
