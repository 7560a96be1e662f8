/// A path as a dictionary key compared by its UTF-8 bytes: `String`'s own equality is Unicode canonical equivalence,
/// under which `café` spelled precomposed (NFC) and decomposed (NFD) are one key, while Linux names them two files
/// (issue 39: the canonical file cache handed one file's key to the other).
struct PathBytes: Hashable, Sendable {
    let path: String

    init(_ path: String) {
        var path = path
        path.makeContiguousUTF8()
        self.path = path
    }

    static func == (a: PathBytes, b: PathBytes) -> Bool {
        guard a.path.utf8.count == b.path.utf8.count else { return false }
        return a.path.utf8.withContiguousStorageIfAvailable { a in
            b.path.utf8.withContiguousStorageIfAvailable { b in
                equal(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b))
            }
        }.flatMap { $0 } ?? a.path.utf8.elementsEqual(b.path.utf8)
    }

    /// Whether two buffers of the same length hold the same bytes, compared eight at a time (a generic
    /// `elementsEqual` took 20 instructions a byte: a tenth of a leased read, issue 39).
    private static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
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

    func hash(into hasher: inout Hasher) {
        let hashed: Bool? = path.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
            return true
        }
        if hashed == nil {
            for byte in path.utf8 { hasher.combine(byte) }
        }
    }
}
