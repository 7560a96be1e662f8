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
    ///
    /// Its fields are unchecked by the runtime's dynamic exclusivity enforcement: the object is reached only from its
    /// own thread (``ThreadLocal``), and no access is held across a call out (`body` runs between two of them), so
    /// two never overlap. The checks were three calls into the runtime per coordinated call (issue 39).
    private final class State {
        @exclusivity(unchecked) var callback: Callback?
        @exclusivity(unchecked) var accesses: [Access] = []
        /// While a subitem message is delivered here (``withSubitemDelivery(_:)``): whether the presenter's method
        /// was the protocol's default, which asks for did change instead.
        @exclusivity(unchecked) var subitemFallback: Bool?
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

    /// Runs `body`, the delivery of a subitem message; returns whether the presenter's method that ran in it was the
    /// protocol's default (it called ``fellBackToDidChange()``).
    static func withSubitemDelivery(_ body: () -> Void) -> Bool {
        let state = state.value
        let previous = state.subitemFallback
        state.subitemFallback = false
        defer { state.subitemFallback = previous }
        body()
        return state.subitemFallback == true
    }

    /// Called by a default subitem method: `true` when a subitem message is being delivered on this thread (the
    /// deliverer then sends did change, once per batch), `false` when the app called the method itself.
    static func fellBackToDidChange() -> Bool {
        let state = state.value
        guard state.subitemFallback != nil else { return false }
        state.subitemFallback = true
        return true
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
