public import FCCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Conversions between the wire messages of filecoord.proto and FCCore's value types.
//
// Ids are copied as they are: presenter, claim and coordinator ids on the wire are the client's own numbering, and
// the daemon maps them to its own (and back) around these conversions. Conversions from the wire validate what they
// read (paths through `ItemPath(absolute:)`, enum values, limits) and throw a `ProtocolError`; conversions to the
// wire cannot fail. All of them are pure functions of values: usable from any thread.

// MARK: - Paths

extension ItemPath {
    /// Parses a path received on the wire: raw bytes, absolute, no NUL, at most `limits.maximumPathLength` bytes.
    /// The path is normalised lexically, as `ItemPath(absolute:)` does.
    ///
    /// - Throws: ``ProtocolError`` with `.pathTooLong`, or `.invalidPath` for an empty or relative path or one
    ///   containing NUL.
    public init(wire bytes: some Collection<UInt8>, limits: ProtocolLimits = .default) throws(ProtocolError) {
        self = try decodePath(bytes, field: "path", limits: limits)
    }
}

/// `field` names the field in an error only: it is not spelled for a valid path (a frame's paths are decoded on the
/// daemon's loop for every claim).
func decodePath(
    _ bytes: some Collection<UInt8>,
    field: @autoclosure () -> String,
    limits: ProtocolLimits
) throws(ProtocolError)
    -> ItemPath
{
    let count = bytes.count
    guard count <= limits.maximumPathLength else {
        throw ProtocolError(
            .pathTooLong,
            "\(field()) is \(count) bytes long; the limit is \(limits.maximumPathLength)"
        )
    }
    do {
        return try ItemPath(absolute: bytes)
    } catch {
        throw ProtocolError(.invalidPath, "\(field()): \(error)")
    }
}

func decodePaths(
    _ list: [Data],
    field: @autoclosure () -> String,
    limits: ProtocolLimits
) throws(ProtocolError) -> [ItemPath] {
    var paths: [ItemPath] = []
    paths.reserveCapacity(list.count)
    for (index, bytes) in list.enumerated() {
        paths.append(try decodePath(bytes, field: "\(field())[\(index)]", limits: limits))
    }
    return paths
}

/// A path's bytes, written straight into the message's `Data` from its components (no intermediate array).
func encodePath(_ path: ItemPath) -> Data {
    let slash = UInt8(ascii: "/")
    guard !path.isRoot else { return Data([slash]) }
    // Written in place into a buffer of the right size: `Data.append` per slash and component went through Data's
    // representations each time, 85% of the frames of a query's gathering (Benchmarks/README.md, "Live queries").
    var data = Data(count: path.components.reduce(0) { $0 + $1.count + 1 })
    data.withUnsafeMutableBytes { buffer in
        var offset = 0
        for component in path.components {
            buffer[offset] = slash
            offset += 1
            component.withUnsafeBytes { bytes in
                buffer.baseAddress!.advanced(by: offset).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            }
            offset += component.count
        }
    }
    return data
}

// MARK: - Limits

extension Filecoord_V1_Limits {
    /// The limits as `HelloReply` carries them (each clamped to `UInt32.max`).
    public init(_ limits: ProtocolLimits) {
        self.init()
        maximumFrameSize = UInt32(clamping: limits.maximumFrameSize)
        maximumClaimsPerClient = UInt32(clamping: limits.maximumClaimsPerClient)
        maximumPresentersPerClient = UInt32(clamping: limits.maximumPresentersPerClient)
        maximumItemsPerClaim = UInt32(clamping: limits.maximumItemsPerClaim)
        maximumPathLength = UInt32(clamping: limits.maximumPathLength)
    }
}

extension ProtocolLimits {
    /// The limits a daemon announced in `HelloReply.limits`; a field that is 0 (absent) takes its default.
    public init(wire: Filecoord_V1_Limits) {
        func value(_ field: UInt32, _ fallback: Int) -> Int { field == 0 ? fallback : Int(field) }
        self.init(
            maximumFrameSize: value(wire.maximumFrameSize, ProtocolLimits.defaultMaximumFrameSize),
            maximumClaimsPerClient: value(wire.maximumClaimsPerClient, ProtocolLimits.defaultMaximumClaimsPerClient),
            maximumPresentersPerClient: value(
                wire.maximumPresentersPerClient,
                ProtocolLimits.defaultMaximumPresentersPerClient
            ),
            maximumItemsPerClaim: value(wire.maximumItemsPerClaim, ProtocolLimits.defaultMaximumItemsPerClaim),
            maximumPathLength: value(wire.maximumPathLength, ProtocolLimits.defaultMaximumPathLength)
        )
    }
}
