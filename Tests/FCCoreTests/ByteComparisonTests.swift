import FCTestSupport
import Testing

@testable import FCCore

/// `ByteComparison` against the standard library's byte-at-a-time comparisons, on seeded random buffers whose
/// lengths cross the eight-byte steps and whose bytes include values above 0x7F (the order is unsigned).
@Suite struct ByteComparisonTests {
    @Test func equalAndPrecedesAgreeWithTheStandardLibrary() {
        var generator = SplitMix64(seed: 44)
        let alphabet: [UInt8] = [0x00, 0x2F, 0x41, 0x7F, 0x80, 0xC3, 0xFF]
        func buffer() -> [UInt8] {
            (0..<Int.random(in: 0...20, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
        }
        for _ in 0..<20_000 {
            let a = buffer()
            // Often a prefix of the other, or equal, so that the tails and lengths are reached.
            let b =
                Bool.random(using: &generator)
                ? Array(a.prefix(Int.random(in: 0...a.count, using: &generator))) + buffer() : buffer()
            a.withUnsafeBytes { x in
                b.withUnsafeBytes { y in
                    #expect(ByteComparison.precedes(x, y) == a.lexicographicallyPrecedes(b), "\(a) \(b)")
                    #expect(ByteComparison.equal(x, y) == (a == b), "\(a) \(b)")
                }
            }
        }
    }
}
