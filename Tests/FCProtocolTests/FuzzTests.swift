import FCCore
import FCProtocol
import FCTestSupport
import Foundation
import Testing

/// A deterministic fuzz test of the decoder and the conversions from the wire: random bytes, and valid frames bit
/// flipped, truncated, spliced and with tampered length prefixes.
///
/// Environment: `FC_PROTO_FUZZ_SEED` (default a fixed seed), `FC_PROTO_FUZZ_INPUTS` (default 100,000),
/// `FC_PROTO_FUZZ_ONLY` (replay one input by its index, as printed on failure).
@Suite struct FuzzTests {
    static let defaultSeed: UInt64 = 0x5EED_F11E_C00D_0001
    static let defaultInputs = 100_000

    /// The smallest frame: a 4-byte prefix and a 2-byte body (the tag and zero length of an empty message).
    static let smallestFrame = frameLengthPrefixSize + 2

    /// Valid encoded frames to mutate: every sample message, and everything a client sends and every effect converted.
    static let corpus: [[UInt8]] = {
        var frames = Samples.frames
        frames += Samples.sent.map(\.frame)
        frames += Samples.effects.compactMap { Filecoord_V1_Frame($0) }
        do {
            return try frames.map { try FrameEncoder().encode($0) }
        } catch {
            fatalError("a sample does not encode: \(error)")
        }
    }()

    enum Strategy: Int, CaseIterable, CustomStringConvertible {
        case randomBytes, randomBody, bitFlips, truncation, prefixTampering, splice, bodyEdits, validStream

        var description: String {
            switch self {
            case .randomBytes: "random bytes"
            case .randomBody: "random body with a valid prefix"
            case .bitFlips: "bit flips"
            case .truncation: "truncation"
            case .prefixTampering: "length-prefix tampering"
            case .splice: "splice"
            case .bodyEdits: "body edits with the prefix fixed up"
            case .validStream: "valid stream"
            }
        }
    }

    struct Input {
        var strategy: Strategy
        var bytes: [UInt8]
        /// For `.validStream`: the frames it must decode to, exactly.
        var expected: [[UInt8]]?
    }

    static func randomBytes(_ count: Int, _ rng: inout SplitMix64) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    static func someFrames(_ rng: inout SplitMix64, upTo count: Int) -> [[UInt8]] {
        (0..<rng.within(1...count)).map { _ in corpus[rng.below(corpus.count)] }
    }

    static func setPrefix(_ bytes: inout [UInt8], at offset: Int, to length: UInt32) {
        bytes[offset] = UInt8(length >> 24)
        bytes[offset + 1] = UInt8(length >> 16 & 0xFF)
        bytes[offset + 2] = UInt8(length >> 8 & 0xFF)
        bytes[offset + 3] = UInt8(length & 0xFF)
    }

    static func makeInput(_ rng: inout SplitMix64) -> Input {
        let strategy = Strategy(rawValue: rng.below(Strategy.allCases.count))!
        switch strategy {
        case .randomBytes:
            return Input(strategy: strategy, bytes: randomBytes(rng.below(48), &rng))
        case .randomBody:
            let body = randomBytes(rng.within(1...64), &rng)
            var bytes = [UInt8](repeating: 0, count: 4) + body
            setPrefix(&bytes, at: 0, to: UInt32(body.count))
            return Input(strategy: strategy, bytes: bytes)
        case .bitFlips:
            var bytes = someFrames(&rng, upTo: 2).flatMap { $0 }
            for _ in 0..<rng.within(1...4) {
                bytes[rng.below(bytes.count)] ^= 1 << UInt8(rng.below(8))
            }
            return Input(strategy: strategy, bytes: bytes)
        case .truncation:
            let bytes = someFrames(&rng, upTo: 4).flatMap { $0 }
            return Input(strategy: strategy, bytes: Array(bytes.prefix(rng.below(bytes.count))))
        case .prefixTampering:
            let frames = someFrames(&rng, upTo: 3)
            let victim = rng.below(frames.count)
            var bytes = frames.flatMap { $0 }
            let offset = frames[..<victim].reduce(0) { $0 + $1.count }
            let length = UInt32(frames[victim].count - frameLengthPrefixSize)
            let choices: [UInt32] = [
                0, 1, length - 1, length + 1, length &* 2, UInt32(ProtocolLimits.defaultMaximumFrameSize),
                UInt32(ProtocolLimits.defaultMaximumFrameSize) + 1, UInt32.max,
                UInt32(truncatingIfNeeded: rng.next()), UInt32(rng.below(256)),
            ]
            setPrefix(&bytes, at: offset, to: choices[rng.below(choices.count)])
            return Input(strategy: strategy, bytes: bytes)
        case .splice:
            let a = corpus[rng.below(corpus.count)]
            let b = corpus[rng.below(corpus.count)]
            var bytes = Array(a.prefix(rng.below(a.count + 1))) + Array(b.suffix(rng.below(b.count + 1)))
            if rng.below(2) == 0 { bytes += corpus[rng.below(corpus.count)] }
            return Input(strategy: strategy, bytes: bytes)
        case .bodyEdits:
            var body = Array(corpus[rng.below(corpus.count)].dropFirst(frameLengthPrefixSize))
            for _ in 0..<rng.within(1...3) {
                switch rng.below(3) {
                case 0: body[rng.below(body.count)] = UInt8(truncatingIfNeeded: rng.next())
                case 1: body.insert(UInt8(truncatingIfNeeded: rng.next()), at: rng.below(body.count + 1))
                default: if body.count > 1 { body.remove(at: rng.below(body.count)) }
                }
            }
            var bytes = [UInt8](repeating: 0, count: 4) + body
            setPrefix(&bytes, at: 0, to: UInt32(body.count))
            return Input(strategy: strategy, bytes: bytes)
        case .validStream:
            let frames = someFrames(&rng, upTo: 5)
            return Input(strategy: strategy, bytes: frames.flatMap { $0 }, expected: frames)
        }
    }

    /// Runs the conversions a receiver would run on a decoded frame; they must return or throw, never crash.
    static func convert(_ frame: Filecoord_V1_Frame) {
        let client = ClientID(1)
        switch frame.payload {
        case .granted(let message)?: _ = try? message.itemPaths()
        case .claimFailed(let message)?: _ = try? ClaimFailedReason(wire: message)
        case .presenterMessage(let message)?: _ = try? PresenterMessage(wire: message, client: client)
        case .helloReply(let message)?: _ = ProtocolLimits(wire: message.limits)
        case .hello(let message)?: _ = ProtocolVersion.check(message)
        case .refused?, .protocolError?, .dumpReply?: break
        default: _ = try? ArbiterEvent(wire: frame, client: client)
        }
    }

    struct Outcome {
        var frames: [Filecoord_V1_Frame] = []
        var error: ProtocolError?
    }

    /// Feeds the input in random chunks and checks every property; returns the failures found.
    static func run(_ input: Input, _ rng: inout SplitMix64, failures: inout [String]) -> Outcome {
        var decoder = FrameDecoder()
        var outcome = Outcome()
        let chunking = rng.below(3)
        var start = 0
        feeding: while start < input.bytes.count || start == 0 {
            let size =
                switch chunking {
                case 0: input.bytes.count
                case 1: 1
                default: rng.within(1...16)
                }
            let end = min(start + max(size, 1), input.bytes.count)
            decoder.append(input.bytes[start..<end])
            start = end
            do {
                while let frame = try decoder.next() {
                    outcome.frames.append(frame)
                }
            } catch {
                outcome.error = error
                break feeding
            }
            if end == input.bytes.count { break }
        }

        let possible = input.bytes.count / smallestFrame
        if outcome.frames.count > possible {
            failures.append("decoded \(outcome.frames.count) frames from \(input.bytes.count) bytes")
        }
        if outcome.frames.contains(where: { $0.payload == nil }) {
            failures.append("returned a frame with no message")
        }
        if let error = outcome.error {
            if decoder.error != error { failures.append("decoder.error is \(String(describing: decoder.error))") }
            do {
                _ = try decoder.next()
                failures.append("the decoder went on after \(error)")
            } catch {}
        } else if decoder.bufferedByteCount > input.bytes.count {
            failures.append("buffers \(decoder.bufferedByteCount) bytes of \(input.bytes.count)")
        }
        if let expected = input.expected {
            let got = outcome.frames.compactMap { try? FrameEncoder().encode($0) }
            if outcome.error != nil || got != expected {
                failures.append(
                    "a valid stream of \(expected.count) frames gave \(outcome.frames.count), \(String(describing: outcome.error))"
                )
            }
        }
        for frame in outcome.frames {
            convert(frame)
            do {
                var again = FrameDecoder()
                if try again.feed(try FrameEncoder().encode(frame)) != [frame] {
                    failures.append("\(frame) does not survive a second round trip")
                }
            } catch {
                failures.append("\(frame) does not encode again: \(error)")
            }
        }
        return outcome
    }

    @Test func theDecoderSurvivesMalformedInput() {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["FC_PROTO_FUZZ_SEED"].flatMap { UInt64($0, radix: 16) ?? UInt64($0) } ?? Self.defaultSeed
        let count = environment["FC_PROTO_FUZZ_INPUTS"].flatMap(Int.init) ?? Self.defaultInputs
        let only = environment["FC_PROTO_FUZZ_ONLY"].flatMap(Int.init)
        let indices = only.map { $0...$0 } ?? 0...(count - 1)

        var decodedFrames = 0
        var incomplete = 0
        var errors: [String: Int] = [:]
        var byStrategy: [Strategy: Int] = [:]
        var recorded = 0
        let clock = ContinuousClock()
        let start = clock.now
        for index in indices {
            // Each input has its own generator, so that one input replays alone (FC_PROTO_FUZZ_ONLY).
            var rng = SplitMix64(seed: seed ^ (UInt64(index) &* 0xD1B5_4A32_D192_ED03))
            let input = Self.makeInput(&rng)
            byStrategy[input.strategy, default: 0] += 1
            var failures: [String] = []
            let outcome = Self.run(input, &rng, failures: &failures)
            decodedFrames += outcome.frames.count
            if let error = outcome.error {
                errors[error.code.description, default: 0] += 1
            } else if outcome.frames.isEmpty {
                incomplete += 1
            }
            if !failures.isEmpty, recorded < 10 {
                recorded += 1
                let hex = input.bytes.map { String($0, radix: 16) }.joined(separator: " ")
                Issue.record(
                    """
                    fuzz input \(index) (\(input.strategy)) failed: \(failures.joined(separator: "; "))
                    bytes: \(hex)
                    replay: FC_PROTO_FUZZ_SEED=\(String(seed, radix: 16)) FC_PROTO_FUZZ_ONLY=\(index)
                    """
                )
            }
        }
        let elapsed = clock.now - start
        let summary = errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        print(
            "fuzz: \(indices.count) inputs, seed \(String(seed, radix: 16)), \(elapsed): \(decodedFrames) frames "
                + "decoded, \(incomplete) incomplete, errors: \(summary)"
        )
        guard only == nil else { return }
        #expect(indices.count >= 100_000 || environment["FC_PROTO_FUZZ_INPUTS"] != nil)
        // The inputs reach every outcome, not just the first check of the prefix.
        #expect(decodedFrames > 0 && incomplete > 0)
        for code: ProtocolError.Code in [.frameTooLarge, .emptyFrame, .malformedFrame, .unknownMessage] {
            #expect(errors[code.description, default: 0] > 0, "no input ended in \(code)")
        }
        #expect(byStrategy.count == Strategy.allCases.count)
    }
}
