/// A sequence kept as a B-tree of counted nodes (issue 44): an element is read, put in, replaced or taken out at a
/// position in O(log n), and a copy shares every node it does not change. A live query's results are one: the copy
/// its readers see costs nothing to keep while its serial queue changes its own, and a batch of k changes copies the
/// O(k log n) nodes on their paths, not the n results (an `Array` shared with the readers was copied whole at each
/// batch, a retain and a release for each result).
///
/// Every leaf is at the same depth; a node other than the root holds ``minimumWidth`` to ``maximumWidth`` elements
/// (a leaf) or children. Reading is O(log n) by position (a binary search over positions is O(log² n) node steps).
///
/// - Important: A value, as `Array`: one copy is changed by one thread at a time; copies may be read from any thread
///   meanwhile (a node is changed in place only while no other copy holds it, `isKnownUniquelyReferenced`).
struct RankedTree<Element>: RandomAccessCollection {
    /// A node: a leaf's elements, or an inner node's children, with how many elements lie under it.
    final class Node {
        var elements: [Element]
        var children: [Node]
        var count: Int

        init(elements: [Element]) {
            self.elements = elements
            self.children = []
            self.count = elements.count
        }

        init(children: [Node], count: Int? = nil) {
            self.elements = []
            self.children = children
            self.count = count ?? children.reduce(0) { $0 + $1.count }
        }

        var isLeaf: Bool { children.isEmpty }
        var width: Int { isLeaf ? elements.count : children.count }

        func copy() -> Node { isLeaf ? Node(elements: elements) : Node(children: children, count: count) }

        /// The child that holds position `position` (of this inner node), and the position within it; with
        /// `inserting`, a position at a child's end belongs to that child.
        func child(at position: Int, inserting: Bool = false) -> (index: Int, offset: Int) {
            var offset = position
            for (index, child) in children.enumerated() {
                if offset < child.count || (inserting && offset == child.count) { return (index, offset) }
                offset -= child.count
            }
            preconditionFailure("position \(position) is outside a node of \(count)")
        }

        /// Splits a node that holds more than ``maximumWidth``: the second half becomes the node returned.
        func split() -> Node {
            let half = width / 2
            let right: Node
            if isLeaf {
                right = Node(elements: Array(elements[half...]))
                elements.removeSubrange(half...)
            } else {
                right = Node(children: Array(children[half...]))
                children.removeSubrange(half...)
            }
            count -= right.count
            return right
        }
    }

    static var maximumWidth: Int { 64 }
    static var minimumWidth: Int { 16 }

    private var root: Node

    init() { root = Node(elements: []) }

    /// A tree of `elements` in their order: O(n), nodes about three quarters full.
    init<S: Sequence>(_ elements: S) where S.Element == Element {
        var level = Self.groups(of: Array(elements)).map { Node(elements: Array($0)) }
        while level.count > 1 { level = Self.groups(of: level).map { Node(children: Array($0)) } }
        root = level.first ?? Node(elements: [])
    }

    /// `all` cut into runs of about three quarters of ``maximumWidth``, as even as they go (so that none but a
    /// single one is narrower than ``minimumWidth``).
    private static func groups<T>(of all: [T]) -> [ArraySlice<T>] {
        let fill = maximumWidth * 3 / 4
        let runs = (all.count + fill - 1) / fill
        guard runs > 1 else { return all.isEmpty ? [] : [all[...]] }
        var start = 0
        return (0..<runs).map { run in
            let end = start + all.count / runs + (run < all.count % runs ? 1 : 0)
            defer { start = end }
            return all[start..<end]
        }
    }

    var startIndex: Int { 0 }
    var endIndex: Int { root.count }
    var count: Int { root.count }

    /// Whether two trees are the same copy (share their root): what a reader's cache of the elements is kept for.
    func isSameCopy(as other: RankedTree) -> Bool { root === other.root }

    subscript(position: Int) -> Element {
        get {
            precondition(position >= 0 && position < root.count, "position \(position) outside 0..<\(root.count)")
            var node = root
            var offset = position
            while !node.isLeaf {
                let (index, within) = node.child(at: offset)
                node = node.children[index]
                offset = within
            }
            return node.elements[offset]
        }
        set {
            precondition(position >= 0 && position < root.count, "position \(position) outside 0..<\(root.count)")
            Self.replace(at: position, with: newValue, in: &root)
        }
    }

    /// The first position whose element is not before the one looked for, given `isBefore` true for a first part of
    /// the elements and false for the rest: where that element is, or would go. O(log² n) node steps.
    func partitioningPosition(where isBefore: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = low + (high - low) / 2
            if isBefore(self[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    mutating func insert(_ element: Element, at position: Int) {
        precondition(position >= 0 && position <= root.count, "position \(position) outside 0...\(root.count)")
        if let right = Self.insert(element, at: position, into: &root) { root = Node(children: [root, right]) }
    }

    @discardableResult
    mutating func remove(at position: Int) -> Element {
        precondition(position >= 0 && position < root.count, "position \(position) outside 0..<\(root.count)")
        let element = Self.remove(at: position, from: &root)
        if !root.isLeaf, root.children.count == 1 { root = root.children[0] }
        return element
    }

    private static func makeUnique(_ node: inout Node) {
        if !isKnownUniquelyReferenced(&node) { node = node.copy() }
    }

    private static func replace(at position: Int, with element: Element, in node: inout Node) {
        makeUnique(&node)
        if node.isLeaf {
            node.elements[position] = element
        } else {
            let (index, offset) = node.child(at: position)
            replace(at: offset, with: element, in: &node.children[index])
        }
    }

    /// Puts `element` at `position` under `node`; a node that grew too wide splits, and its second half is returned
    /// for the parent to hold after it.
    private static func insert(_ element: Element, at position: Int, into node: inout Node) -> Node? {
        makeUnique(&node)
        node.count += 1
        if node.isLeaf {
            node.elements.insert(element, at: position)
        } else {
            let (index, offset) = node.child(at: position, inserting: true)
            if let right = insert(element, at: offset, into: &node.children[index]) {
                node.children.insert(right, at: index + 1)
            }
        }
        return node.width > maximumWidth ? node.split() : nil
    }

    /// Takes the element at `position` out from under `node`; a child left too narrow is joined with a neighbour
    /// (and split again if the two are too wide for one).
    private static func remove(at position: Int, from node: inout Node) -> Element {
        makeUnique(&node)
        node.count -= 1
        if node.isLeaf { return node.elements.remove(at: position) }
        let (index, offset) = node.child(at: position)
        let element = remove(at: offset, from: &node.children[index])
        if node.children[index].width < minimumWidth, node.children.count > 1 {
            let left = index + 1 < node.children.count ? index : index - 1
            makeUnique(&node.children[left])
            let right = node.children.remove(at: left + 1)
            let joined = node.children[left]
            joined.count += right.count
            if joined.isLeaf { joined.elements += right.elements } else { joined.children += right.children }
            if joined.width > maximumWidth { node.children.insert(joined.split(), at: left + 1) }
        }
        return element
    }

    /// The identities of the nodes, for the tests: what two copies share.
    func nodeIdentities() -> Set<ObjectIdentifier> {
        var found: Set<ObjectIdentifier> = []
        var stack = [root]
        while let node = stack.popLast() {
            found.insert(ObjectIdentifier(node))
            stack += node.children
        }
        return found
    }

    /// How many levels of nodes the tree has (1: the root is a leaf), for the tests.
    var height: Int {
        var levels = 1
        var node = root
        while !node.isLeaf {
            levels += 1
            node = node.children[0]
        }
        return levels
    }

    /// What breaks the tree's rules, for the tests: `nil` when every leaf is at one depth, every node but the root
    /// within its widths, an inner root holds two children or more, and every count is right.
    func invariantViolation() -> String? {
        if !root.isLeaf, root.children.count < 2 { return "an inner root of \(root.children.count) child" }
        var leafDepth: Int?
        func check(_ node: Node, depth: Int) -> String? {
            if node !== root, node.width < Self.minimumWidth || node.width > Self.maximumWidth {
                return "a node of width \(node.width) at depth \(depth)"
            }
            if node.isLeaf {
                if leafDepth == nil { leafDepth = depth }
                if leafDepth != depth { return "leaves at depths \(leafDepth!) and \(depth)" }
                return node.count == node.elements.count ? nil : "a leaf counts \(node.count) of \(node.elements.count)"
            }
            let sum = node.children.reduce(0) { $0 + $1.count }
            if sum != node.count { return "a node counts \(node.count) of \(sum)" }
            for child in node.children { if let violation = check(child, depth: depth + 1) { return violation } }
            return nil
        }
        return check(root, depth: 0)
    }

    /// The elements in order, a leaf at a time: O(n) for all of them.
    struct Iterator: IteratorProtocol {
        private var path: [(node: Node, next: Int)]
        private var leaf: [Element] = []
        private var nextInLeaf = 0

        init(root: Node) { path = [(root, 0)] }

        mutating func next() -> Element? {
            while nextInLeaf == leaf.count {
                guard let (node, index) = path.popLast() else { return nil }
                if node.isLeaf {
                    leaf = node.elements
                    nextInLeaf = 0
                } else if index < node.children.count {
                    path.append((node, index + 1))
                    path.append((node.children[index], 0))
                }
            }
            defer { nextInLeaf += 1 }
            return leaf[nextInLeaf]
        }
    }

    func makeIterator() -> Iterator { Iterator(root: root) }
}
