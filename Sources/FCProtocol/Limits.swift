/// The limits a daemon enforces on each client connection (docs/PROTOCOL.md, "Limits").
///
/// The daemon sends its limits in `HelloReply.limits`, so that a client can refuse locally what the daemon would
/// refuse. What happens when a limit is exceeded:
/// - ``maximumFrameSize``: the frame is malformed; the daemon sends `ProtocolError` and closes the connection.
/// - ``maximumItemsPerClaim``, ``maximumPathLength``: in a `RequestClaim`, that claim fails with `ClaimFailed`
///   `LIMIT_EXCEEDED`; elsewhere the frame is malformed (`ProtocolError`, the connection closes).
/// - ``maximumClaimsPerClient``: the claim fails with `ClaimFailed` `LIMIT_EXCEEDED`; the connection stays.
/// - ``maximumPresentersPerClient``: the registration has no reply to carry a refusal, so it is a protocol error.
///
/// A value type: `Sendable`, usable from any thread.
public struct ProtocolLimits: Hashable, Sendable, CustomStringConvertible {
    /// The largest frame body accepted, in bytes, not counting the 4-byte length prefix. Default 1 MiB; at most
    /// `UInt32.max`.
    public var maximumFrameSize: Int
    /// The most claims one client may have live (requested and neither failed nor finished). Default 10,000.
    public var maximumClaimsPerClient: Int
    /// The most presenters one client may have registered at once. Default 100,000.
    public var maximumPresentersPerClient: Int
    /// The most items one `RequestClaim` may carry. Default 1,000.
    public var maximumItemsPerClaim: Int
    /// The longest path accepted, in bytes, not counting a terminating NUL. Default 4,096 (Linux's `PATH_MAX`).
    public var maximumPathLength: Int

    /// The default frame size limit: 1 MiB.
    public static let defaultMaximumFrameSize = 1 << 20
    /// The default limit on live claims per client: 10,000.
    public static let defaultMaximumClaimsPerClient = 10_000
    /// The default limit on presenters per client: 100,000.
    public static let defaultMaximumPresentersPerClient = 100_000
    /// The default limit on items per claim: 1,000.
    public static let defaultMaximumItemsPerClaim = 1_000
    /// The default path length limit: 4,096 bytes (`PATH_MAX`).
    public static let defaultMaximumPathLength = 4_096
    /// The longest purpose identifier a `RequestClaim` may carry, in bytes: 1,024. Longer fails that claim with
    /// `LIMIT_EXCEEDED`. Not announced in `HelloReply` (a fixed limit of this protocol version).
    public static let maximumPurposeLength = 1_024

    /// The defaults of docs/PROTOCOL.md.
    public static let `default` = ProtocolLimits()

    /// Creates limits; each one defaults to the documented default.
    ///
    /// - Precondition: every limit is positive, and `maximumFrameSize` fits in the 32-bit length prefix.
    public init(
        maximumFrameSize: Int = ProtocolLimits.defaultMaximumFrameSize,
        maximumClaimsPerClient: Int = ProtocolLimits.defaultMaximumClaimsPerClient,
        maximumPresentersPerClient: Int = ProtocolLimits.defaultMaximumPresentersPerClient,
        maximumItemsPerClaim: Int = ProtocolLimits.defaultMaximumItemsPerClaim,
        maximumPathLength: Int = ProtocolLimits.defaultMaximumPathLength
    ) {
        precondition(maximumFrameSize > 0 && maximumFrameSize <= Int(UInt32.max), "maximumFrameSize out of range")
        precondition(maximumClaimsPerClient > 0, "maximumClaimsPerClient must be positive")
        precondition(maximumPresentersPerClient > 0, "maximumPresentersPerClient must be positive")
        precondition(maximumItemsPerClaim > 0, "maximumItemsPerClaim must be positive")
        precondition(maximumPathLength > 0, "maximumPathLength must be positive")
        self.maximumFrameSize = maximumFrameSize
        self.maximumClaimsPerClient = maximumClaimsPerClient
        self.maximumPresentersPerClient = maximumPresentersPerClient
        self.maximumItemsPerClaim = maximumItemsPerClaim
        self.maximumPathLength = maximumPathLength
    }

    /// Every limit by name, on one line, for logs.
    public var description: String {
        "frame \(maximumFrameSize) B, claims/client \(maximumClaimsPerClient), "
            + "presenters/client \(maximumPresentersPerClient), items/claim \(maximumItemsPerClaim), "
            + "path \(maximumPathLength) B"
    }
}
