/// Byte-for-byte comparison of two buffers, eight bytes at a time: the generic `elementsEqual` and `starts(with:)`
/// took a call and a branch per byte, which path keys and path prefixes paid on every claim (issue 39). Shared by
/// ``ItemPath``'s prefix test, the library's path caches and the order of a live query's results.
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

    /// Whether `a` comes before `b` in byte order (a prefix first), eight bytes at a time: a live query sorts its
    /// results by path bytes (100,000 of them at the end of a gathering).
    package static func precedes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        let common = min(a.count, b.count)
        var offset = 0
        while offset + 8 <= common {
            // Big-endian, so that the integers compare as the bytes do.
            let x = UInt64(bigEndian: a.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            let y = UInt64(bigEndian: b.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            if x != y { return x < y }
            offset += 8
        }
        while offset < common {
            if a[offset] != b[offset] { return a[offset] < b[offset] }
            offset += 1
        }
        return a.count < b.count
    }
}
