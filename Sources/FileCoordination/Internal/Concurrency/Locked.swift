import Foundation

/// A value guarded by a lock: `Mutex`'s shape (`withLock`) on a pthread mutex (`NSLock`).
///
/// Synchronization's `Mutex` waits on a futex that the thread sanitizer cannot see, so every access it guards is
/// reported as a race under `--sanitize=thread` (CI runs the library's tests so). This lock is seen by the sanitizer.
///
/// - Important: Thread-safe. `body` runs with the lock held: it must not call back into code that takes the same lock.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

extension Locked where Value == Void {
    /// Runs `body` with the lock held, for a lock that guards no value of its own (`Locked(())`).
    ///
    /// It never touches `value`: an `inout` access to a zero-sized stored property is reported by the thread
    /// sanitizer at the object's own address, where it meets every read of the object's header (CI's TSan phase
    /// reported `CoordinationClient.registering` so).
    func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
