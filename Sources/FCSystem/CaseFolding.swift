/// Names as case-insensitive file systems compare them (docs/SEMANTICS.md §4): the client's canonical keys and the
/// daemon's watcher fold names alike.
///
/// - Important: Pure functions of their arguments; thread-safe.
public enum CaseFolding {
    /// `name` with every Unicode scalar replaced by its simple case folding, as vfat, exFAT, CIFS and ext4/f2fs
    /// casefold directories compare names: each scalar is upper-cased, then lower-cased, where each mapping is a
    /// single scalar (so `ß` stays `ß`, `ς` and `Σ` fold to `σ`). No normalisation: NFC and NFD stay apart.
    public static func fold(_ name: some StringProtocol) -> String {
        if name.utf8.allSatisfy({ $0 < 0x80 }) {
            // ASCII: the common case, without a lookup per scalar.
            var bytes = Array(name.utf8)
            for index in bytes.indices where bytes[index] >= 0x41 && bytes[index] <= 0x5A { bytes[index] += 0x20 }
            return String(decoding: bytes, as: UTF8.self)
        }
        var folded = String.UnicodeScalarView()
        for scalar in name.unicodeScalars { folded.append(foldScalar(scalar)) }
        return String(folded)
    }

    /// The case-swapped spelling of `name` (each scalar's single-scalar upper- or lower-case counterpart), or `nil`
    /// when no scalar of it has one: the name the case-sensitivity probe looks up.
    public static func swapped(_ name: String) -> String? {
        var result = String.UnicodeScalarView()
        var changed = false
        for scalar in name.unicodeScalars {
            if let upper = single(scalar.properties.uppercaseMapping), upper != scalar {
                result.append(upper)
                changed = true
            } else if let lower = single(scalar.properties.lowercaseMapping), lower != scalar {
                result.append(lower)
                changed = true
            } else {
                result.append(scalar)
            }
        }
        return changed ? String(result) : nil
    }

    private static func foldScalar(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        let upper = single(scalar.properties.uppercaseMapping) ?? scalar
        return single(upper.properties.lowercaseMapping) ?? upper
    }

    private static func single(_ mapping: String) -> Unicode.Scalar? {
        var scalars = mapping.unicodeScalars.makeIterator()
        guard let first = scalars.next(), scalars.next() == nil else { return nil }
        return first
    }
}
