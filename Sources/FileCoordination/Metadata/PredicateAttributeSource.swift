/// An object whose attributes a format predicate (`NSPredicate(format:)`) reads by key, as it reads a dictionary's
/// values: what `NSMetadataItem` adopts, so that a metadata query's predicate can be evaluated against its items.
///
/// A dotted key path is first asked for whole (attribute names may hold dots), then one key at a time, each value
/// after the first a dictionary or another source.
///
/// - Important: Called on whichever thread evaluates the predicate; an adopting type answers from any thread.
protocol PredicateAttributeSource {
    /// The attribute's value: a String, number, Bool, Date, URL or an array of them; nil when the object has none.
    func predicateValue(forKey key: String) -> Any?
}
