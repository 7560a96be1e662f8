import Foundation

extension Filecoord_V1_DumpReply {
    /// A dump's JSON as `DumpReply` messages whose frames each fit in `maximumFrameSize`: every one but the last
    /// has `more` set. An empty dump is one message.
    ///
    /// - Precondition: `maximumFrameSize` leaves room for the frame's own fields (at least 64 bytes).
    public static func chunks(of json: [UInt8], maximumFrameSize: Int) -> [Filecoord_V1_DumpReply] {
        precondition(maximumFrameSize >= 64, "a frame must hold more than its own fields")
        // Room for the frame's fields: the payload's tag and length, the bytes' tag and length, and `more`.
        let chunk = maximumFrameSize - 32
        var replies: [Filecoord_V1_DumpReply] = []
        var start = 0
        repeat {
            let end = min(json.count, start + chunk)
            var reply = Filecoord_V1_DumpReply()
            reply.json = Data(json[start..<end])
            reply.more = end < json.count
            replies.append(reply)
            start = end
        } while start < json.count
        return replies
    }
}
