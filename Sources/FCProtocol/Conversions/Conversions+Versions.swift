public import FCCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Version changes.
// Conversions between filecoord.proto's messages and FCCore's values; the rules are in Conversions+Paths.swift.

// MARK: - Versions

extension VersionChange {
    /// The change a `VersionChanged` or `PresenterMessage` carries.
    ///
    /// - Throws: ``ProtocolError`` with `.invalidValue` for an unspecified or unknown kind, or an empty version id.
    public init(wireKind: Filecoord_V1_VersionChangeKind, versionID: String) throws(ProtocolError) {
        guard !versionID.isEmpty else {
            throw ProtocolError(.invalidValue, "a version change names no version")
        }
        let id = VersionID(versionID)
        switch wireKind {
        case .added: self = .added(id)
        case .removed: self = .removed(id)
        case .resolved: self = .resolved(id)
        case .unspecified, .UNRECOGNIZED:
            throw ProtocolError(.invalidValue, "version change kind \(wireKind.rawValue) is not valid")
        }
    }

    /// The kind, as the wire carries it.
    public var wireKind: Filecoord_V1_VersionChangeKind {
        switch self {
        case .added: .added
        case .removed: .removed
        case .resolved: .resolved
        }
    }

    /// The version the change is about.
    public var versionID: VersionID {
        switch self {
        case .added(let id), .removed(let id), .resolved(let id): id
        }
    }
}

extension Filecoord_V1_VersionChanged {
    /// `VersionChanged` inside the client's claim `claim`.
    public init(claim: ClaimID, path: ItemPath, change: VersionChange) {
        self.init()
        claimID = claim.rawValue
        self.path = encodePath(path)
        kind = change.wireKind
        versionID = change.versionID.rawValue
    }
}
