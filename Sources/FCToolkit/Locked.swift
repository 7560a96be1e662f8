import Foundation

/// A value guarded by a lock: `Mutex`'s shape (`withLock`) on a pthread mutex (`NSLock`). The one lock type of the
/// library and the daemon.
///
/// Synchronization's `Mutex` waits on a futex that the thread sanitizer cannot see, so every access it guards is
/// reported as a race under `--sanitize=thread` (CI runs the library's tests so). This lock is seen by the sanitizer.
///
/// `Sendable` only when `Value` is: a lock does not make a value that is not `Sendable` safe to share (its
/// references may escape `withLock`). A type that keeps such a value under a `Locked` says why that is safe, where it
/// declares itself `@unchecked Sendable`.
///
/// - Important: Thread-safe. `body` runs with the lock held: it must not call back into code that takes the same lock.
public final class Locked<Value> {
    private let lock = NSLock()
    /// Unchecked by the runtime's dynamic exclusivity enforcement: every access is made under `lock`, which
    /// excludes a second one as the check would (a `withLock` inside `withLock` of the same lock deadlocks first). The
    /// check cost two calls into the runtime per `withLock` (issue 39's profile of a leased read).
    @exclusivity(unchecked) private var value: Value

    /// A lock guarding `value`.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the lock held and the value to read or change.
    public func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

// @unchecked: every access to `value` is made under `lock`, and the value itself is `Sendable`.
extension Locked: @unchecked Sendable where Value: Sendable {}

extension Locked where Value == Void {
    /// Runs `body` with the lock held, for a lock that guards no value of its own (`Locked(())`).
    ///
    /// It never touches `value`: an `inout` access to a zero-sized stored property is reported by the thread
    /// sanitizer at the object's own address, where it meets every read of the object's header (CI's TSan phase
    /// reported `CoordinationClient.registering` so).
    public func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
