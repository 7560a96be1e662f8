import FCCore

/// The waiting rules of docs/SEMANTICS.md §2 written a second time, plainly and without the access-node tree, so that
/// the simulator checks the arbiter's indexed implementation against an independent statement of the same rules.
enum SpecModel {
    /// The path that stands for `path`: its outermost ancestor-or-self whose name has a package extension.
    /// (The simulator never declares packages by presenter, so the extension is the whole rule here.)
    static func effectivePath(_ path: ItemPath, packageExtensions: Set<[UInt8]>) -> ItemPath {
        for depth in 1..<(path.depth + 1) {
            let prefix = path.prefix(depth)
            if let ext = prefix.pathExtension, packageExtensions.contains(ext) { return prefix }
        }
        return path
    }

    /// Rules 1 to 3 for two items, given their effective paths.
    static func conflict(_ a: ItemPath, _ accessA: Access, _ b: ItemPath, _ accessB: Access) -> Bool {
        if a == b { return accessA.isWrite || accessB.isWrite }
        if b.isDescendant(of: a) { return accessA.coversSubtree }
        if a.isDescendant(of: b) { return accessB.coversSubtree }
        return false
    }

    /// Rule 4. `onePurpose`: the clients whose claims all have one purpose, whose leases stand with it (§13).
    static func exempt(_ a: ClaimRequest, _ b: ClaimRequest, onePurpose: Set<ClientID> = []) -> Bool {
        if a.id.isLease || b.id.isLease {
            // Nothing passes a lease (§13) but a claim of its holder's one purpose.
            let (lease, other) = a.id.isLease ? (a, b) : (b, a)
            return onePurpose.contains(lease.client) && !other.id.isReserved && lease.purpose == other.purpose
        }
        if a.client == b.client && a.coordinator == b.coordinator { return true }
        if let pa = a.filePresenter, pa == b.filePresenter { return true }
        return a.purpose == b.purpose
    }

    static func conflict(
        _ a: ArbiterSnapshot.Claim,
        _ b: ArbiterSnapshot.Claim,
        packageExtensions: Set<[UInt8]>,
        onePurpose: Set<ClientID> = []
    ) -> Bool {
        guard a.request.id != b.request.id, !exempt(a.request, b.request, onePurpose: onePurpose) else { return false }
        for (pathA, accessA) in zip(a.paths, a.accesses) {
            let effA = effectivePath(pathA, packageExtensions: packageExtensions)
            for (pathB, accessB) in zip(b.paths, b.accesses) {
                let effB = effectivePath(pathB, packageExtensions: packageExtensions)
                if conflict(effA, accessA, effB, accessB) { return true }
            }
        }
        return false
    }
}
