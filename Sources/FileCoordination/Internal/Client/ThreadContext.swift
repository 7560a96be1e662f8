import FCCore
import Foundation

/// What the current thread is doing for file coordination: running a presenter's callback (whose queue it then
/// holds), or running the accessor of a coordinator's claim (so that a nested call can be told apart).
///
/// - Important: Thread-local: each thread sees only its own context.
enum ThreadContext {
    private static let presenterKey = "FileCoordination.presenter"
    private static let accessKey = "FileCoordination.access"

    /// One accessor running on this thread.
    struct Access {
        /// The client the coordinator's calls go through (a version change made here is told to its arbiter).
        var client: CoordinationClient
        var coordinator: ObjectIdentifier
        var claim: ClaimID
        /// `true` inside a single-item read or write accessor, where a nested write is refused (docs/SEMANTICS.md §5).
        var refusesNestedWrite: Bool
    }

    /// A presenter's callback running on this thread.
    struct Callback {
        var presenter: PresenterID
        /// The callback (one bit); empty for the reacquirer a relinquish handed back.
        var callback: PresenterCallbacks
    }

    /// The presenter callback this thread is running, if any.
    static var currentCallback: Callback? {
        Thread.current.threadDictionary[presenterKey] as? Callback
    }

    /// Runs `body` tagged as `callback` of `presenter`.
    static func withCallback<T>(
        _ callback: PresenterCallbacks,
        of presenter: PresenterID,
        _ body: () throws -> T
    ) rethrows -> T {
        let dictionary = Thread.current.threadDictionary
        let previous = dictionary[presenterKey]
        dictionary[presenterKey] = Callback(presenter: presenter, callback: callback)
        defer { dictionary[presenterKey] = previous }
        return try body()
    }

    /// The accessors running on this thread, innermost last.
    static var accesses: [Access] {
        (Thread.current.threadDictionary[accessKey] as? AccessStack)?.stack ?? []
    }

    /// Runs `body` as the accessor of `access`.
    static func withAccess<T>(_ access: Access, _ body: () throws -> T) rethrows -> T {
        let dictionary = Thread.current.threadDictionary
        let stack = (dictionary[accessKey] as? AccessStack) ?? AccessStack()
        dictionary[accessKey] = stack
        stack.stack.append(access)
        defer { stack.stack.removeLast() }
        return try body()
    }

    private final class AccessStack {
        var stack: [Access] = []
    }
}
