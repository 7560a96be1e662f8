import FCCore

extension ClusterHost {
    /// Lists the keys under `prefix` (when `revision` is `nil`), then watches them from the list's revision on, each
    /// key and change handed to `listed` and `watched` on the adapter's loop. A watch that ends is started again from
    /// the revision after the last change it reported, which misses nothing, or after a compaction from a new list;
    /// while it keeps failing, the pauses double from 100 ms to 3.2 s. The running task is kept in `slot` (cancelled
    /// at stop).
    ///
    /// The presence and mail watches of issue 41 (the folders' keys, whose copy has rules of its own, keep their own
    /// loop in ClusterHost+Keys.swift).
    func followPrefix(
        _ prefix: String,
        _ what: String,
        into slot: any WritableKeyPath<PresenterExchange, Task<Void, Never>?> & Sendable,
        listed: @escaping @Sendable (ClusterHost, [EtcdKeyValue]) -> Void,
        watched: @escaping @Sendable (ClusterHost, EtcdWatchEvent) -> Void,
        from revision: Int64? = nil,
        tries: Int = 0
    ) {
        let (etcd, bound) = (self.etcd, self.bound)
        exchange[keyPath: slot] = Task {
            var next = revision
            var delivered = false
            do {
                if next == nil {
                    let range = try await etcd.range(prefix: prefix)
                    bound.execute { listed($0, range.kvs) }
                    next = range.revision + 1
                }
                for try await event in etcd.watch(prefix: prefix, fromRevision: next) {
                    next = event.modRevision + 1
                    delivered = true
                    bound.execute { watched($0, event) }
                }
            } catch {
                if let failure = error as? EtcdError, case .watchCanceled = failure.reason { next = nil }
                bound.execute { $0.noteError("the watch of \(what) ended: \(error)") }
            }
            guard !Task.isCancelled else { return }
            let failures = delivered ? 0 : tries + 1
            try? await Task.sleep(for: .milliseconds(100 << min(failures, 5)))
            let resume = next
            bound.execute { host in
                guard !host.stopped else { return }
                host.followPrefix(
                    prefix,
                    what,
                    into: slot,
                    listed: listed,
                    watched: watched,
                    from: resume,
                    tries: failures
                )
            }
        }
    }
}
