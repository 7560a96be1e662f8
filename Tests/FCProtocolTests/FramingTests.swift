import Foundation
import SwiftProtobuf
import Testing

@testable import FCProtocol

/// The length-prefixed framing: chunking, limits and malformed input.
@Suite struct FramingTests {
    /// Every sample frame, encoded back to back.
    static let stream: [UInt8] = {
        var out: [UInt8] = []
        for frame in Samples.frames {
            do {
                try FrameEncoder().encode(frame, into: &out)
            } catch {
                fatalError("sample \(frame) does not encode: \(error)")
            }
        }
        return out
    }()

    /// A length prefix for `length`.
    static func prefix(_ length: UInt32) -> [UInt8] {
        [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
    }

    @Test func theLengthPrefixIsFourBytesBigEndian() throws {
        let frame = Filecoord_V1_Frame(.cancelClaim(.with { $0.claimID = 300 }))
        let bytes = try FrameEncoder().encode(frame)
        let body: [UInt8] = try frame.serializedBytes()
        #expect(bytes == Self.prefix(UInt32(body.count)) + body)
        #expect(frameLengthPrefixSize == 4)
    }

    @Test func byteAtATime() throws {
        var decoder = FrameDecoder()
        var frames: [Filecoord_V1_Frame] = []
        for byte in Self.stream {
            frames += try decoder.feed([byte])
        }
        #expect(frames == Samples.frames)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func severalFramesInOneChunk() throws {
        var decoder = FrameDecoder()
        #expect(try decoder.feed(Self.stream) == Samples.frames)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test(arguments: [2, 3, 7, 64, 1000])
    func chunksOfAnySize(_ size: Int) throws {
        var decoder = FrameDecoder()
        var frames: [Filecoord_V1_Frame] = []
        var start = 0
        while start < Self.stream.count {
            let end = min(start + size, Self.stream.count)
            frames += try decoder.feed(Self.stream[start..<end])
            start = end
        }
        #expect(frames == Samples.frames)
    }

    @Test func appendThenNextReturnsTheValidFramesBeforeABadOne() throws {
        var decoder = FrameDecoder()
        decoder.append(Self.stream)
        decoder.append(Self.prefix(0))
        var frames: [Filecoord_V1_Frame] = []
        let error = #expect(throws: ProtocolError.self) {
            while let frame = try decoder.next() { frames.append(frame) }
        }
        #expect(error?.code == .emptyFrame)
        #expect(frames == Samples.frames)
    }

    @Test func truncatedInputWaitsForMore() throws {
        let bytes = try FrameEncoder().encode(Samples.frames[4])
        var decoder = FrameDecoder()
        #expect(try decoder.feed(bytes.prefix(2)) == [])
        #expect(try decoder.feed(bytes[2..<(bytes.count - 1)]) == [])
        #expect(decoder.bufferedByteCount == bytes.count - 1)
        #expect(decoder.error == nil)
        #expect(try decoder.feed(bytes.suffix(1)) == [Samples.frames[4]])
        #expect(try decoder.feed([]) == [])
    }

    @Test func oversizedLengthIsRefusedFromThePrefixAlone() throws {
        var decoder = FrameDecoder()
        let error = #expect(throws: ProtocolError.self) { try decoder.feed(Self.prefix(UInt32.max)) }
        #expect(error?.code == .frameTooLarge)
        #expect(error?.reason.contains("4294967295") == true)
        // Nothing of the announced size was reserved.
        #expect(decoder.storageCapacity < 1024)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func theLimitIsInclusive() throws {
        var decoder = FrameDecoder(maximumFrameSize: 16)
        // A 16-byte body is allowed (and malformed here); 17 is refused before its body arrives.
        let atLimit = #expect(throws: ProtocolError.self) {
            try decoder.feed(Self.prefix(16) + [UInt8](repeating: 0xFF, count: 16))
        }
        #expect(atLimit?.code == .malformedFrame)
        var over = FrameDecoder(maximumFrameSize: 16)
        let error = #expect(throws: ProtocolError.self) { try over.feed(Self.prefix(17)) }
        #expect(error?.code == .frameTooLarge)
    }

    @Test func zeroLengthIsRefused() {
        var decoder = FrameDecoder()
        let error = #expect(throws: ProtocolError.self) { try decoder.feed(Self.prefix(0)) }
        #expect(error?.code == .emptyFrame)
    }

    @Test(arguments: [
        [0xFF] as [UInt8],  // a truncated varint tag
        [0x0A, 0x05, 0x08],  // hello, length 5, but only one byte of it
        [0x0A, 0x02, 0x08, 0x80],  // hello.protocol_version: a varint that never ends
        [0x07],  // field 0 (invalid), wire type 7 (invalid)
        [0x0A, 0x01],  // hello, length 1, nothing follows
    ])
    func malformedProtobufIsRefused(_ body: [UInt8]) {
        var decoder = FrameDecoder()
        let error = #expect(throws: ProtocolError.self) { try decoder.feed(Self.prefix(UInt32(body.count)) + body) }
        #expect(error?.code == .malformedFrame)
    }

    @Test func aFrameWithNoKnownMessageIsRefused() {
        // Field 100, varint 1: a message from a later version (unknown), and the empty oneof.
        let unknown: [UInt8] = [0xA0, 0x06, 0x01]
        var decoder = FrameDecoder()
        let error = #expect(throws: ProtocolError.self) { try decoder.feed(Self.prefix(3) + unknown) }
        #expect(error?.code == .unknownMessage)
    }

    @Test func unknownFieldsInsideAKnownMessageAreIgnored() throws {
        // cancel_claim { claim_id: 5, field 50: varint 1 }
        let inner: [UInt8] = [0x08, 0x05, 0x90, 0x03, 0x01]
        let body: [UInt8] = [0x42, UInt8(inner.count)] + inner
        var decoder = FrameDecoder()
        let frames = try decoder.feed(Self.prefix(UInt32(body.count)) + body)
        #expect(frames == [Filecoord_V1_Frame(.cancelClaim(.with { $0.claimID = 5 }))])
    }

    @Test(arguments: [(4, ProtocolError.Code.unknownMessage), (50, .malformedFrame)])
    func deepNestingIsRefused(_ depth: Int, _ code: ProtocolError.Code) {
        // Frame needs depth 3 (presenter_reply { failed { } }). Unknown groups (field 99) nested 4 deep are skipped,
        // leaving no message; nested 50 deep they exceed the decoder's depth limit.
        var body: [UInt8] = []
        for _ in 0..<depth { body += [0x9B, 0x06] }  // start group, field 99
        for _ in 0..<depth { body += [0x9C, 0x06] }  // end group, field 99
        var decoder = FrameDecoder()
        let error = #expect(throws: ProtocolError.self) { try decoder.feed(Self.prefix(UInt32(body.count)) + body) }
        #expect(error?.code == code)
    }

    @Test func afterAnErrorEveryCallThrowsTheSameError() throws {
        var decoder = FrameDecoder()
        let first = #expect(throws: ProtocolError.self) { try decoder.feed(Self.prefix(0)) }
        let again = #expect(throws: ProtocolError.self) { try decoder.feed(Self.stream) }
        #expect(first == again)
        #expect(decoder.error == first)
        #expect(throws: ProtocolError.self) { try decoder.next() }
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func theEncoderRefusesAFrameWithNoMessage() {
        let error = #expect(throws: ProtocolError.self) { try FrameEncoder().encode(Filecoord_V1_Frame()) }
        #expect(error?.code == .unknownMessage)
    }

    @Test func theEncoderRefusesAFrameOverTheLimitAndLeavesTheBufferAlone() throws {
        let frame = Filecoord_V1_Frame(.dumpReply(Filecoord_V1_DumpReply(json: [UInt8](repeating: 0x20, count: 100))))
        var buffer: [UInt8] = [1, 2, 3]
        let error = #expect(throws: ProtocolError.self) {
            try FrameEncoder(maximumFrameSize: 64).encode(frame, into: &buffer)
        }
        #expect(error?.code == .frameTooLarge)
        #expect(buffer == [1, 2, 3])
        try FrameEncoder(maximumFrameSize: 128).encode(frame, into: &buffer)
        var decoder = FrameDecoder(maximumFrameSize: 128)
        #expect(try decoder.feed(buffer.dropFirst(3)) == [frame])
    }

    @Test func aFrameOfOneMebibyteIsAcceptedByDefault() throws {
        let limit = ProtocolLimits.defaultMaximumFrameSize
        #expect(limit == 1 << 20)
        // dump_reply { json: n bytes }: 1 + 1 + (1 + 3 + n) bytes of tags and lengths.
        let json = [UInt8](repeating: 0x20, count: limit - 9)
        let frame = Filecoord_V1_Frame(.dumpReply(Filecoord_V1_DumpReply(json: json)))
        let bytes = try FrameEncoder().encode(frame)
        #expect(bytes.count - frameLengthPrefixSize <= limit)
        var decoder = FrameDecoder()
        #expect(try decoder.feed(bytes) == [frame])
        let bigger = Filecoord_V1_Frame(.dumpReply(Filecoord_V1_DumpReply(json: json + [0x20, 0x20])))
        #expect(throws: ProtocolError.self) { try FrameEncoder().encode(bigger) }
    }
}

/// A dump larger than a frame travels as several `DumpReply` frames (`more` on all but the last).
@Suite struct DumpChunkTests {
    @Test(arguments: [0, 1, 100, 4_063, 4_064, 4_065, 50_000])
    func aDumpOfAnySizeFitsInFramesAndReassembles(_ size: Int) throws {
        let json = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let maximum = 4_096
        let replies = Filecoord_V1_DumpReply.chunks(of: json, maximumFrameSize: maximum)
        let encoder = FrameEncoder(maximumFrameSize: maximum)
        var bytes: [UInt8] = []
        for reply in replies { try encoder.encode(Filecoord_V1_Frame(.dumpReply(reply)), into: &bytes) }
        var decoder = FrameDecoder(maximumFrameSize: maximum, accepting: .toClient)
        let frames = try decoder.feed(bytes)
        var assembled: [UInt8] = []
        var mores: [Bool] = []
        for frame in frames {
            guard case .dumpReply(let reply)? = frame.payload else {
                Issue.record("not a DumpReply: \(frame)")
                return
            }
            assembled += reply.json
            mores.append(reply.more)
        }
        #expect(assembled == json)
        #expect(mores.last == false && mores.dropLast().allSatisfy { $0 }, "\(mores)")
        #expect(frames.count == max(1, (size + maximum - 33) / (maximum - 32)))
    }
}
