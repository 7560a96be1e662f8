// libFuzzer target: the frame decoder. The first byte picks the direction and how the rest is cut into chunks; the
// decoder must never crash or buffer past its limit, and every frame it returns must encode again, decode to the
// same frame, and convert to an arbiter event (to the daemon) or pass the client's checks (to a client), or be
// refused with a ProtocolError.

import FCCore
import FCProtocol
import FuzzDriver

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrameDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard let control = input.first else { return 0 }
    let direction: FrameDirection = control & 1 == 0 ? .toDaemon : .toClient
    let chunk = Int(control >> 1) % 64 + 1
    let limit = 64 * 1024
    var decoder = FrameDecoder(maximumFrameSize: limit, accepting: direction)
    var offset = 1
    while offset < input.count {
        let end = min(offset + chunk, input.count)
        decoder.append(input[offset..<end])
        offset = end
        do {
            while let frame = try decoder.next() { check(frame, direction: direction, limit: limit) }
        } catch {
            return 0  // Refused with a reason: what a daemon closes the connection for.
        }
        precondition(decoder.bufferedByteCount <= limit + frameLengthPrefixSize + chunk, "buffered past the limit")
    }
    return 0
}

private func check(_ frame: Filecoord_V1_Frame, direction: FrameDirection, limit: Int) {
    precondition(frame.payload?.direction == direction, "a frame travelling the wrong way was accepted")
    let encoder = FrameEncoder(maximumFrameSize: limit)
    guard let bytes = try? encoder.encode(frame) else { return }  // Unknown fields may make it longer: refused.
    var again = FrameDecoder(maximumFrameSize: limit, accepting: direction)
    let decoded = try? again.feed(bytes)
    precondition(decoded?.count == 1 && decoded?.first == frame, "a frame did not survive encoding again")
    switch direction {
    case .toDaemon:
        _ = try? ArbiterEvent(wire: frame, client: ClientID(1))
    case .toClient:
        switch frame.payload {
        case .presenterMessage(let message)?: _ = try? PresenterMessage(wire: message, client: ClientID(1))
        case .claimFailed(let failed)?: _ = try? ClaimFailedReason(wire: failed)
        case .granted(let granted)?: _ = try? granted.itemPaths()
        default: break
        }
    }
}

// The entry point SwiftPM's debug build links (FuzzDriver.runFuzzer says why).
@_cdecl("fuzz_frame_decoder_main")
public func fuzzerEntryPoint(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzFrameDecoder)
}
