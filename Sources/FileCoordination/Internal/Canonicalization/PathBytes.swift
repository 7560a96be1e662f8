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
        a.path.utf8.withContiguousStorageIfAvailable { a in
            b.path.utf8.withContiguousStorageIfAvailable { b in a.elementsEqual(b) }
        }.flatMap { $0 } ?? a.path.utf8.elementsEqual(b.path.utf8)
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
