public import FCProtocol
import Foundation

/// Frames as a client sends them, built field by field (not through the library's conversions), for tests that
/// speak the protocol themselves: raw clients of a real daemon, and the daemon's handlers on embedded channels.
public enum WireFrames {
    /// A `RequestClaim` of one write of `path` (the bytes as given, not canonicalised), with `id` as its claim and
    /// coordinator id.
    public static func writeClaim(_ id: UInt64, path: String, purpose: String) -> Filecoord_V1_Frame {
        var item = Filecoord_V1_ClaimItem()
        item.path = Data(path.utf8)
        item.write = true
        var request = Filecoord_V1_RequestClaim()
        request.claimID = id
        request.coordinatorID = id
        request.purpose = purpose
        request.items = [item]
        return Filecoord_V1_Frame(.requestClaim(request))
    }
}
