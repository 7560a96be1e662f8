/// One node of the access tree: a path component with the presenters and claim items that sit exactly there.
///
/// Nodes are created on demand. A leaf that comes to hold nothing is kept for reuse in the tree's bounded idle queue
/// (``IdleNodes``) and pruned, with its ancestors that hold nothing, when it leaves that queue. Each node also counts
/// the claim items
/// and presenters in its whole subtree, so that a search below a node visits only branches that hold something:
/// a claim's cost depends on the depth of its path and on what it affects, never on how many presenters or claims
/// exist elsewhere in the tree.
///
/// Not thread-safe: owned by one ``Arbiter``.
final class AccessNode {
    let name: [UInt8]
    unowned let parent: AccessNode?
    var children = ChildNodes()
    /// Presenters whose item is exactly this node, in registration order.
    var presenters: [PresenterID] = []
    /// Claim items whose effective item (the item, or its outermost enclosing package) is this node.
    var entries: [EntryRef] = []
    /// Claim items at this node and below it.
    var subtreeEntries = 0
    /// Presenters at this node and below it.
    var subtreePresenters = 0
    /// Presenters that declared this node a package.
    var packageDeclarations = 0
    /// `true` while the node sits in the tree's idle queue (``IdleNodes``); such a node is pruned only when it
    /// leaves the queue.
    var isQueuedIdle = false

    init(name: [UInt8], parent: AccessNode?) {
        self.name = name
        self.parent = parent
    }

    var isUnused: Bool {
        children.isEmpty && presenters.isEmpty && entries.isEmpty && packageDeclarations == 0
    }
}

/// A reference to one item of one claim.
struct EntryRef: Hashable {
    var claim: ClaimID
    var index: Int
}

/// The tree of access nodes, rooted at `/`.
///
/// Not thread-safe: owned by one ``Arbiter``.
struct AccessTree {
    let root = AccessNode(name: [], parent: nil)
    let packageExtensions: Set<[UInt8]>
    /// Leaves that came to hold nothing, kept for the next claim or presenter on their path.
    let idle: IdleNodes

    init(packageExtensions: Set<[UInt8]>, idleNodeRetention: Int = ArbiterConfiguration.defaultIdleNodeRetention) {
        self.packageExtensions = packageExtensions
        self.idle = IdleNodes(limit: idleNodeRetention)
    }

    /// The node for `path`, if it exists.
    func existingNode(_ path: ItemPath) -> AccessNode? {
        var node = root
        for component in path.components {
            guard let child = node.children[component] else { return nil }
            node = child
        }
        return node
    }

    /// The node for `path`, created with its ancestors if missing.
    func node(_ path: ItemPath) -> AccessNode {
        var node = root
        for component in path.components {
            node = child(of: node, named: component)
        }
        return node
    }

    /// The node that stands for `path` in conflict checks: the outermost package at or above it, else the item's
    /// own node (docs/SEMANTICS.md §2 rule 2). Created if missing.
    func effectiveNode(_ path: ItemPath) -> AccessNode {
        var node = root
        for component in path.components {
            let next = child(of: node, named: component)
            if isPackage(next) { return next }
            node = next
        }
        return node
    }

    /// The path of the outermost package at or above `path`, or `path` itself.
    func effectivePath(_ path: ItemPath) -> ItemPath {
        var node: AccessNode? = root
        for (index, component) in path.components.enumerated() {
            let existing = node?.children[component]
            if isPackage(name: component, node: existing) { return path.prefix(index + 1) }
            node = existing
        }
        return path
    }

    func isPackage(_ node: AccessNode) -> Bool {
        isPackage(name: node.name, node: node)
    }

    func isPackage(name: [UInt8], node: AccessNode?) -> Bool {
        if let node, node.packageDeclarations > 0 { return true }
        guard let dot = name.lastIndex(of: ItemPath.dot), dot != name.startIndex else { return false }
        return packageExtensions.contains(Array(name[(dot + 1)...]))
    }

    /// The path of a node.
    func path(of node: AccessNode) -> ItemPath {
        var components: [[UInt8]] = []
        var current: AccessNode? = node
        while let n = current, n !== root {
            components.append(n.name)
            current = n.parent
        }
        return ItemPath(components: components.reversed())
    }

    func addEntry(_ ref: EntryRef, at node: AccessNode) {
        node.entries.append(ref)
        var current: AccessNode? = node
        while let n = current {
            n.subtreeEntries += 1
            current = n.parent
        }
    }

    func removeEntry(_ ref: EntryRef, at node: AccessNode) {
        guard let index = node.entries.firstIndex(of: ref) else { return }
        node.entries.remove(at: index)
        var current: AccessNode? = node
        while let n = current {
            n.subtreeEntries -= 1
            current = n.parent
        }
        retire(node)
    }

    func addPresenter(_ id: PresenterID, at node: AccessNode, declaresPackage: Bool) {
        node.presenters.append(id)
        if declaresPackage { node.packageDeclarations += 1 }
        var current: AccessNode? = node
        while let n = current {
            n.subtreePresenters += 1
            current = n.parent
        }
    }

    func removePresenter(_ id: PresenterID, at node: AccessNode, declaredPackage: Bool) {
        guard let index = node.presenters.firstIndex(of: id) else { return }
        node.presenters.remove(at: index)
        if declaredPackage { node.packageDeclarations -= 1 }
        var current: AccessNode? = node
        while let n = current {
            n.subtreePresenters -= 1
            current = n.parent
        }
        retire(node)
    }

    /// A node that may have come to hold nothing: an unused leaf joins the idle queue instead of being pruned, so
    /// that the next claim on the same path finds it (issue 12); the queue's oldest leaf beyond its limit is pruned.
    /// O(1) amortised, plus the depth of what is pruned.
    func retire(_ node: AccessNode) {
        guard node !== root, node.isUnused else { return }
        if idle.limit == 0 {
            prune(node)
            return
        }
        if !node.isQueuedIdle {
            node.isQueuedIdle = true
            idle.append(node)
        }
        while idle.count > idle.limit, let oldest = idle.removeOldest() {
            oldest.isQueuedIdle = false
            prune(oldest)
        }
    }

    /// Removes `node` and its ancestors while they hold nothing. An ancestor in the idle queue is left for the queue
    /// to prune; a node already detached from the tree (pruned before) is left alone.
    func prune(_ node: AccessNode) {
        var current = node
        while current !== root, current.isUnused, let parent = current.parent,
            parent.children[current.name] === current
        {
            parent.children[current.name] = nil
            current = parent
            if current.isQueuedIdle { break }
        }
    }

    /// Calls `body` for every node strictly below `node` whose subtree holds claim items.
    func forEachDescendantWithEntries(of node: AccessNode, _ body: (AccessNode) -> Void) {
        for child in node.children.values where child.subtreeEntries > 0 {
            body(child)
            forEachDescendantWithEntries(of: child, body)
        }
    }

    /// Calls `body` for every node strictly below `node` whose subtree holds presenters, parents first.
    func forEachDescendantWithPresenters(of node: AccessNode, _ body: (AccessNode) -> Void) {
        for child in node.children.values.sorted(by: { $0.name.lexicographicallyPrecedes($1.name) })
        where child.subtreePresenters > 0 {
            body(child)
            forEachDescendantWithPresenters(of: child, body)
        }
    }

    /// The number of nodes, the root included.
    var nodeCount: Int {
        func count(_ node: AccessNode) -> Int { 1 + node.children.values.reduce(0) { $0 + count($1) } }
        return count(root)
    }

    /// The number of nodes other than the root whose subtree holds nothing, and how many of them are leaves (for
    /// snapshots and tests: O(nodes)). Every such leaf is in the idle queue, so there are at most its limit.
    var idleNodeCounts: (nodes: Int, leaves: Int) {
        var nodes = 0
        var leaves = 0
        func visit(_ node: AccessNode) -> Bool {
            var empty = node.presenters.isEmpty && node.entries.isEmpty && node.packageDeclarations == 0
            for child in node.children.values where !visit(child) { empty = false }
            if empty && node !== root {
                nodes += 1
                if node.children.isEmpty { leaves += 1 }
            }
            return empty
        }
        _ = visit(root)
        return (nodes, leaves)
    }

    private func child(of node: AccessNode, named name: [UInt8]) -> AccessNode {
        if let existing = node.children[name] { return existing }
        idle.nodesCreated += 1
        let created = AccessNode(name: name, parent: node)
        node.children[name] = created
        return created
    }
}

/// The leaves of an ``AccessTree`` that hold nothing, oldest first, kept so that a path claimed again and again does
/// not create and prune its nodes each time. At most ``limit`` are kept: memory stays bounded whatever paths come and
/// go. A queued node that is used again stays queued (it is skipped when it comes out), so each retirement appends at
/// most one entry and the queue never holds more than `limit` nodes.
///
/// Not thread-safe: owned by one ``Arbiter`` (through its tree).
final class IdleNodes {
    /// How many nodes the queue keeps (0: a leaf is pruned as soon as it holds nothing).
    let limit: Int
    /// Nodes created since the tree was made, the root excluded (``ArbiterStatistics/accessNodesCreated``).
    var nodesCreated = 0
    private var queue: [AccessNode] = []
    private var head = 0

    init(limit: Int) {
        precondition(limit >= 0, "idle node retention must not be negative")
        self.limit = limit
    }

    /// The number of nodes queued.
    var count: Int { queue.count - head }

    func append(_ node: AccessNode) {
        queue.append(node)
    }

    /// The oldest queued node, taken out of the queue.
    func removeOldest() -> AccessNode? {
        guard head < queue.count else { return nil }
        let node = queue[head]
        head += 1
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= queue.count {
            queue.removeSubrange(0..<head)
            head = 0
        }
        return node
    }
}
