import FCProtocol
import FCVersionStore
import Foundation

/// The daemon's answer to one version store request (issue 15), in the client's terms: what
/// ``InboundMessage/versionReply(_:)`` carries from the connection to the call that waits for it
/// (``VersionRequestTable``). Made from the wire by the transport only (``init(wire:)``).
///
/// A value type: `Sendable`, handed from the connection's reading thread to the blocked call.
struct VersionStoreReply: Sendable {
    /// What a request listed, found, added or removed.
    struct Answer: Sendable {
        var versions: [StoredVersion]
        /// For `discardable`: whether the version was there.
        var found: Bool
        /// For `replace` and `temporaryDirectory`: the path made.
        var path: String
    }

    /// The request answered.
    var requestID: UInt64
    /// The answer, or the store's refusal.
    var result: Result<Answer, VersionStoreError>
}

extension VersionStoreReply {
    /// The reply a `VersionStoreReply` frame carries (docs/PROTOCOL.md §8).
    init(wire reply: Filecoord_V1_VersionStoreReply) {
        requestID = reply.requestID
        guard reply.errorCode == 0 else {
            let code: VersionStoreError.Code =
                switch reply.errorCode {
                case 1: .noSuchFile
                case 2: .noSuchVersion
                case 4: .ioFailure
                default: .storeUnavailable
                }
            result = .failure(VersionStoreError(code, reply.errorMessage))
            return
        }
        result = .success(
            Answer(
                versions: reply.versions.map(Self.stored),
                found: reply.found,
                path: String(decoding: reply.path, as: UTF8.self)
            )
        )
    }

    private static func stored(_ record: Filecoord_V1_StoredVersionRecord) -> StoredVersion {
        StoredVersion(
            id: record.id,
            itemPath: String(decoding: record.itemPath, as: UTF8.self),
            name: record.name,
            contentsPath: String(decoding: record.contentsPath, as: UTF8.self),
            savingComputer: record.hasSavingComputer ? record.savingComputer : nil,
            originator: record.hasOriginator ? record.originator : nil,
            modificationDate: Date(timeIntervalSince1970: record.modificationDate),
            addedDate: Date(timeIntervalSince1970: record.addedDate),
            isConflict: record.isConflict,
            isResolved: record.isResolved,
            isDiscardable: record.isDiscardable,
            itemGoneSince: nil
        )
    }
}
