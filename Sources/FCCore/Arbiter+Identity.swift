// One file, many paths (issue 26): a claim item or a presenter that carries the file's identity (`ItemIdentity`,
// `(st_dev, st_ino)` read by the client) also meets the claims and presenters that reached the same file through
// another name: a hard link, a bind mount, a portal path. The arbiter keeps an index from each identity to the live
// claim items and presenters that carry it; a claim is given, after its own items, the other names the index knows
// (``IdentityIndex/otherNames``), with the access of the item that named the file, so that the access-node tree
// orders it against every name at once and each presenter hears its own path. Nothing else in the core changes: the
// extra entries are entries like the rest (rules 1 to 7 apply unchanged), and a grant names the requested items only.

/// The live holders of each identity, owned by one ``Arbiter`` (not thread-safe, like the arbiter), grouped by the
/// path each stands at, so that a claim's other names cost what the file's distinct names are, not its holders (a
/// thousand readers queued on one file through one name are one name).
///
/// Moves relocate presenters and waiting claims' items: after an event that can move something, the index is
/// ``stale`` and regrouped by current paths at its next use (rare: O(holders) once per move).
///
/// Bounded by the live claims' items and presenters: a holder leaves with its claim or presenter, and a presenter's
/// identity is forgotten when its name is deleted (a link removed: the name no longer reaches the file).
struct IdentityIndex {
    /// What carries an identity.
    enum Holder: Hashable {
        /// A registered presenter (its path now).
        case presenter(PresenterID)
        /// An item of a live claim, by its index in the request (its path now: waiting claims follow moves).
        case claim(ClaimID, item: Int)
    }

    /// The most other names one item may meet. More than this many live names of one file at once is not a real
    /// workload; the claim fails with a clear error rather than meet only some of them.
    static let maximumOtherNames = 64

    /// The holders of each identity, by the path they stood at when last grouped (`nil`: a presenter of no item).
    var holders: [ItemIdentity: [ItemPath?: Set<Holder>]] = [:]
    /// Whether something may have moved since the holders were grouped.
    var stale = false
    /// The holders whose file had other names (hard links) when their client read it: while any is live, no lease
    /// is granted (issue 23; ``Arbiter/filesWithOtherNamesHeld``).
    var withOtherNames: Set<Holder> = []

    mutating func insert(_ holder: Holder, for identity: ItemIdentity, at path: ItemPath?, hasOtherNames: Bool) {
        holders[identity, default: [:]][path, default: []].insert(holder)
        if hasOtherNames { withOtherNames.insert(holder) }
    }

    mutating func remove(_ holder: Holder, for identity: ItemIdentity) {
        withOtherNames.remove(holder)
        guard var byPath = holders[identity] else { return }
        for (path, var group) in byPath where group.contains(holder) {
            group.remove(holder)
            byPath[path] = group.isEmpty ? nil : group
        }
        holders[identity] = byPath.isEmpty ? nil : byPath
    }
}

extension Access {
    /// The access a claim takes on the other names of a file it names (issue 26): the same read; the same write
    /// when it changes what the file holds. A deletion or a move acts on the name alone (the file stays under its
    /// other names): `nil`. A replacement is a plain write there (the other names' presenters are not asked to
    /// accommodate a deletion).
    var onOtherNames: Access? {
        switch self {
        case .read:
            return self
        case .write(let options):
            guard options.isDisjoint(with: [.forDeleting, .forMoving]) else { return nil }
            return .write(options.subtracting(.forReplacing))
        }
    }
}

extension Arbiter {
    /// ``requestClaim(_:otherNames:)`` with the other names of the files the request's items name.
    func requestClaimMeetingOtherNames(_ request: ClaimRequest) {
        guard request.items.contains(where: { $0.identity != nil }), claims[request.id] == nil else {
            requestClaim(request)
            return
        }
        // Made at the first other name found: most files have none (a set per claim was a tenth of a leased read).
        var taken: Set<ClaimItem>?
        var others: [ClaimItem] = []
        for item in request.items {
            guard let identity = item.identity, let access = item.access.onOtherNames else { continue }
            let names = otherNames(of: identity, besides: item.path)
            if names.count > IdentityIndex.maximumOtherNames {
                log(.warning, "claim refused: a file has too many live names", ["claim.id": "\(request.id.rawValue)"])
                effects.append(
                    .fail(
                        request.id,
                        client: request.client,
                        .invalidRequest(
                            "\(item.path) is one file with \(names.count) other names in use by claims and presenters; "
                                + "at most \(IdentityIndex.maximumOtherNames) can be coordinated at once"
                        )
                    )
                )
                statistics.claimsFailed += 1
                return
            }
            for path in names {
                let other = ClaimItem(path: path, access: access)
                if taken == nil { taken = Set(request.items.map { ClaimItem(path: $0.path, access: $0.access) }) }
                if taken?.insert(other).inserted == true { others.append(other) }
            }
        }
        requestClaim(request, otherNames: others)
        guard claims[request.id] != nil else { return }
        for (index, item) in request.items.enumerated() {
            guard let identity = item.identity else { continue }
            identities.insert(
                .claim(request.id, item: index),
                for: identity,
                at: item.path,
                hasOtherNames: item.hasOtherNames
            )
        }
    }

    /// Marks the index for regrouping after an event that can move presenters or claims' items.
    func noteMoves(_ event: ArbiterEvent) {
        guard !identities.holders.isEmpty else { return }
        switch event {
        case .itemMoved, .presenterURLChanged:
            identities.stale = true
        case .fileSystemChanged(let events, _, _, _):
            // Renames seen by the watcher relocate presenters; other changes move nothing.
            for event in events {
                switch event {
                case .movedFrom, .movedTo: identities.stale = true
                default: continue
                }
            }
        default:
            break
        }
    }

    /// Groups every holder again by the path it stands at now.
    private func regroupIdentities() {
        identities.stale = false
        for (identity, byPath) in identities.holders {
            var regrouped: [ItemPath?: Set<IdentityIndex.Holder>] = [:]
            for holder in byPath.values.joined() {
                switch holder {
                case .presenter(let id):
                    guard let record = presenters[id] else {
                        identities.withOtherNames.remove(holder)
                        continue
                    }
                    regrouped[record.registration.path, default: []].insert(holder)
                case .claim(let id, let index):
                    guard let claim = claims[id], index < claim.entries.count else {
                        identities.withOtherNames.remove(holder)
                        continue
                    }
                    regrouped[claim.entries[index].path, default: []].insert(holder)
                }
            }
            identities.holders[identity] = regrouped.isEmpty ? nil : regrouped
        }
    }

    /// The paths, other than `path`, through which live claims and presenters reached the file `identity`, sorted
    /// (so that a schedule replays alike).
    func otherNames(of identity: ItemIdentity, besides path: ItemPath) -> [ItemPath] {
        if identities.stale { regroupIdentities() }
        guard let byPath = identities.holders[identity] else { return [] }
        return byPath.keys.compactMap { $0 }.filter { $0 != path }.sorted()
    }

    /// A presenter joins the index (``addPresenter``).
    func indexIdentity(of registration: PresenterRegistration) {
        guard let identity = registration.identity, registration.path != nil else { return }
        identities.insert(
            .presenter(registration.id),
            for: identity,
            at: registration.path,
            hasOtherNames: registration.hasOtherNames
        )
    }

    /// A presenter leaves the index (``removePresenter(_:reason:)``).
    func forgetIdentity(of registration: PresenterRegistration) {
        guard let identity = registration.identity else { return }
        identities.remove(.presenter(registration.id), for: identity)
    }

    /// A claim's items leave the index (``remove(_:)``).
    func forgetIdentities(of claim: ClaimRecord) {
        for (index, item) in claim.request.items.enumerated() {
            guard let identity = item.identity else { continue }
            identities.remove(.claim(claim.id, item: index), for: identity)
        }
    }

    /// The name `path` was deleted (a granted deleting claim ended, or the watcher saw it go): the presenters there
    /// no longer reach the file through it, so claims through the file's other names stop asking them. A link
    /// removed while presented: its presenter heard the deletion, the file's other names keep their presenters.
    func forgetIdentities(ofPresentersAt path: ItemPath) {
        guard !identities.holders.isEmpty, let node = tree.existingNode(path) else { return }
        for id in node.presenters {
            guard let record = presenters[id], let identity = record.registration.identity else { continue }
            identities.remove(.presenter(id), for: identity)
            record.registration.identity = nil
        }
    }

    /// ``forgetIdentities(ofPresentersAt:)`` for the names a granted claim deleted.
    func forgetDeletedNames(of claim: ClaimRecord) {
        guard !identities.holders.isEmpty else { return }
        for (entry, item) in zip(claim.entries, claim.request.items) {
            guard case .write(let options) = item.access, options.contains(.forDeleting) else { continue }
            forgetIdentities(ofPresentersAt: entry.path)
        }
    }

    /// A granted claim ends: each file with other names that it wrote (its contents: not a deletion or a move) is
    /// reported to the host once (``ArbiterEffect/fileWithOtherNamesWritten(_:)``), so that the watcher tells the
    /// presenters of folders that hold another name of it and that no claim or presenter here names. Its echo under
    /// the names the claim took is suppressed as any echo is (``recordEchoes(of:created:outcome:)`` ran before).
    func reportWritesToFilesWithOtherNames(_ claim: ClaimRecord) {
        guard configuration.watchesFileSystem else { return }
        var reported: Set<ItemIdentity> = []
        for item in claim.request.items where item.hasOtherNames {
            guard let identity = item.identity, case .write? = item.access.onOtherNames else { continue }
            if reported.insert(identity).inserted { effects.append(.fileWithOtherNamesWritten(identity)) }
        }
    }

    /// ``forgetIdentities(ofPresentersAt:)`` for the deletions the watcher read.
    func forgetDeletedNames(in events: [FileSystemEvent]) {
        guard !identities.holders.isEmpty else { return }
        for case .deleted(let path) in events { forgetIdentities(ofPresentersAt: path) }
    }
}
