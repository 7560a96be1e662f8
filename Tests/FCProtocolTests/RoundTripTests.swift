import FCCore
import FCProtocol
import Testing

/// Encodes and decodes frames, through the framing alone and through FCCore's types.
@Suite struct RoundTripTests {
    @Test func samplesCoverEveryMessage() {
        let names = Set(Samples.frames.compactMap { $0.payload?.messageName })
        #expect(names == Samples.messageNames)
        #expect(Samples.frames.count == Samples.messageNames.count)
    }

    @Test(arguments: Samples.frames)
    func everyMessageSurvivesEncoderAndDecoder(_ frame: Filecoord_V1_Frame) throws {
        let bytes = try FrameEncoder().encode(frame)
        var decoder = FrameDecoder()
        let decoded = try decoder.feed(bytes)
        #expect(decoded == [frame])
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test(arguments: Samples.frames)
    func everyMessageIsAcceptedOnlyInItsDirection(_ frame: Filecoord_V1_Frame) throws {
        let direction = try #require(frame.payload?.direction)
        let bytes = try FrameEncoder().encode(frame)
        var right = FrameDecoder(accepting: direction)
        #expect(try right.feed(bytes) == [frame])
        var wrong = FrameDecoder(accepting: direction == .toDaemon ? .toClient : .toDaemon)
        let error = #expect(throws: ProtocolError.self) { try wrong.feed(bytes) }
        #expect(error?.code == .unexpectedMessage)
    }

    @Test(arguments: Samples.sent)
    func everythingAClientSendsSurvivesTheWire(_ sent: ClientSent) throws {
        let frame = sent.frame
        #expect(frame.payload?.direction == .toDaemon)
        var decoder = FrameDecoder(accepting: .toDaemon)
        let decoded = try decoder.feed(try FrameEncoder().encode(frame))
        try #require(decoded.count == 1)
        let back = try ArbiterEvent(wire: decoded[0], client: Samples.client)
        #expect(back == sent.event(from: Samples.client))
    }

    @Test func onlyALeasesReturnHasNoEventInProcess() {
        for case .message(let message) in Samples.sent {
            if case .returnLease = message {
                #expect(message.eventInProcess == nil)
            } else {
                #expect(message.eventInProcess == message.event(from: Samples.client))
            }
        }
    }

    @Test func helloAndDumpRequestAreNoArbiterEvents() throws {
        let hello = Filecoord_V1_Frame(.hello(Filecoord_V1_Hello(clientName: "x", pid: 1)))
        #expect(try ArbiterEvent(wire: hello, client: Samples.client) == nil)
        let dump = Filecoord_V1_Frame(.dumpRequest(Filecoord_V1_DumpRequest()))
        #expect(try ArbiterEvent(wire: dump, client: Samples.client) == nil)
    }

    @Test func daemonMessagesAreNoArbiterEvents() {
        for frame in Samples.frames where frame.payload?.direction == .toClient {
            let error = #expect(throws: ProtocolError.self) { try ArbiterEvent(wire: frame, client: Samples.client) }
            #expect(error?.code == .unexpectedMessage)
        }
        let empty = #expect(throws: ProtocolError.self) {
            try ArbiterEvent(wire: Filecoord_V1_Frame(), client: Samples.client)
        }
        #expect(empty?.code == .unknownMessage)
    }

    @Test(arguments: Samples.effects)
    func everyClientEffectSurvivesTheWire(_ effect: ArbiterEffect) throws {
        let frame = try #require(Filecoord_V1_Frame(effect))
        #expect(frame.payload?.direction == .toClient)
        var decoder = FrameDecoder(accepting: .toClient)
        let decoded = try decoder.feed(try FrameEncoder().encode(frame))
        try #require(decoded.count == 1)
        switch (effect, decoded[0].payload) {
        case (.grant(let claim, _, let paths), .granted(let granted)?):
            #expect(ClaimID(granted.claimID) == claim)
            #expect(try granted.itemPaths() == paths)
        case (.fail(let claim, _, let failure), .claimFailed(let failed)?):
            #expect(ClaimID(failed.claimID) == claim)
            let reason = try ClaimFailedReason(wire: failed)
            #expect(reason.claimFailure == failure)
            #expect(!failed.message.isEmpty)
        case (.message(let message), .presenterMessage(let wire)?):
            #expect(try PresenterMessage(wire: wire, client: Samples.client) == message)
        default:
            Issue.record("\(effect) became \(decoded[0])")
        }
    }

    @Test func effectsTheDaemonKeepsHaveNoFrame() {
        #expect(Filecoord_V1_Frame(ArbiterEffect.startTimer(.presenterReply(RequestID(1)), after: .seconds(1))) == nil)
        #expect(Filecoord_V1_Frame(ArbiterEffect.cancelTimer(.presenterReply(RequestID(1)))) == nil)
        #expect(Filecoord_V1_Frame(ArbiterEffect.log(LogRecord(level: .info, message: "m"))) == nil)
    }

    @Test(arguments: [
        ClaimFailedReason.cancelled,
        .presenterError(PresenterError(domain: "D", code: Int(Int32.min), message: "m"), presenter: PresenterID(4)),
        .presenterError(PresenterError(domain: "D", code: 7, message: "another process"), presenter: nil),
        .invalidRequest("no items"),
        .deadlock("claim#1 of a (pid 1) waits for claim#2 of b (pid 2), which waits for claim#1"),
        .shuttingDown("SIGTERM"),
        .limitExceeded("10000 live claims"),
        .timedOut("claim#1 of a (pid 1) was not granted within its timeout of 2.000 s"),
    ])
    func everyFailureReasonSurvivesTheWire(_ reason: ClaimFailedReason) throws {
        let frame = Filecoord_V1_Frame(.claimFailed(Filecoord_V1_ClaimFailed(claim: ClaimID(1), reason: reason)))
        var decoder = FrameDecoder(accepting: .toClient)
        let decoded = try decoder.feed(try FrameEncoder().encode(frame))
        guard case .claimFailed(let failed)? = decoded.first?.payload else {
            Issue.record("decoded \(decoded)")
            return
        }
        #expect(try ClaimFailedReason(wire: failed) == reason)
    }

    @Test func limitsSurviveTheHandshake() throws {
        let limits = ProtocolLimits(
            maximumFrameSize: 65_536,
            maximumClaimsPerClient: 5,
            maximumPresentersPerClient: 6,
            maximumItemsPerClaim: 7,
            maximumPathLength: 1_024
        )
        let reply = Filecoord_V1_HelloReply(version: 1, daemonPID: 12, limits: limits)
        var decoder = FrameDecoder(accepting: .toClient)
        let decoded = try decoder.feed(try FrameEncoder().encode(Filecoord_V1_Frame(.helloReply(reply))))
        guard case .helloReply(let back)? = decoded.first?.payload else {
            Issue.record("decoded \(decoded)")
            return
        }
        #expect(back.daemonPid == 12)
        #expect(ProtocolLimits(wire: back.limits) == limits)
        #expect(ProtocolLimits(wire: Filecoord_V1_Limits()) == .default)
    }
}
