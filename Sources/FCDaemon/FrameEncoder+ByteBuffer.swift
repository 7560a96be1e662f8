import FCProtocol
import NIOCore

extension FrameEncoder {
    /// The frame (length prefix, then body) in a `ByteBuffer` from `allocator`, sized for it: the body is written
    /// into the buffer NIO sends, with no frame-sized array in between (issue 12).
    ///
    /// - Throws: `ProtocolError`, as ``FrameEncoder/encode(_:)``.
    func encode(_ frame: Filecoord_V1_Frame, allocator: ByteBufferAllocator) throws(ProtocolError) -> ByteBuffer {
        let body = try body(of: frame)
        var buffer = allocator.buffer(capacity: frameLengthPrefixSize + body.count)
        buffer.writeInteger(UInt32(body.count), endianness: .big)
        buffer.writeBytes(body)
        return buffer
    }
}
