/// A connected client (one process's connection to the arbiter). Assigned by the host, unique for its lifetime.
public struct ClientID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "client#\(rawValue)" }
    public static func < (lhs: ClientID, rhs: ClientID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A registered presenter. Assigned by the host, unique across all clients.
public struct PresenterID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "presenter#\(rawValue)" }
    public static func < (lhs: PresenterID, rhs: PresenterID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One claim: what one `coordinate…`/`prepare…` call asks for. Assigned by the host, unique across all clients.
public struct ClaimID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "claim#\(rawValue)" }
    public static func < (lhs: ClaimID, rhs: ClaimID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One `NSFileCoordinator` instance, unique within its client.
public struct CoordinatorID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "coordinator#\(rawValue)" }
}

/// A coordinator's `purposeIdentifier`: claims with equal purposes never block each other, even across processes.
public struct PurposeID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// A message to a presenter that needs a reply. Assigned by the arbiter.
public struct RequestID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "request#\(rawValue)" }
    public static func < (lhs: RequestID, rhs: RequestID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A version of an item in the version store (`NSFileVersion`), named by the store.
public struct VersionID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}
