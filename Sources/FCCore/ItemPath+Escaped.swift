extension ItemPath {
    /// The path for people (dumps, reports, logs): every component as ``escaped(_:)`` writes it, so that two
    /// different paths never print the same, whatever bytes their names hold.
    public var escapedDescription: String {
        if components.isEmpty { return "/" }
        var text = ""
        for component in components {
            text += "/"
            text += Self.escaped(component)
        }
        return text
    }

    /// A name for people: valid UTF-8 as it is, except that each byte that is not part of valid UTF-8 and each
    /// control character is written `\xNN` (C1 controls and the Unicode line and paragraph separators `\u{NNNN}`),
    /// and the backslash `\\`, so that a name never prints like another name, a line break never breaks the output,
    /// and `bad\xff` and `bad\xfe` stay apart.
    public static func escaped(_ name: [UInt8]) -> String {
        var text = ""
        var index = 0
        while index < name.count {
            let byte = name[index]
            if byte < 0x80 {
                if byte < 0x20 || byte == 0x7F {
                    text += hexByte(byte)
                } else if byte == 0x5C {
                    text += "\\\\"
                } else {
                    text.unicodeScalars.append(Unicode.Scalar(byte))
                }
                index += 1
                continue
            }
            if let (scalar, length) = decodeScalar(name, at: index) {
                if (0x80...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    text += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    text.unicodeScalars.append(scalar)
                }
                index += length
            } else {
                text += hexByte(byte)
                index += 1
            }
        }
        return text
    }

    private static func hexByte(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16)
        return "\\x" + (digits.count == 1 ? "0" + digits : digits)
    }

    /// The scalar whose well-formed UTF-8 sequence starts at `index` (shortest form, no surrogates), with its length.
    private static func decodeScalar(_ bytes: [UInt8], at index: Int) -> (Unicode.Scalar, Int)? {
        let lead = bytes[index]
        let length: Int
        var value: UInt32
        let smallest: UInt32
        switch lead {
        case 0xC2...0xDF: (length, value, smallest) = (2, UInt32(lead & 0x1F), 0x80)
        case 0xE0...0xEF: (length, value, smallest) = (3, UInt32(lead & 0x0F), 0x800)
        case 0xF0...0xF4: (length, value, smallest) = (4, UInt32(lead & 0x07), 0x10000)
        default: return nil
        }
        guard index + length <= bytes.count else { return nil }
        for offset in 1..<length {
            let next = bytes[index + offset]
            guard next & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(next & 0x3F)
        }
        guard value >= smallest, let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }
}
