import Synchronization

extension NSFileCoordinator {
    /// `true`: each later call of this coordinator fails at once with `FileCoordinationError.Code.wouldWait`
    /// instead of waiting for a conflicting claim of another coordinator, granted or queued ahead of it (issue 43,
    /// `fccoord -n`; docs/SEMANTICS.md §2 rule 9). Presenters are still asked to relinquish, save or accommodate, and
    /// waited for. Not in Apple's API, and not public: the package's tools (FCBridge) set it. Default `false`.
    package var refusesToWait: Bool {
        get { settings.withLock { $0.refusesToWait } }
        set {
            settings.withLock {
                $0.refusesToWait = newValue
                settingsUnchanged.store(false, ordering: .releasing)
            }
        }
    }
}
