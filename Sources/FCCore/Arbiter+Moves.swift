extension Arbiter {
    // MARK: item(at:didMoveTo:) (docs/SEMANTICS.md §2 rule 7 and §3)

    func itemMoved(_ claimID: ClaimID, from: ItemPath, to: ItemPath, fromName: [UInt8]? = nil) {
        guard let claim = claims[claimID], claim.phase == .granted,
            claim.entries.contains(where: { $0.access.isWrite })
        else {
            log(
                .warning,
                "move reported outside a granted write; ignored",
                ["claim.id": "\(claimID.rawValue)", "item.path": "\(from)"]
            )
            return
        }
        // `from == to`: a rename that keeps the canonical path (a case-only rename in a case-insensitive directory,
        // issue 14; the client drops calls that rename nothing). Its presenters hear it as a move; nothing moves in
        // the tree and no claim follows.
        let inPlace = from == to
        guard !to.isDescendant(of: from) else {
            log(.warning, "move of an item into itself ignored", ["item.path": "\(from)", "item.newPath": "\(to)"])
            return
        }
        if !inPlace { claim.moves.append((from, to)) }
        let exempt = claim.request.filePresenter
        var told: Set<PresenterID> = []

        // Presenters of the item and of everything inside it follow it, and are told where it went.
        var moved: [(PresenterRecord, ItemPath)] = []
        if let node = tree.existingNode(from) {
            var nodes = [node]
            tree.forEachDescendantWithPresenters(of: node) { nodes.append($0) }
            for current in nodes {
                for presenterID in current.presenters {
                    guard let presenter = presenters[presenterID], let old = presenter.registration.path,
                        let new = old.relocated(from: from, to: to)
                    else { continue }
                    moved.append((presenter, new))
                }
            }
        }
        for (presenter, new) in moved {
            if !inPlace { relocate(presenter, to: new) }
            let id = presenter.registration.id
            told.insert(id)
            guard id != exempt else { continue }
            notifyOnce(claim, presenter, .presentedItemDidMove(to: new))
        }

        // Presenters of enclosing directories, of the old and of the new location: one message each.
        for path in inPlace ? [from] : [from, to] {
            var node: AccessNode? = tree.root
            for component in path.components {
                guard let current = node else { break }
                for presenterID in current.presenters where presenterID != exempt && !told.contains(presenterID) {
                    guard let presenter = presenters[presenterID] else { continue }
                    told.insert(presenterID)
                    // One that does not declare subitem did move hears did change (``delivered(_:to:)``).
                    notifyOnce(
                        claim,
                        presenter,
                        .presentedSubitemDidMove(from: from, to: to),
                        movedFromName: inPlace ? fromName : nil
                    )
                }
                node = current.children[component]
            }
        }

        guard !inPlace else { return }
        // The mover holds the new location too, as it held the old: claims that follow the item (below) wait for
        // it there, and new claims on the new location as well.
        for entry in claim.entries {
            guard let new = entry.path.relocated(from: from, to: to),
                !claim.entries.contains(where: { $0.path == new && $0.access == entry.access })
            else { continue }
            let node = tree.effectiveNode(new)
            claim.entries.append(ClaimEntry(path: new, access: entry.access, node: node))
            tree.addEntry(EntryRef(claim: claimID, index: claim.entries.count - 1), at: node)
        }

        // Claims still waiting follow the item, except writers that replace whatever is at the old location. Parked
        // ones too: they are put back first, since what they conflict with may change.
        unparkAll()
        for pendingID in pendingOrder {
            guard let pending = claims[pendingID], pending.phase != .granted else { continue }
            pending.askedHostGate = false  // It may come to wait at another gate now: it says so again.
            for index in pending.entries.indices {
                let entry = pending.entries[index]
                if case .write(let options) = entry.access, options.contains(.forReplacing) { continue }
                guard let new = entry.path.relocated(from: from, to: to) else { continue }
                let ref = EntryRef(claim: pendingID, index: index)
                let newNode = tree.effectiveNode(new)
                tree.addEntry(ref, at: newNode)
                tree.removeEntry(ref, at: entry.node)
                pending.entries[index].path = new
                pending.entries[index].node = newNode
            }
        }
    }

    // MARK: Versions (docs/SEMANTICS.md §3, "version added, removed, resolved")

    func versionChanged(_ claimID: ClaimID, _ path: ItemPath, _ change: VersionChange) {
        guard let claim = claims[claimID], claim.phase == .granted else {
            log(
                .warning,
                "version change reported outside a granted claim; ignored",
                ["claim.id": "\(claimID.rawValue)"]
            )
            return
        }
        // Every presenter of the item hears, the writer's own included.
        if let node = tree.existingNode(path) {
            for presenterID in node.presenters {
                guard let presenter = presenters[presenterID] else { continue }
                notifyOnce(claim, presenter, .presentedItemVersion(change))
            }
        }
        var node: AccessNode? = tree.root
        for component in path.components {
            guard let current = node else { break }
            for presenterID in current.presenters {
                guard let presenter = presenters[presenterID] else { continue }
                let kind = PresenterMessageKind.presentedSubitemVersion(at: path, change)
                // One that does not declare the subitem version callback hears did change instead, which is no
                // version message: the claim's own presenter, never told of its own changes, is not told that.
                if presenterID == claim.request.filePresenter
                    && !presenter.registration.callbacks.contains(kind.callback)
                {
                    continue
                }
                notifyOnce(claim, presenter, kind)
            }
            node = current.children[component]
        }
    }
}
