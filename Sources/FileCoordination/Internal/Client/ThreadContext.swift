import FCCore
import FCSystem

/// What the current thread is doing for file coordination: running a presenter's callback (whose queue it then
/// holds), or running the accessor of a coordinator's claim (so that a nested call can be told apart).
///
/// - Important: Thread-local: each thread sees only its own context (``FCSystem/ThreadLocal``).
enum ThreadContext {
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

    /// One thread's context.
    private final class State {
        var callback: Callback?
        var accesses: [Access] = []
    }

    private static let state = ThreadLocal { State() }

    /// The presenter callback this thread is running, if any.
    static var currentCallback: Callback? { state.value.callback }

    /// Runs `body` tagged as `callback` of `presenter`.
    static func withCallback<T>(
        _ callback: PresenterCallbacks,
        of presenter: PresenterID,
        _ body: () throws -> T
    ) rethrows -> T {
        let state = state.value
        let previous = state.callback
        state.callback = Callback(presenter: presenter, callback: callback)
        defer { state.callback = previous }
        return try body()
    }

    /// The accessors running on this thread, innermost last.
    static var accesses: [Access] { state.value.accesses }

    /// Runs `body` as the accessor of `access`.
    static func withAccess<T>(_ access: Access, _ body: () throws -> T) rethrows -> T {
        let state = state.value
        state.accesses.append(access)
        defer { state.accesses.removeLast() }
        return try body()
    }
}
