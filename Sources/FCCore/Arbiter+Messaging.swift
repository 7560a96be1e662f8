extension Arbiter {
    // MARK: Before the access (docs/SEMANTICS.md §3, "presenter of the item", "presenters inside", packages)

    /// Plans and sends the messages a claim owes presenters before its accessor may run.
    func startPreparing(_ claim: ClaimRecord) {
        claim.phase = .preparing
        var order: [PresenterID] = []
        var steps: [PresenterID: PlannedSteps] = [:]
        func add(_ presenter: PresenterID, _ update: (inout PlannedSteps) -> Void) {
            guard presenter != claim.request.filePresenter else { return }
            if steps[presenter] == nil {
                order.append(presenter)
                steps[presenter] = PlannedSteps()
            }
            update(&steps[presenter]!)
        }
        for entry in claim.entries {
            let path = entry.path
            // Presenters of enclosing directories: packages hear as if their own item were accessed; plain
            // directories are asked to accommodate the deletion of an item inside them (Apple's documented contract),
            // unless the item is inside a package: then the package, one document, is what changes.
            var node: AccessNode? = tree.root
            var plainDirectories: [PresenterID] = []
            var insidePackage = false
            for component in path.components {
                guard let current = node else { break }
                if current !== tree.root {
                    if tree.isPackage(current) {
                        insidePackage = true
                        for presenter in current.presenters {
                            add(presenter) { $0.addForEnclosingPackage(entry.access, item: path) }
                        }
                    } else if entry.access.deletesItem {
                        plainDirectories += current.presenters
                    }
                }
                node = current.children[component]
            }
            if !insidePackage {
                for presenter in plainDirectories {
                    add(presenter) { $0.addSubitemDeletion(path) }
                }
            }
            guard let itemNode = node else { continue }
            for presenter in itemNode.presenters {
                add(presenter) { $0.addForItem(entry.access) }
            }
            // Everything inside the item hears too: for deleting, moving and replacing writes (docs/SEMANTICS.md §3),
            // and for a preparation, whose top-level items stand for their contents (`prepare(forReadingItemsAt:…)`).
            if entry.access.coversSubtree || claim.request.isPreparation {
                tree.forEachDescendantWithPresenters(of: itemNode) { inside in
                    for presenter in inside.presenters {
                        add(presenter) {
                            if claim.request.isPreparation {
                                $0.addForItem(entry.access)
                            } else {
                                $0.addForContainedItem(entry.access)
                            }
                        }
                    }
                }
            }
        }
        for presenterID in order {
            guard let presenter = presenters[presenterID], let planned = steps[presenterID] else { continue }
            let kinds = planned.kinds.filter { presenter.registration.callbacks.contains($0.callback) }
            guard !kinds.isEmpty else { continue }
            claim.plans[presenterID] = Array(kinds.dropFirst())
            if claim.plans[presenterID]!.isEmpty { claim.plans[presenterID] = nil }
            sendRequest(kinds[0], to: presenter, for: claim)
        }
    }

    func sendRequest(_ kind: PresenterMessageKind, to presenter: PresenterRecord, for claim: ClaimRecord) {
        nextRequest += 1
        let requestID = RequestID(rawValue: nextRequest)
        let presenterID = presenter.registration.id
        requests[requestID] = PendingRequest(presenter: presenterID, claim: claim.id, kind: kind, sentAt: now)
        claim.outstanding[requestID] = presenterID
        statistics.messagesSent += 1
        effects.append(
            .message(
                PresenterMessage(
                    presenter: presenterID,
                    client: presenter.registration.client,
                    request: requestID,
                    claim: claim.id,
                    kind: kind
                )
            )
        )
        if let timeout = configuration.presenterTimeout {
            effects.append(.startTimer(.presenterReply(requestID), after: timeout))
        }
    }

    // MARK: Replies

    func presenterReplied(_ requestID: RequestID, _ reply: PresenterReply) {
        guard let request = requests.removeValue(forKey: requestID) else {
            if let late = timedOutRequests.removeValue(forKey: requestID) {
                lateReply(requestID, late, reply)
            } else {
                log(.debug, "reply to an unknown request ignored", ["request.id": "\(requestID.rawValue)"])
            }
            return
        }
        cancelTimer(for: requestID)
        guard let claimID = request.claim, let claim = claims[claimID] else {
            // The claim failed while the presenter was answering: hand its reacquirer straight back.
            if case .relinquished(reacquirer: true) = reply, let presenter = presenters[request.presenter] {
                sendNotification(.reacquire(relinquish: requestID), to: presenter, claim: nil)
            }
            return
        }
        claim.outstanding[requestID] = nil
        switch reply {
        case .relinquished(let reacquirer):
            if reacquirer { claim.reacquirers.append((request.presenter, requestID)) }
        case .succeeded:
            break
        case .failed(let error):
            log(
                .info,
                "presenter refused; the claim fails with its error",
                [
                    "claim.id": "\(claimID.rawValue)", "presenter.id": "\(request.presenter.rawValue)",
                    "error": "\(error)",
                ]
            )
            claim.plans[request.presenter] = nil
            fail(claim, .presenterError(error, presenter: request.presenter))
            return
        }
        sendNextStep(of: claim, to: request.presenter)
    }

    func sendNextStep(of claim: ClaimRecord, to presenterID: PresenterID) {
        guard var remaining = claim.plans[presenterID], !remaining.isEmpty else {
            claim.plans[presenterID] = nil
            return
        }
        let next = remaining.removeFirst()
        claim.plans[presenterID] = remaining.isEmpty ? nil : remaining
        guard let presenter = presenters[presenterID] else {
            claim.plans[presenterID] = nil
            return
        }
        sendRequest(next, to: presenter, for: claim)
    }

    func timerFired(_ timer: TimerID) {
        switch timer {
        case .deadlockCheck(let claimID):
            deadlockCheck(claimID)
        case .claimDeadline(let claimID):
            deadlinePassed(claimID)
        case .claimHoldLimit(let claimID):
            holdLimitPassed(claimID)
        case .fileSystemWindow:
            watchWindowElapsed()
        case .leaseMinimumHold(let lease):
            leaseMinimumHoldPassed(lease)
        case .leaseRecallReply(let lease):
            leaseRecallUnanswered(lease)
        case .leaseBackoff(let client):
            clients[client]?.inBackoff = false
        case .leaseOrphaned(let lease):
            orphanedLeaseTimePassed(lease)
        case .presenterReply(let requestID):
            guard let request = requests[requestID] else { return }
            statistics.presenterTimeouts += 1
            log(
                .warning,
                "presenter did not answer in time; treated as having relinquished",
                [
                    "presenter.id": "\(request.presenter.rawValue)", "request.id": "\(requestID.rawValue)",
                    "request.kind": "\(request.kind)",
                ]
            )
            let reply: PresenterReply =
                switch request.kind {
                case .relinquishToReader, .relinquishToWriter: .relinquished(reacquirer: false)
                default: .succeeded
                }
            presenterReplied(requestID, reply)
            // The presenter may still answer; a reacquirer it hands back then must not be lost.
            timedOutRequests[requestID] = request
        }
    }

    /// A reply that came after its presenter timeout. Only a reacquirer matters now: it runs when the claim ends,
    /// or at once if the claim has ended already.
    func lateReply(_ requestID: RequestID, _ request: PendingRequest, _ reply: PresenterReply) {
        guard case .relinquished(reacquirer: true) = reply, let presenter = presenters[request.presenter] else {
            return
        }
        if let claimID = request.claim, let claim = claims[claimID] {
            claim.reacquirers.append((request.presenter, requestID))
        } else {
            sendNotification(.reacquire(relinquish: requestID), to: presenter, claim: nil)
        }
    }

    // MARK: After the access

    /// Notifications owed for a granted claim that ended: did change, subitem did change or appear.
    func notifyAfterAccess(_ claim: ClaimRecord, created: [ItemPath]) {
        let createdSet = Set(created)
        func notify(_ presenterID: PresenterID, _ kind: PresenterMessageKind) {
            guard presenterID != claim.request.filePresenter, let presenter = presenters[presenterID] else { return }
            notifyOnce(claim, presenter, kind)
        }
        func notifyEnclosing(of path: ItemPath, appeared: Bool) {
            var node: AccessNode? = tree.root
            for component in path.components {
                guard let current = node else { return }
                for presenterID in current.presenters {
                    // A new item is a change under the directory, as macOS reports any write there (ported code
                    // refreshes its listings in subitem did change), and an appearance, as Apple's documentation
                    // promises (docs/SEMANTICS.md §3). A presenter that declares neither hears did change, once.
                    notify(presenterID, .presentedSubitemDidChange(at: path))
                    if appeared { notify(presenterID, .presentedSubitemDidAppear(at: path)) }
                }
                node = current.children[component]
            }
        }
        func touchedByMove(_ path: ItemPath) -> Bool {
            claim.moves.contains { $0.from.isEqualOrDescendant(of: path) || $0.to.isEqualOrDescendant(of: path) }
        }
        /// Where an item written by the claim is now: an item inside a directory the claim moved went with it.
        func currentPath(_ path: ItemPath) -> ItemPath {
            claim.moves.reduce(path) { current, move in current.relocated(from: move.from, to: move.to) ?? current }
        }
        for entry in claim.entries {
            guard case .write(let options) = entry.access, !touchedByMove(entry.path) else { continue }
            let path = currentPath(entry.path)
            if !options.contains(.forDeleting), let node = tree.existingNode(path) {
                for presenterID in node.presenters {
                    notify(presenterID, .presentedItemDidChange)
                }
            }
            notifyEnclosing(of: path, appeared: createdSet.contains(entry.path))
        }
        for path in created where !claim.entries.contains(where: { $0.path == path }) && !touchedByMove(path) {
            notifyEnclosing(of: path, appeared: true)
        }
    }

    /// Sends a notification on behalf of a claim unless the presenter does not implement it (nor, for a subitem
    /// notification, did change: ``delivered(_:to:)``) or already had the same one for this claim (exactly once,
    /// docs/SEMANTICS.md §3).
    func notifyOnce(
        _ claim: ClaimRecord,
        _ presenter: PresenterRecord,
        _ kind: PresenterMessageKind,
        movedFromName: [UInt8]? = nil
    ) {
        guard let delivered = delivered(kind, to: presenter),
            claim.sentNotifications.insert(PresenterMessageKey(presenter: presenter.registration.id, kind: delivered))
                .inserted
        else { return }
        sendNotification(
            delivered,
            to: presenter,
            claim: claim.id,
            movedFromName: delivered == kind ? movedFromName : nil
        )
    }

    /// What `presenter` hears for `kind`: `kind` when it declares that callback; for a subitem notification it does
    /// not declare, `presentedItemDidChange()` when it declares that; else nothing. A folder presenter that implements
    /// only `presentedItemDidChange()` hears that its folder's contents changed, as on macOS (issue 37,
    /// docs/SEMANTICS.md §3); sent once per claim or per watcher window, since the callers key "once" by what is sent.
    func delivered(_ kind: PresenterMessageKind, to presenter: PresenterRecord) -> PresenterMessageKind? {
        let callbacks = presenter.registration.callbacks
        if callbacks.contains(kind.callback) { return kind }
        guard PresenterCallbacks.subitemNotifications.contains(kind.callback),
            callbacks.contains(.presentedItemDidChange)
        else { return nil }
        return .presentedItemDidChange
    }

    func sendReacquirers(_ claim: ClaimRecord) {
        for (presenterID, requestID) in claim.reacquirers {
            guard let presenter = presenters[presenterID] else { continue }
            sendNotification(.reacquire(relinquish: requestID), to: presenter, claim: claim.id)
        }
        claim.reacquirers.removeAll()
    }

    func sendNotification(
        _ kind: PresenterMessageKind,
        to presenter: PresenterRecord,
        claim: ClaimID?,
        movedFromName: [UInt8]? = nil
    ) {
        statistics.messagesSent += 1
        effects.append(
            .message(
                PresenterMessage(
                    presenter: presenter.registration.id,
                    client: presenter.registration.client,
                    request: nil,
                    claim: claim,
                    kind: kind,
                    movedFromName: movedFromName
                )
            )
        )
    }
}

/// A (presenter, message) pair, to send each notification at most once per claim.
struct PresenterMessageKey: Hashable {
    var presenter: PresenterID
    var kind: PresenterMessageKind
}

/// The requests one presenter owes one claim before its accessor runs, merged across the claim's items.
///
/// Order on the presenter's queue: relinquish (to a writer if any item is written, else to a reader), then save,
/// then accommodate deletion, then accommodate subitem deletions.
struct PlannedSteps {
    var relinquish: PresenterMessageKind?
    var save = false
    var accommodateDeletion = false
    var subitemDeletions: [ItemPath] = []

    var kinds: [PresenterMessageKind] {
        var out: [PresenterMessageKind] = []
        if let relinquish { out.append(relinquish) }
        if save { out.append(.savePresentedItemChanges) }
        if accommodateDeletion { out.append(.accommodatePresentedItemDeletion) }
        out += subitemDeletions.map { .accommodatePresentedSubitemDeletion(at: $0) }
        return out
    }

    mutating func relinquish(for access: Access) {
        if access.isWrite {
            relinquish = .relinquishToWriter
        } else if relinquish == nil {
            relinquish = .relinquishToReader
        }
    }

    /// The presenter of the item itself.
    mutating func addForItem(_ access: Access) {
        relinquish(for: access)
        switch access {
        case .read(let options):
            if !options.contains(.withoutChanges) { save = true }
        case .write(let options):
            if options.contains(.forMerging) { save = true }
            if !options.isDisjoint(with: [.forDeleting, .forReplacing]) { accommodateDeletion = true }
        }
    }

    /// The presenter of a package that encloses the item: it hears as if the package were accessed, but a deletion
    /// inside it is a subitem deletion.
    mutating func addForEnclosingPackage(_ access: Access, item: ItemPath) {
        relinquish(for: access)
        switch access {
        case .read(let options):
            if !options.contains(.withoutChanges) { save = true }
        case .write(let options):
            if options.contains(.forMerging) { save = true }
            if !options.isDisjoint(with: [.forDeleting, .forReplacing]), !subitemDeletions.contains(item) {
                subitemDeletions.append(item)
            }
        }
    }

    /// The presenter of a plain directory that encloses an item that is deleted or replaced.
    mutating func addSubitemDeletion(_ item: ItemPath) {
        if !subitemDeletions.contains(item) { subitemDeletions.append(item) }
    }

    /// The presenter of an item inside a directory that is deleted, moved or replaced.
    mutating func addForContainedItem(_ access: Access) {
        relinquish(for: access)
        if case .write(let options) = access, !options.isDisjoint(with: [.forDeleting, .forReplacing]) {
            accommodateDeletion = true
        }
    }
}
