import FCCore

/// A path as a dictionary key compared by its UTF-8 bytes: `String`'s own equality is Unicode canonical equivalence,
/// under which `café` spelled precomposed (NFC) and decomposed (NFD) are one key, while Linux names them two files
/// (issue 39: the canonical file cache handed one file's key to the other).
///
/// The bytes may be the tail of a longer string (``init(_:droppingFirst:)``): a path read from a `file:` URL's string
/// is looked up in the caches without being copied out of it (issue 39: the copy was a twentieth of a leased read).
struct PathBytes: Hashable, Sendable {
    /// The string the bytes are in (its UTF-8 contiguous), and where they start in it.
    private let string: String
    private let start: Int

    init(_ path: String) {
        var path = path
        path.makeContiguousUTF8()
        self.string = path
        self.start = 0
    }

    /// The bytes of `string` after its first `count`.
    ///
    /// - Precondition: `count` is at most the string's UTF-8 length and falls between two scalars.
    init(_ string: String, droppingFirst count: Int) {
        var string = string
        string.makeContiguousUTF8()
        precondition(count <= string.utf8.count, "PathBytes: dropping more bytes than the string has")
        self.string = string
        self.start = count
    }

    /// The path as a `String` of its own (a copy when the bytes are a tail).
    var path: String { start == 0 ? string : String(Substring(string.utf8.dropFirst(start))) }

    /// The number of bytes.
    var count: Int { string.utf8.count - start }

    /// Runs `body` with the bytes.
    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        if let result = string.utf8.withContiguousStorageIfAvailable({
            body(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer($0)[start...]))
        }) {
            return result
        }
        return Array(string.utf8.dropFirst(start)).withUnsafeBytes(body)  // Never: the string was made contiguous.
    }

    /// Runs `body` with the bytes as a NUL-terminated C string: the string's own buffer, offset, with no copy.
    func withCString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try string.withCString { try body($0 + start) }
    }

    /// The same bytes, compared eight at a time (``ByteComparison``: a generic `elementsEqual` took 20 instructions
    /// a byte, a tenth of a leased read, issue 39).
    static func == (a: PathBytes, b: PathBytes) -> Bool {
        guard a.count == b.count else { return false }
        return a.withBytes { a in b.withBytes { b in ByteComparison.equal(a, b) } }
    }

    func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: $0) }
    }
}
