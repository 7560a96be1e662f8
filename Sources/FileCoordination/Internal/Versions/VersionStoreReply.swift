import FCVersionStore
import Foundation

/// The daemon's answer to one version store request (issue 15), in the client's terms: what
/// ``InboundMessage/versionReply(_:)`` carries from the connection to the call that waits for it
/// (``VersionRequestTable``). Made from the wire by the transport only (``init(wire:)``, in
/// `DaemonTransport+VersionFrames.swift`).
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
