import FCToolkit
public import Logging

/// Where the library logs: a swift-log `Logger` the app sets. The library never writes to the process's standard
/// output or error on its own.
///
/// By default nothing is logged. Set ``logger`` early (before the first coordinated call) to see what the library
/// does: which arbiter it uses, a daemon it started, a fallback to coordinating in process (a warning), a lost
/// connection and each reconnection, presenter errors the in-process arbiter reports.
///
/// ```swift
/// FileCoordinationLogging.logger = Logger(label: "com.example.app.file-coordination")
/// ```
///
/// - Important: Thread-safe.
public enum FileCoordinationLogging {
    private static let storage = Locked(Logger(label: "FileCoordination", factory: { _ in SwiftLogNoOpLogHandler() }))

    /// The logger the library uses from now on.
    public static var logger: Logger {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}
