/// A connected client (one process's connection to the arbiter). Assigned by the host, unique for its lifetime.
public struct ClientID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The raw number.
    public var rawValue: UInt64
    /// Creates an id from its raw number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Creates an id from its raw number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// `client#` and the number, for logs.
    public var description: String { "client#\(rawValue)" }
    /// Orders ids by their raw number.
    public static func < (lhs: ClientID, rhs: ClientID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A registered presenter. Assigned by the host, unique across all clients.
public struct PresenterID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The raw number.
    public var rawValue: UInt64
    /// Creates an id from its raw number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Creates an id from its raw number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// `presenter#` and the number, for logs.
    public var description: String { "presenter#\(rawValue)" }
    /// Orders ids by their raw number.
    public static func < (lhs: PresenterID, rhs: PresenterID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One claim: what one `coordinate…`/`prepare…` call asks for. Assigned by the host, unique across all clients.
public struct ClaimID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The raw number.
    public var rawValue: UInt64
    /// Creates an id from its raw number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Creates an id from its raw number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// `claim#` and the number, for logs.
    public var description: String { "claim#\(rawValue)" }
    /// Orders ids by their raw number.
    public static func < (lhs: ClaimID, rhs: ClaimID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One `NSFileCoordinator` instance, unique within its client.
public struct CoordinatorID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The raw number.
    public var rawValue: UInt64
    /// Creates an id from its raw number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Creates an id from its raw number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// `coordinator#` and the number, for logs.
    public var description: String { "coordinator#\(rawValue)" }
}

/// A coordinator's `purposeIdentifier`: claims with equal purposes never block each other, even across processes.
///
/// A purpose made as a UUID (``init(uuidBytes:)``, every coordinator's own unless the app sets one) is kept as its 16
/// bytes and spelled only when asked (``rawValue``): a coordinator made for one leased read never spells it, and the
/// spelling (a 36-character `String`, an allocation) was a tenth of such a read's instructions (issue 39). Two
/// purposes are equal when their spellings are, however they are kept.
public struct PurposeID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    private enum Storage: Sendable {
        case text(String)
        /// A UUID's bytes, big-endian: bytes 0-7, then 8-15.
        case uuid(UInt64, UInt64)
    }
    private let storage: Storage

    /// The purpose identifier.
    public var rawValue: String {
        switch storage {
        case .text(let text): text
        case .uuid(let high, let low): Self.spell(high, low)
        }
    }
    /// Creates a purpose from its identifier.
    public init(rawValue: String) { storage = .text(rawValue) }
    /// Creates a purpose from its identifier.
    public init(_ rawValue: String) { storage = .text(rawValue) }
    /// A purpose spelled as the UUID `bytes` (upper-case hex, 8-4-4-4-12, as `UUID.uuidString`), kept as bytes.
    public init(uuidBytes high: UInt64, _ low: UInt64) { storage = .uuid(high, low) }
    /// The purpose identifier itself.
    public var description: String { rawValue }

    /// The length of ``rawValue`` in UTF-8 bytes, without spelling a UUID's.
    public var utf8Count: Int {
        switch storage {
        case .text(let text): text.utf8.count
        case .uuid: 36
        }
    }

    /// Equal spellings (two UUIDs' bytes are compared as they are).
    public static func == (a: PurposeID, b: PurposeID) -> Bool {
        if case .uuid(let aHigh, let aLow) = a.storage, case .uuid(let bHigh, let bLow) = b.storage {
            return aHigh == bHigh && aLow == bLow
        }
        return a.rawValue == b.rawValue
    }

    /// Hashes the spelling, so that a UUID kept as bytes and the same UUID as text hash alike.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(rawValue)
    }

    private static func spell(_ high: UInt64, _ low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            var out = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    buffer[out] = UInt8(ascii: "-")
                    out += 1
                }
                let word = index < 8 ? high : low
                let byte = UInt8(truncatingIfNeeded: word >> (56 - 8 * UInt64(index % 8)))
                buffer[out] = hexDigit(byte >> 4)
                buffer[out + 1] = hexDigit(byte & 0x0F)
                out += 2
            }
            return out
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }
}

/// A message to a presenter that needs a reply. Assigned by the arbiter.
public struct RequestID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The raw number.
    public var rawValue: UInt64
    /// Creates an id from its raw number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Creates an id from its raw number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// `request#` and the number, for logs.
    public var description: String { "request#\(rawValue)" }
    /// Orders ids by their raw number.
    public static func < (lhs: RequestID, rhs: RequestID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A version of an item in the version store (`NSFileVersion`), named by the store.
public struct VersionID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The store's name for the version.
    public var rawValue: String
    /// Creates an id from the store's name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates an id from the store's name.
    public init(_ rawValue: String) { self.rawValue = rawValue }
    /// The store's name itself.
    public var description: String { rawValue }
}
