/// A set that keeps only its `capacity` most recent insertions: inserting one more forgets the oldest.
///
/// For what the arbiter must remember for a while but not forever (the coordinators a client cancelled): memory per
/// client stays bounded however long the connection lives. Insert, remove-oldest and lookup are O(1).
///
/// - Important: A value type, used under its owner's serialisation (the arbiter's single thread).
struct RecentSet<Element: Hashable> {
    /// How many elements are kept at most.
    let capacity: Int
    private var members: Set<Element> = []
    /// Insertion order, oldest at `oldest` once full (a ring).
    private var order: [Element] = []
    private var oldest = 0

    init(capacity: Int) {
        precondition(capacity > 0, "a RecentSet keeps at least one element")
        self.capacity = capacity
    }

    /// The number of elements kept.
    var count: Int { members.count }

    func contains(_ element: Element) -> Bool { members.contains(element) }

    /// Inserts `element` (nothing happens if it is kept already); when full, the oldest element is forgotten.
    mutating func insert(_ element: Element) {
        guard members.insert(element).inserted else { return }
        if order.count < capacity {
            order.append(element)
            return
        }
        members.remove(order[oldest])
        order[oldest] = element
        oldest = (oldest + 1) % capacity
    }
}
