// libFuzzer target: the handshake. The input is read twice: as a client's first frames (the daemon's rule: the
// first frame must be Hello, judged by ProtocolVersion.check, and Hello only once) and as a daemon's answer (the
// client's rule: HelloReply with the version it spoke, or Refused with a reason). Neither side may crash, accept a
// version outside the supported range, or refuse without saying why.

import FCCore
import FCProtocol
import FuzzDriver

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    daemonSide(input)
    clientSide(input)
    return 0
}

/// What the daemon does with a new connection's bytes.
private func daemonSide(_ input: UnsafeBufferPointer<UInt8>) {
    var decoder = FrameDecoder(maximumFrameSize: 64 * 1024, accepting: .toDaemon)
    guard let frames = try? decoder.feed(input), let first = frames.first else { return }
    guard case .hello(let hello)? = first.payload else { return }  // Anything else first: a protocol error.
    switch ProtocolVersion.check(hello) {
    case .accept(let version):
        precondition(ProtocolVersion.supported.contains(version) && version == hello.protocolVersion)
        let reply = Filecoord_V1_Frame(
            .helloReply(Filecoord_V1_HelloReply(version: version, daemonPID: 1, limits: .default))
        )
        precondition((try? FrameEncoder().encode(reply)) != nil, "the HelloReply could not be encoded")
        // The events after the Hello: a second Hello is refused, the rest convert or are refused with a reason.
        for frame in frames.dropFirst() {
            if case .hello? = frame.payload { return }
            _ = try? ArbiterEvent(wire: frame, client: ClientID(1))
        }
    case .refuse(let refused):
        precondition(!ProtocolVersion.supported.contains(hello.protocolVersion), "a supported version was refused")
        precondition(refused.daemonProtocolVersion == ProtocolVersion.current)
        precondition(refused.reason.contains("\(hello.protocolVersion)"), "the refusal does not name the version")
    }
}

/// What the client does with the daemon's answer to its Hello.
private func clientSide(_ input: UnsafeBufferPointer<UInt8>) {
    var decoder = FrameDecoder(accepting: .toClient)
    guard let frames = try? decoder.feed(input), let first = frames.first else { return }
    switch first.payload {
    case .helloReply(let reply)?:
        _ = ProtocolLimits(wire: reply.limits)
    case .refused(let refused)?:
        _ = refused.reason
    default:
        break  // "answered the handshake with something else": tried again.
    }
}

// The entry point SwiftPM's debug build links (FuzzDriver.runFuzzer says why).
@_cdecl("fuzz_handshake_main")
public func fuzzerEntryPoint(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzHandshake)
}
