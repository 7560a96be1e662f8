import CFCLinux
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A small file of 64-bit words mapped shared (`MAP_SHARED`) into this process, for words another process of the
/// same user maps too: the lease counters of clients that have no thread to answer a recall (issue 42;
/// docs/PROTOCOL.md section 10.1). Created new (`O_EXCL`, mode 0600, close-on-exec) in a folder private to the user,
/// zero-filled; its descriptor is closed once the file is mapped. ``remove()`` unmaps and unlinks it (once; also at
/// `deinit`); the other process keeps its own mapping for as long as it likes.
///
/// Every word is read and written atomically and sequentially consistent (`cfc_atomics.h`): the other process is
/// trusted no further than its user, so a caller checks what it reads and never indexes with it.
///
/// - Important: Not thread-safe: one owner (the daemon's event loop).
public final class SharedWordFile {
    /// The file's path, as created.
    public let path: String
    /// How many words it holds.
    public let count: Int
    private var base: UnsafeMutablePointer<UInt64>?

    private init(path: String, count: Int, base: UnsafeMutablePointer<UInt64>) {
        self.path = path
        self.count = count
        self.base = base
    }

    deinit { remove() }

    /// Creates the file at `path` (which must not exist) holding `words` zero words, and maps it.
    ///
    /// - Throws: the `Errno` of `open`, `ftruncate` or `mmap`; nothing is left behind.
    public static func create(at path: String, words: Int) throws(Errno) -> SharedWordFile {
        precondition(words > 0, "a shared word file holds at least one word")
        let length = words * MemoryLayout<UInt64>.stride
        let descriptor = try retryOnInterrupt { libcOpen(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }
        defer { _ = libcClose(descriptor) }
        do {
            _ = try retryOnInterrupt { ftruncate(descriptor, off_t(length)) }
        } catch {
            _ = unlink(path)
            throw error
        }
        let mapped = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0)
        guard let mapped, mapped != MAP_FAILED else {
            let error = Errno(rawValue: errno)
            _ = unlink(path)
            throw error
        }
        return SharedWordFile(path: path, count: words, base: mapped.assumingMemoryBound(to: UInt64.self))
    }

    /// The word at `index` (0 once removed).
    public func load(_ index: Int) -> UInt64 {
        guard let word = word(index) else { return 0 }
        return cfc_atomic_load_u64(word)
    }

    /// Stores `value` at `index`.
    public func store(_ index: Int, _ value: UInt64) {
        guard let word = word(index) else { return }
        cfc_atomic_store_u64(word, value)
    }

    /// Sets `bits` in the word at `index`; returns the word before (0 once removed).
    public func fetchOr(_ index: Int, _ bits: UInt64) -> UInt64 {
        guard let word = word(index) else { return 0 }
        return cfc_atomic_fetch_or_u64(word, bits)
    }

    /// Replaces the word at `index` with `desired` if it is `expected`; `false` when it was not (or once removed).
    public func compareExchange(_ index: Int, expected: UInt64, desired: UInt64) -> Bool {
        guard let word = word(index) else { return false }
        return cfc_atomic_compare_exchange_u64(word, expected, desired) != 0
    }

    /// Unmaps the file and unlinks it; later reads see 0 and writes do nothing. Idempotent.
    public func remove() {
        guard let mapped = base else { return }
        base = nil
        _ = munmap(mapped, count * MemoryLayout<UInt64>.stride)
        _ = unlink(path)
    }

    private func word(_ index: Int) -> UnsafeMutablePointer<UInt64>? {
        precondition(index >= 0 && index < count, "shared word \(index) outside 0..<\(count)")
        return base.map { $0 + index }
    }
}
