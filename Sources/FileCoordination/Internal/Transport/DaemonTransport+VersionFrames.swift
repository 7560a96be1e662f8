import FCProtocol
import FCVersionStore
import Foundation

// The version store's messages on the wire (docs/PROTOCOL.md §8): the one place where the client's
// ``VersionStoreRequest`` and ``VersionStoreReply`` meet their protobuf types.

extension VersionStoreRequest {
    /// The `VersionStoreRequest` message for this call, with the table's `requestID`.
    func wire(requestID: UInt64) -> Filecoord_V1_VersionStoreRequest {
        var request = Filecoord_V1_VersionStoreRequest()
        request.requestID = requestID
        switch self {
        case .list(let itemPath):
            request.operation = .list
            request.itemPath = Data(itemPath.utf8)
        case .find(let id):
            request.operation = .find
            request.versionID = id
        case .add(let item, let contentsPath, let byMoving, let conflict):
            request.operation = .add
            request.itemPath = Data(item.utf8)
            request.contentsPath = Data(contentsPath.utf8)
            request.byMoving = byMoving
            if let conflict {
                request.savingComputer = conflict.computer
                if let originator = conflict.originator { request.originator = originator }
            }
        case .remove(let id):
            request.operation = .remove
            request.versionID = id
        case .removeAll(let itemPath):
            request.operation = .removeAll
            request.itemPath = Data(itemPath.utf8)
        case .resolve(let id):
            request.operation = .resolve
            request.versionID = id
        case .discardable(let id):
            request.operation = .discardable
            request.versionID = id
        case .replace(let itemPath, let id, let byMoving):
            request.operation = .replace
            request.itemPath = Data(itemPath.utf8)
            request.versionID = id
            request.byMoving = byMoving
        case .moved(let from, let to):
            request.operation = .moved
            request.itemPath = Data(from.utf8)
            request.toPath = Data(to.utf8)
        case .temporaryDirectory:
            request.operation = .temporaryDirectory
        }
        return request
    }
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
