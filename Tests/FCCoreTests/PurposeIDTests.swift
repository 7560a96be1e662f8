import FCCore
import Testing

/// A purpose kept as a UUID's bytes (issue 39: a coordinator's own, spelled only when asked) is the same purpose as
/// its spelling: claims of one coordinator never block each other whichever way each was kept.
@Suite struct PurposeIDTests {
    let high: UInt64 = 0x0123_4567_89AB_CDEF
    let low: UInt64 = 0xFEDC_BA98_7654_3210

    @Test func aUUIDIsSpelledAsFoundationSpellsIt() {
        let purpose = PurposeID(uuidBytes: high, low)
        #expect(purpose.rawValue == "01234567-89AB-CDEF-FEDC-BA9876543210")
        #expect(purpose.utf8Count == 36)
        #expect(PurposeID("café").utf8Count == 5)
    }

    @Test func bytesAndTheirSpellingAreOnePurpose() {
        let kept = PurposeID(uuidBytes: high, low)
        let spelled = PurposeID(kept.rawValue)
        #expect(kept == spelled && spelled == kept)
        #expect(Set([kept, spelled]).count == 1, "equal purposes hashed apart")
        #expect(kept != PurposeID(uuidBytes: high, low ^ 1))
        #expect(kept != PurposeID(kept.rawValue.lowercased()))
    }
}
