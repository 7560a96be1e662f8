/// The children of an ``AccessNode``, by entry name.
///
/// A dictionary keyed by the name's bytes, hashed as one buffer: `[UInt8]`'s own `Hashable` feeds the hasher a byte
/// at a time, which cost the daemon about 3,400 instructions per claim (README, "Instructions per call").
///
/// Not thread-safe: owned by one ``Arbiter``, like its node.
struct ChildNodes {
    /// An entry name whose hash is taken over its bytes at once (``ByteKey``).
    typealias Name = ByteKey

    private var nodes: [Name: AccessNode] = [:]

    subscript(name: [UInt8]) -> AccessNode? {
        get { nodes[Name(name)] }
        set { nodes[Name(name)] = newValue }
    }

    var values: Dictionary<Name, AccessNode>.Values { nodes.values }
    var isEmpty: Bool { nodes.isEmpty }
}
