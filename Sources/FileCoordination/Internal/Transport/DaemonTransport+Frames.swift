import FCCore
import FCProtocol
import FCSystem
import Foundation
import Logging
import Synchronization
import SystemPackage

// Frames from the daemon become the client's ``InboundMessage``s.

extension DaemonTransport {
    func handle(_ frame: Filecoord_V1_Frame) {
        guard let delegate else { return }
        switch frame.payload {
        case .granted(let granted)?:
            let claim = ClaimID(granted.claimID)
            claimEnded(claim)
            guard let paths = try? granted.itemPaths() else { return }
            delegate.receive(.granted(claim, paths: paths))
        case .claimFailed(let failed)?:
            let claim = ClaimID(failed.claimID)
            claimEnded(claim)
            let error =
                if let reason = try? ClaimFailedReason(wire: failed) {
                    ClaimFailureMapping.error(for: reason) { delegate.takePresenterError(of: $0) }
                } else {
                    ClaimFailureMapping.error(forUnreadable: failed)
                }
            delegate.receive(.failed(claim, error))
        case .presenterMessage(let wire)?:
            guard let message = try? PresenterMessage(wire: wire, client: client) else { return }
            delegate.receive(.presenter(message))
        case .versionStoreReply(let reply)?:
            delegate.receive(.versionReply(VersionStoreReply(wire: reply)))
            versionRequestEnded()
        case .protocolError(let error)?:
            logger().error("filecoordd closed the connection: \(error.reason)")
        case .watchUnavailable(let message)?:
            // Issue 13: changes made without coordination will not reach this presenter; coordination goes on.
            logger().warning(
                "changes made without coordination will not reach a presenter: its directory cannot be watched",
                metadata: [
                    "presenter.id": "\(message.presenterID)",
                    "item.path": "\(String(decoding: message.directory, as: UTF8.self))",
                    "reason": "\(message.reason)",
                ]
            )
        default:
            break
        }
    }
}
