/// A canonical absolute item path, held as raw byte components.
///
/// Linux names are bytes, not Unicode strings: two names that differ only in Unicode normalisation are two different
/// files, so components are compared byte for byte. `ItemPath` does lexical normalisation only: `.` components,
/// repeated slashes and trailing slashes are dropped and `..` removes the previous component (at the root it stays
/// at the root, as `/..` is `/` on POSIX). Resolving symbolic links and case-insensitive directories needs the file
/// system and happens outside `FCCore` (docs/SEMANTICS.md §4).
///
/// Ordering is lexicographic by components, then by length, for deterministic listings. Multi-item claims need no
/// lock order: the arbiter grants all of a claim's items in one step or none (docs/SEMANTICS.md §2 rule 6), which is
/// what keeps two processes taking the same pair in opposite order from deadlocking.
public struct ItemPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The path's components, root first. The root itself has none.
    public private(set) var components: [[UInt8]]

    /// The root directory, `/`.
    public static let root = ItemPath(components: [])

    /// Hashes each component's bytes as one buffer. The synthesised hash fed the hasher a byte at a time (`[UInt8]`'s
    /// own `Hashable`): a third of the hashing a query's gathering of 100,000 items did (Benchmarks/README.md, "Live
    /// queries"). Each component's length goes first, so that `a/bc` and `ab/c` do not feed the same bytes.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(components.count)
        for component in components {
            hasher.combine(component.count)
            component.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    /// Creates a path from components that are already canonical (non-empty, no `/`, not `.` or `..`).
    ///
    /// - Precondition: each component is non-empty and contains neither `/` nor NUL.
    public init(components: [[UInt8]]) {
        for component in components {
            precondition(ItemPath.isValidComponent(component), "invalid path component")
        }
        self.components = components
    }

    /// Parses and lexically normalises an absolute path given as bytes.
    ///
    /// Contiguous bytes (`[UInt8]`, `Data`, a buffer) are read in place, in one pass: a caller in another module
    /// reaches this unspecialised, and iterating a generic collection byte by byte there cost the daemon a tenth of
    /// a claim's instructions (issue 23's profile); other collections are copied into an array first.
    ///
    /// - Throws: ``ItemPathError`` if the path is empty, relative, or contains a NUL byte.
    public init(absolute bytes: some Collection<UInt8>) throws(ItemPathError) {
        let parsed =
            bytes.withContiguousStorageIfAvailable(ItemPath.components(parsing:))
            ?? Array(bytes).withUnsafeBufferPointer(ItemPath.components(parsing:))
        self.components = try parsed.get()
    }

    /// The components of the absolute path `bytes`, with `.` and empty components dropped and `..` applied
    /// lexically (above the root it stays at the root). O(bytes).
    private static func components(parsing bytes: UnsafeBufferPointer<UInt8>) -> Result<[[UInt8]], ItemPathError> {
        let slash = UInt8(ascii: "/")
        let dot = UInt8(ascii: ".")
        guard let first = bytes.first else { return .failure(.empty) }
        guard first == slash else { return .failure(.relative) }
        var result: [[UInt8]] = []
        var start = 1
        for index in 1...bytes.count {
            let byte = index < bytes.count ? bytes[index] : slash
            if byte == 0 { return .failure(.containsNUL) }
            guard byte == slash else { continue }
            let component = UnsafeBufferPointer(rebasing: bytes[start..<index])
            start = index + 1
            switch component.count {
            case 0: continue
            case 1 where component[0] == dot: continue
            case 2 where component[0] == dot && component[1] == dot:
                if !result.isEmpty { result.removeLast() }
            default: result.append(Array(component))
            }
        }
        return .success(result)
    }

    /// Parses and lexically normalises an absolute path given as a string (its UTF-8 bytes).
    ///
    /// - Throws: ``ItemPathError`` if the path is empty, relative, or contains a NUL byte.
    public init(absolute string: String) throws(ItemPathError) {
        try self.init(absolute: Array(string.utf8))
    }

    /// `true` for `/`.
    public var isRoot: Bool { components.isEmpty }

    /// The number of components (0 for the root).
    public var depth: Int { components.count }

    /// The length of ``bytes`` (the path spelled with `/`), without spelling it. O(components).
    public var byteCount: Int { components.isEmpty ? 1 : components.reduce(0) { $0 + $1.count + 1 } }

    /// The last component, or `nil` for the root.
    public var lastComponent: [UInt8]? { components.last }

    /// The enclosing directory, or `nil` for the root.
    public var parent: ItemPath? {
        guard !components.isEmpty else { return nil }
        return ItemPath(trusted: Array(components.dropLast()))
    }

    /// The path with one more component appended.
    public func appending(_ component: [UInt8]) -> ItemPath {
        precondition(ItemPath.isValidComponent(component), "invalid path component")
        return ItemPath(trusted: components + [component])
    }

    /// The prefix made of the first `count` components.
    public func prefix(_ count: Int) -> ItemPath {
        ItemPath(trusted: Array(components.prefix(count)))
    }

    /// `true` when `self` is `other` or lies inside it.
    public func isEqualOrDescendant(of other: ItemPath) -> Bool {
        other.components.count <= components.count && startsWith(other)
    }

    /// Whether the first components of `self` are those of `other`, compared eight bytes at a time
    /// (``ByteComparison``): `starts(with:)` compared them a byte at a time through generic code, which every claim a
    /// lease decides paid (issue 39).
    private func startsWith(_ other: ItemPath) -> Bool {
        for index in other.components.indices {
            let same = components[index].withUnsafeBytes { mine in
                other.components[index].withUnsafeBytes { theirs in ByteComparison.equal(mine, theirs) }
            }
            guard same else { return false }
        }
        return true
    }

    /// `true` when `self` lies strictly inside `other`.
    public func isDescendant(of other: ItemPath) -> Bool {
        other.components.count < components.count && startsWith(other)
    }

    /// The path this one becomes when the item at `from` is moved to `to`; `nil` if `self` is not at or under `from`.
    public func relocated(from: ItemPath, to: ItemPath) -> ItemPath? {
        guard isEqualOrDescendant(of: from) else { return nil }
        return ItemPath(trusted: to.components + components.dropFirst(from.components.count))
    }

    /// The bytes after the last `.` of the last component (not counting a leading dot), or `nil` when there is none.
    public var pathExtension: [UInt8]? {
        guard let last = components.last,
            let dot = last.lastIndex(of: ItemPath.dot),
            dot != last.startIndex,
            dot != last.index(before: last.endIndex)
        else { return nil }
        return Array(last[last.index(after: dot)...])
    }

    /// The path as bytes, `/` separated, starting with `/`.
    public var bytes: [UInt8] {
        if components.isEmpty { return [ItemPath.slash] }
        var out: [UInt8] = []
        out.reserveCapacity(components.reduce(0) { $0 + $1.count + 1 })
        for component in components {
            out.append(ItemPath.slash)
            out.append(contentsOf: component)
        }
        return out
    }

    /// Writes the path's bytes (``bytes``, ``byteCount`` of them) into `buffer`, which holds at least that many,
    /// without making an array.
    public func copyBytes(into buffer: UnsafeMutableBufferPointer<UInt8>) {
        precondition(buffer.count >= byteCount, "buffer too small for the path")
        guard !components.isEmpty else {
            buffer[0] = ItemPath.slash
            return
        }
        var index = 0
        for component in components {
            buffer[index] = ItemPath.slash
            index += 1
            for byte in component {
                buffer[index] = byte
                index += 1
            }
        }
    }

    /// The path as a string; bytes that are not valid UTF-8 are shown as U+FFFD.
    public var description: String { String(decoding: bytes, as: UTF8.self) }

    /// Compares component by component, byte for byte; a path sorts before the paths inside it.
    public static func < (lhs: ItemPath, rhs: ItemPath) -> Bool {
        for (a, b) in zip(lhs.components, rhs.components) where a != b {
            return a.lexicographicallyPrecedes(b)
        }
        return lhs.components.count < rhs.components.count
    }

    static let slash = UInt8(ascii: "/")
    static let dot = UInt8(ascii: ".")

    /// Whether `component` can be one of a path's components: non-empty, no `/` or NUL, not `.` or `..`.
    public static func isValidComponent(_ component: [UInt8]) -> Bool {
        !component.isEmpty && !component.contains(slash) && !component.contains(0) && component != [dot]
            && component != [dot, dot]
    }

    private init(trusted components: [[UInt8]]) {
        self.components = components
    }
}

/// Why a path could not be made canonical.
public enum ItemPathError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The path was empty.
    case empty
    /// The path did not start with `/`; only absolute paths are coordinated (docs/SEMANTICS.md §4).
    case relative
    /// The path contained a NUL byte, which no Linux file name can hold.
    case containsNUL

    /// What is wrong with the path, for error messages.
    public var description: String {
        switch self {
        case .empty: "the path is empty"
        case .relative: "the path is relative; only absolute paths can be coordinated"
        case .containsNUL: "the path contains a NUL byte"
        }
    }
}
