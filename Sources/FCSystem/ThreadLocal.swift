#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One object per thread (`pthread_key_create`, `pthread_getspecific`, `pthread_setspecific`): the thread's own
/// instance, made on its first use there and released when the thread exits.
///
/// Made for state read on every coordinated call (which accessor or presenter callback a thread runs): Foundation's
/// `Thread.current.threadDictionary` boxed, hashed and cast on each read, about a tenth of a leased read's time
/// (issue 23's profile).
///
/// Create one per purpose and keep it for the process's life (a `static let`): each takes one of the process's
/// `PTHREAD_KEYS_MAX` keys (at least 128), which is never given back.
///
/// - Important: Thread-safe: each thread reaches only its own object, which it alone may use.
public final class ThreadLocal<Value: AnyObject>: Sendable {
    private let key: pthread_key_t
    private let make: @Sendable () -> Value

    /// A slot whose value on each thread is made by `make` on first use there.
    ///
    /// - Precondition: a key is available (the process holds fewer than `PTHREAD_KEYS_MAX`).
    public init(_ make: @escaping @Sendable () -> Value) {
        var key = pthread_key_t()
        let result = pthread_key_create(&key) { pointer in
            // At the thread's exit: the reference taken in `value`.
            guard let pointer else { return }
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        }
        precondition(result == 0, "pthread_key_create failed (\(result)): the process is out of thread-local keys")
        self.key = key
        self.make = make
    }

    /// This thread's object.
    public var value: Value {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<Value>.fromOpaque(pointer).takeUnretainedValue()
        }
        let value = make()
        // A failure (ENOMEM) leaves the slot empty: the object then lives for this call only.
        _ = pthread_setspecific(key, Unmanaged.passRetained(value).toOpaque())
        return value
    }
}
