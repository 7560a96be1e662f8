/// Bytes (an entry name, a path) as a dictionary key: hashed as one buffer, since `[UInt8]`'s own `Hashable` feeds the
/// hasher a byte at a time (about 3,400 instructions per claim in the daemon's access tree, README "Instructions per
/// call"), and ordered by their bytes (``ByteComparison``). Names on Linux are bytes: two that differ only in Unicode
/// normalisation are two keys, as they are two files.
///
/// Shared by the access tree's children (``ChildNodes``), the daemon's live query trees and a query's results in the
/// library.
package struct ByteKey: Hashable, Comparable, Sendable {
    package let bytes: [UInt8]

    @inlinable package init(_ bytes: [UInt8]) { self.bytes = bytes }

    @inlinable package func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }

    /// Byte order, a prefix first (UTF-8's order of code points for names that are UTF-8).
    @inlinable package static func < (a: ByteKey, b: ByteKey) -> Bool {
        a.bytes.withUnsafeBytes { x in b.bytes.withUnsafeBytes { y in ByteComparison.precedes(x, y) } }
    }
}
