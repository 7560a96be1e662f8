/// Byte-for-byte comparison of two buffers, eight bytes at a time: the generic `elementsEqual` and `starts(with:)`
/// took a call and a branch per byte, which path keys and path prefixes paid on every claim (issue 39). Shared by
/// ``ItemPath``'s prefix test and the library's path caches.
package enum ByteComparison {
    /// Whether `a` and `b` hold the same bytes (false for different lengths).
    package static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var offset = 0
        while offset + 8 <= a.count {
            guard
                a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    == b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            else { return false }
            offset += 8
        }
        while offset < a.count {
            guard a[offset] == b[offset] else { return false }
            offset += 1
        }
        return true
    }
}
