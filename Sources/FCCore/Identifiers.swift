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
public struct PurposeID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The purpose identifier.
    public var rawValue: String
    /// Creates a purpose from its identifier.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates a purpose from its identifier.
    public init(_ rawValue: String) { self.rawValue = rawValue }
    /// The purpose identifier itself.
    public var description: String { rawValue }
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
