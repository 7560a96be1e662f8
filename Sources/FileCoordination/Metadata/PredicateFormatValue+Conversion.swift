import Foundation

// What an argument of a format, or an attribute of an evaluated object, becomes as a PredicateFormatValue.

extension PredicateFormatValue {
    /// Converts `object`: strings (String, Substring, NSString), numbers (every integer and floating-point type,
    /// Bool, NSNumber), dates (Date, NSDate), URLs (URL, NSURL), nil (an empty Optional or NSNull), and arrays of them
    /// (Swift arrays, NSArray). Anything else is `.unsupported`.
    init(_ object: Any?) {
        guard let object = Self.unwrapped(object) else {
            self = .null
            return
        }
        switch object {
        case is NSNull:
            self = .null
        case let string as String:
            self = .string(string)
        case let substring as Substring:
            self = .string(String(substring))
        case let date as Date:
            self = .date(date)
        case let url as URL:
            self = .url(url)
        case let array as [Any]:
            self = .array(array.map { PredicateFormatValue($0) })
        default:
            if let number = Self.number(object) {
                self = .number(number)
            } else {
                self = .unsupported(typeName: String(describing: type(of: object)))
            }
        }
    }

    /// `object` itself, or the value an Optional in it holds (nil when it holds none), however deeply nested.
    private static func unwrapped(_ object: Any?) -> Any? {
        guard var object else { return nil }
        while let optional = object as? any OptionalValue {
            guard let wrapped = optional.wrappedValue else { return nil }
            object = wrapped
        }
        return object
    }

    /// Every Swift number and Bool bridges to NSNumber, which says how it was made: floating point (`f`, `d`), an
    /// unsigned integer that may not fit an Int64 (`Q`, `L`), or an integer.
    private static func number(_ object: Any) -> PredicateFormatNumber? {
        guard let number = object as? NSNumber else { return nil }
        switch String(cString: number.objCType) {
        case "f", "d":
            return .real(number.doubleValue)
        case "Q", "L":
            let unsigned = number.uint64Value
            return unsigned <= UInt64(Int64.max) ? .integer(Int64(unsigned)) : .real(Double(unsigned))
        default:
            return .integer(number.int64Value)
        }
    }
}

/// An Optional seen through `Any`: an attribute source or a dictionary may hold one (`[String: Any]` with an `Int?`
/// value), and so may an argument array.
private protocol OptionalValue {
    var wrappedValue: Any? { get }
}

extension Optional: OptionalValue {
    fileprivate var wrappedValue: Any? { self.map { $0 } }
}
