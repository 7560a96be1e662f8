/// The arbiter's settings.
public struct ArbiterConfiguration: Hashable, Sendable {
    /// Directory extensions treated as packages (directories that are one document), compared byte for byte.
    public var packageExtensions: Set<[UInt8]>
    /// How long a presenter may take to answer a request before it counts as having said yes (docs/SEMANTICS.md §6).
    /// `nil` waits forever, as Apple's daemon does.
    public var presenterTimeout: Duration?
    /// How long a claim may wait before the deadlock detector looks at it (docs/SEMANTICS.md §6). `nil` never looks.
    public var deadlockDetectionDelay: Duration?
    /// `true` when the host watches the file system (the daemon): presenters then make the arbiter ask for watches
    /// (``ArbiterEffect/watch(_:)``). `false` (the default) asks for none.
    public var watchesFileSystem = false
    /// How long notifications caused by file-system events are coalesced: the first goes at once, more of the same
    /// in the window become one sent when it closes.
    public var coalescingWindow: Duration = .milliseconds(50)
    /// How long after a coordinated write its file-system events count as its echoes (its own notification covers
    /// them), at least two coalescing windows.
    public var echoRetention: Duration = .milliseconds(250)
    /// How much longer a write's echo record waits, past ``echoRetention``, for a watcher that says how far it has read
    /// (``ArbiterEvent/fileSystemChanged(_:observed:readAt:drainedAt:)``) to read past the write's end: a watcher
    /// behind by more than this reports the write's late echoes as changes (at worst once more each).
    public var echoWaitForWatcher: Duration = .seconds(30)
    /// `true` when the host's watcher says how far it has read in each batch, and the host answers
    /// ``ArbiterEffect/drainWatcher`` (the daemon: its inotify watcher, or the host itself when no watcher runs): a
    /// write's echo record then waits for the watcher, even before its first report, up to ``echoWaitForWatcher``.
    /// `false` (the default): records go after ``echoRetention``.
    public var watcherSaysHowFarItRead = false
    /// How many access-tree leaves that hold nothing are kept for reuse (issue 12): a path claimed again finds its
    /// nodes instead of creating and pruning them per claim. Beyond it the oldest is pruned; 0 prunes at once.
    public var idleNodeRetention = ArbiterConfiguration.defaultIdleNodeRetention
    /// When to grant leases (docs/SEMANTICS.md §13); `nil` (the default) grants none.
    public var leases: LeasePolicy?

    /// The default ``idleNodeRetention``: a few hundred nodes (tens of kilobytes).
    public static let defaultIdleNodeRetention = 256

    /// The default package extensions: document bundles commonly found on Linux and macOS volumes.
    public static let defaultPackageExtensions: [String] = [
        "app", "bundle", "framework", "plugin", "pkg", "rtfd", "pages", "numbers", "key", "xcodeproj", "xcworkspace",
        "playground", "scriptd", "sketch", "band", "logicx", "photoslibrary", "fcpbundle", "docset", "package",
    ]

    /// Creates a configuration. A `nil` `presenterTimeout` waits forever for presenters; a `nil`
    /// `deadlockDetectionDelay` turns the deadlock detector off.
    public init(
        packageExtensions: [String] = defaultPackageExtensions,
        presenterTimeout: Duration? = .seconds(30),
        deadlockDetectionDelay: Duration? = .seconds(1)
    ) {
        self.packageExtensions = Set(packageExtensions.map { Array($0.utf8) })
        self.presenterTimeout = presenterTimeout
        self.deadlockDetectionDelay = deadlockDetectionDelay
    }
}
