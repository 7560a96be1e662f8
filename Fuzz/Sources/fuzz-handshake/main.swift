// libFuzzer target: the handshake. The input is read twice: as a client's first bytes, fed to the daemon's own
// connection pipeline (FrameChannelDecoder, HandshakeHandler, SessionHandler on an EmbeddedChannel, through
// FCDaemon's HandshakeProbe), and as a daemon's answer (the client's rule: HelloReply with the version it spoke, or
// Refused with a reason). The daemon may not crash, accept a version outside the supported range, answer anything
// but Hello first with other than a protocol error, or close a connection without saying why.

import FCCore
@_spi(Fuzzing) import FCDaemon
import FCProtocol
import FuzzDriver

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    daemonSide(input)
    clientSide(input)
    return 0
}

/// What the daemon does with a new connection's bytes, judged against what a decoder of the same limits reads in
/// them.
private func daemonSide(_ input: UnsafeBufferPointer<UInt8>) {
    let outcome: HandshakeProbe.Outcome
    do {
        outcome = try HandshakeProbe.feed(input)
    } catch {
        preconditionFailure("the daemon's connection could not be probed: \(error)")
    }
    let answers = outcome.frames.compactMap(\.payload)
    var reference = FrameDecoder(maximumFrameSize: HandshakeProbe.maximumFrameSize, accepting: .toDaemon)
    let frames: [Filecoord_V1_Frame]
    do {
        frames = try reference.feed(input)
    } catch {
        // Bytes no daemon can read: unless a Hello came first in them (then the session handles what follows), the
        // answer is a protocol error, and the connection is closed.
        if answers.first.map(isHelloAnswer) == true { return }
        precondition(outcome.closed, "an unreadable first frame left the connection open")
        precondition(answers.contains(where: isProtocolError), "an unreadable first frame closed it without a reason")
        return
    }
    guard let first = frames.first else {
        precondition(answers.isEmpty && !outcome.closed, "a partial frame was answered or closed: \(answers)")
        return
    }
    guard case .hello(let hello)? = first.payload else {
        precondition(outcome.closed, "a first frame other than Hello left the connection open")
        precondition(answers.first.map(isProtocolError) == true, "a first frame other than Hello: \(answers)")
        return
    }
    switch ProtocolVersion.check(hello, pathRules: HandshakeProbe.pathRules) {
    case .accept(let version):
        precondition(ProtocolVersion.supported.contains(version) && version == hello.protocolVersion)
        guard case .helloReply(let reply)? = answers.first else {
            preconditionFailure("a supported Hello was answered with \(answers.first.map(\.messageName) ?? "nothing")")
        }
        precondition(reply.protocolVersion == version, "HelloReply names another version")
        let helloAgain = frames.dropFirst().contains { if case .hello? = $0.payload { true } else { false } }
        if helloAgain { precondition(outcome.closed && answers.contains(where: isProtocolError), "Hello twice") }
    case .refuse:
        guard case .refused(let refused)? = answers.first else {
            preconditionFailure(
                "an unsupported Hello was answered with \(answers.first.map(\.messageName) ?? "nothing")"
            )
        }
        precondition(outcome.closed, "a refused client's connection was left open")
        precondition(refused.daemonProtocolVersion == ProtocolVersion.current)
        if ProtocolVersion.supported.contains(hello.protocolVersion) {
            // A supported version is refused only for other path rules (0: none stated, never refused).
            precondition(
                hello.pathRules != 0 && hello.pathRules != HandshakeProbe.pathRules,
                "a supported version was refused"
            )
            precondition(refused.reason.contains("\(hello.pathRules)"), "the refusal does not name the path rules")
        } else {
            precondition(refused.reason.contains("\(hello.protocolVersion)"), "the refusal does not name the version")
        }
    }
}

private func isHelloAnswer(_ payload: Filecoord_V1_Frame.OneOf_Payload) -> Bool {
    switch payload {
    case .helloReply, .refused: true
    default: false
    }
}

private func isProtocolError(_ payload: Filecoord_V1_Frame.OneOf_Payload) -> Bool {
    if case .protocolError = payload { true } else { false }
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
