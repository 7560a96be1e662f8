/// Why the watcher could not start.
public struct WatcherError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    init(_ description: String) { self.description = description }
}
