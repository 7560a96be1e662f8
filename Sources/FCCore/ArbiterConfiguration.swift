/// The arbiter's settings.
public struct ArbiterConfiguration: Hashable, Sendable {
    /// Directory extensions treated as packages (directories that are one document), compared byte for byte.
    public var packageExtensions: Set<[UInt8]>
    /// How long a presenter may take to answer a request before it counts as having said yes (SEMANTICS.md §6).
    /// `nil` waits forever, as Apple's daemon does.
    public var presenterTimeout: Duration?
    /// How long a claim may wait before the deadlock detector looks at it (SEMANTICS.md §6). `nil` never looks.
    public var deadlockDetectionDelay: Duration?

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
