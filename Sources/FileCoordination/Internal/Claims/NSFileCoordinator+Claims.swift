import FCCore
import FCProtocol
import FCSystem
import FCToolkit
import Foundation
import Synchronization

// The claim machinery every coordinated call shares: the claim request made from URLs, its submission, the wait,
// the accessor under the claim, the finish. The public methods are in NSFileCoordinator.swift.

extension NSFileCoordinator {
    /// A claim ready to be submitted, with what is needed to answer the caller.
    struct PreparedClaim {
        var id: ClaimID
        var claimRequest: ClaimRequest
        var waiter: ClaimWaiter
        var originals: [URL]
        var canonical: [ItemPath]
        var existedBefore: [Bool?]
        /// The transport in charge when the claim was registered (`nil`: none yet; the submission connects).
        var route: (any ArbiterTransport)?
        /// The daemon connection a blocked caller read its grant from: its finish goes there while it lasts.
        var sentOn: DaemonTransport?

        func urls(for paths: [ItemPath]) -> [URL] {
            zip(zip(originals, canonical), paths).map { pair, path in
                URLMapping.url(for: path, spelledAs: pair.0, canonical: pair.1)
            }
        }

        /// Written items that did not exist before the accessor and do now.
        func createdItems(paths: [ItemPath]) -> [ItemPath] {
            zip(existedBefore, paths).compactMap { existed, path in
                // `lstat` of the key's bytes, as the canonicalisation looked at it before (a key whose final link the
                // access follows is its target already): a link is an item, whether or not its target exists. A name
                // that is not UTF-8 is looked up as it is.
                guard existed == false,
                    (try? FileSystemCalls.status(pathBytes: path.bytes, followingLinks: false, readingMount: false))
                        != nil
                else { return nil }
                return path
            }
        }

        /// The most items whose state a finish carries.
        static let maximumStampedItems = 64

        /// What a write left behind, read right after its accessor returned (issue 37): the clock first, then one
        /// `lstat` per written item. The daemon compares it with what its watcher reads, so that a change another
        /// process makes right after the write is reported and not taken for the write's echo. `nil` for a read.
        ///
        /// It makes one allocation of its own (the table of stamps): the written items are not gathered into an
        /// array, and each path is passed to `lstat` from a buffer on the stack (the write path's mallocs are gated,
        /// Benchmarks/Thresholds).
        func writeOutcome(paths: [ItemPath], created: [ItemPath]) -> WriteOutcome? {
            var writtenCount = 0
            for item in claimRequest.items where item.access.isWrite { writtenCount += 1 }
            guard writtenCount > 0 else { return nil }
            let endedAt = ChangeTimes.now
            // A write of many items says when it ended and nothing of each (its finish stays a small frame).
            guard writtenCount + created.count <= Self.maximumStampedItems else {
                return WriteOutcome(endedAt: endedAt, items: [:])
            }
            var items: [ItemPath: ItemStamp] = [:]
            items.reserveCapacity(writtenCount + created.count)
            func stamp(_ path: ItemPath) {
                guard items[path] == nil else { return }
                let state: ChangeTimes.FileState?
                do {
                    state = try ChangeTimes.state(ofPathByteCount: path.byteCount, writtenBy: path.copyBytes(into:))
                } catch { return }  // Not readable.
                items[path] =
                    state.map { .present(inode: $0.inode, size: $0.size, changeTime: $0.changeTime) } ?? .absent
            }
            for (item, path) in zip(claimRequest.items, paths) where item.access.isWrite { stamp(path) }
            for path in created { stamp(path) }
            return WriteOutcome(endedAt: endedAt, items: items)
        }
    }

    /// The error for a claim over the protocol's limits (a path longer than `PATH_MAX`, too many items), or `nil`.
    static func limitError(_ paths: [ItemPath], _ items: [(URL, Access)]) -> FileCoordinationError? {
        let limits = ProtocolLimits.default
        if paths.count > limits.maximumItemsPerClaim {
            return FileCoordinationError(
                .invalidRequest,
                "The call names \(paths.count) items; at most \(limits.maximumItemsPerClaim) can be coordinated "
                    + "at once. Coordinate them in smaller groups."
            )
        }
        for (path, (url, _)) in zip(paths, items) where path.byteCount > limits.maximumPathLength {
            return FileCoordinationError(
                .invalidRequest,
                "The path is \(path.byteCount) bytes long once symbolic links are resolved; at most "
                    + "\(limits.maximumPathLength) bytes (PATH_MAX) can be coordinated. The call was not coordinated "
                    + "and its accessor did not run.",
                url: url
            )
        }
        return nil
    }

    /// Makes the claim request of a call. `blocksThread` says whether the call blocks the calling thread while it
    /// waits (the synchronous methods): only then does it hold the presenter queue it runs on, which the deadlock
    /// detector must know (`fromPresenterQueue`). An `async` call suspends and an intents call returns at once, so
    /// neither holds anything: tagging them would make the detector see cycles that are not there.
    func prepareClaim(
        _ items: [(URL, Access)],
        isPreparation: Bool,
        blocksThread: Bool,
        timeout: Duration? = nil
    ) -> Result<PreparedClaim, any Error> {
        // Unchanged since it was made (the common case): not cancelled, no timeout, the first purpose, no lock.
        let (isCancelled, ownTimeout, storedPurpose, refusesToWait) =
            settingsUnchanged.load(ordering: .acquiring)
            ? (false, nil, initialPurpose, false)
            : settings.withLock { ($0.cancelled, $0.callTimeout, $0.purpose, $0.refusesToWait) }
        if isCancelled { return .failure(CocoaError(.userCancelled)) }
        let timeout = (timeout ?? ownTimeout).map { min(max($0, .zero), ClaimRequest.longestTimeout) }
        var canonical: [ItemPath] = []
        // The file each item names, where it exists and is not a directory (issue 26, docs/SEMANTICS.md §4).
        var identities: [ItemIdentity?] = []
        // Whether that file had other names (hard links): a lease never decides such a claim in process (issue 23).
        var otherNames: [Bool] = []
        // Whether each item existed when it was made canonical (before the claim is granted, so before the accessor),
        // as the leased path takes it: a `stat` of each written item after the canonicalisation's own was a syscall
        // more per write (issue 39).
        var existed: [Bool] = []
        // The second keys of items in directories whose case rule is undecided (docs/ARCHITECTURE.md §8.3).
        var foldedItems: [ClaimItem] = []
        var originals = items.map(\.0)
        for (index, (url, access)) in items.enumerated() {
            do {
                let resolved = try URLMapping.canonical(url, followingFinalLink: access.followsFinalLink)
                canonical.append(resolved.key)
                identities.append(resolved.identity.map(ItemIdentity.init))
                otherNames.append(resolved.hasOtherNames)
                existed.append(resolved.exists)
                if let folded = resolved.foldedKey, folded != resolved.key {
                    foldedItems.append(ClaimItem(path: folded, access: access))
                }
                // `.resolvesSymbolicLink` hands the accessor the link's target (docs/SEMANTICS.md §4).
                if resolved.followedFinalLink, case .read(let options) = access,
                    options.contains(.resolvesSymbolicLink)
                {
                    originals[index] = URL(fileURLWithPath: resolved.spelling)
                }
            } catch {
                return .failure(error)
            }
        }
        // What the daemon would refuse fails this call alone, here, with the limit named (docs/PROTOCOL.md).
        if let limitError = Self.limitError(canonical, items) { return .failure(limitError) }
        // A second key that some item already claims with the same access adds nothing (looked at only when there
        // is one: the set costs a read under a lease a twentieth of its instructions).
        if !foldedItems.isEmpty {
            var seen = Set(zip(canonical, items).map { ClaimItem(path: $0, access: $1.1) })
            foldedItems = foldedItems.filter { seen.insert($0).inserted }
        }
        if canonical.count + foldedItems.count > ProtocolLimits.default.maximumItemsPerClaim {
            return .failure(
                FileCoordinationError(
                    .invalidRequest,
                    "The call names \(canonical.count) items, \(foldedItems.count) of them in folders whose case "
                        + "sensitivity cannot be told yet (empty folders of a FUSE file system), which count twice; "
                        + "at most \(ProtocolLimits.default.maximumItemsPerClaim) can be coordinated at once. "
                        + "Coordinate them in smaller groups."
                )
            )
        }
        // Read with the other settings, under one lock; a subclass that overrides the getter is asked.
        let purpose = type(of: self) == NSFileCoordinator.self ? storedPurpose : PurposeID(purposeIdentifier)
        if purpose.utf8Count > ProtocolLimits.maximumPurposeLength {
            return .failure(
                FileCoordinationError(
                    .invalidRequest,
                    "The coordinator's purposeIdentifier is \(purpose.utf8Count) bytes long; at most "
                        + "\(ProtocolLimits.maximumPurposeLength) bytes can be coordinated."
                )
            )
        }
        let held = blocksThread ? client.presenterQueueHeldHere() : nil
        let id = ClaimID(client.newID())
        let waiter = ClaimWaiter(blocksThread: blocksThread)
        var request = ClaimRequest(
            id: id,
            client: client.clientID,
            coordinator: coordinatorID,
            purpose: purpose,
            filePresenter: presenter.flatMap { client.presenterID(of: $0) },
            fromPresenterQueue: held?.presenter,
            fromCallback: held?.callback,
            // The folded keys come last: the grant's first paths stay the caller's items, in order.
            items: canonical.indices.map {
                ClaimItem(
                    path: canonical[$0],
                    access: items[$0].1,
                    identity: identities[$0],
                    hasOtherNames: otherNames[$0]
                )
            } + foldedItems,
            isPreparation: isPreparation,
            timeout: timeout
        )
        request.nonblocking = refusesToWait
        let route = client.register(waiter, for: request)
        let existedBefore: [Bool?] = zip(existed, items).map { existed, item in item.1.isWrite ? existed : nil }
        return .success(
            PreparedClaim(
                id: id,
                claimRequest: request,
                waiter: waiter,
                originals: originals,
                canonical: canonical,
                existedBefore: existedBefore,
                route: route
            )
        )
    }

    /// Claims `items`, blocks until granted or failed, runs `body` with the URLs to use, and ends the claim.
    /// Returns the error that kept `body` from running, if any.
    func access(
        _ items: [(URL, Access)],
        refusesNestedWrite: Bool,
        isPreparation: Bool = false,
        _ body: ([URL]) -> Void
    ) -> (any Error)? {
        let mine = ObjectIdentifier(self)
        if items.contains(where: { $0.1.isWrite }),
            let outer = ThreadContext.accesses.last(where: { $0.coordinator == mine }), outer.refusesNestedWrite
        {
            return FileCoordinationError(
                .nestedWrite,
                "A coordinated write was nested inside the accessor of a coordinated read or write by the same "
                    + "coordinator. Use coordinate(readingItemAt:options:writingItemAt:options:error:byAccessor:) "
                    + "or coordinate(writingItemAt:options:writingItemAt:options:error:byAccessor:) to take both at "
                    + "once.",
                url: items.first { $0.1.isWrite }?.0
            )
        }
        switch claimBlocking(items, isPreparation: isPreparation) {
        case .failure(let error):
            return error
        case .success((let request, let paths)):
            let access = ThreadContext.Access(
                client: client,
                coordinator: mine,
                claim: request.id,
                refusesNestedWrite: refusesNestedWrite
            )
            ThreadContext.withAccess(access) { body(request.urls(for: paths)) }
            finish(request, paths: paths)
            return nil
        }
    }

    /// Prepares `items` as one claim, sends it, and blocks the calling thread until it is granted (the claim and the
    /// paths granted) or fails.
    func claimBlocking(
        _ items: [(URL, Access)],
        isPreparation: Bool
    ) -> Result<(PreparedClaim, [ItemPath]), any Error> {
        var request: PreparedClaim
        switch prepareClaim(items, isPreparation: isPreparation, blocksThread: true) {
        case .failure(let error): return .failure(error)
        case .success(let prepared): request = prepared
        }
        let wait = client.submitClaim(request.claimRequest, waiter: request.waiter, route: request.route)
        if case .reading(let reader, _) = wait { request.sentOn = reader as? DaemonTransport }
        switch wait.outcome(of: request.waiter) {
        case .failed(let error): return .failure(error)
        case .granted(let paths): return .success((request, paths))
        }
    }

    /// Ends a claim whose accessor returned, with the items it created and what a write left behind.
    func finish(_ request: PreparedClaim, paths: [ItemPath]) {
        let created = request.createdItems(paths: paths)
        finish(request, created: created, outcome: request.writeOutcome(paths: paths, created: created))
    }

    func finish(_ request: PreparedClaim, created: [ItemPath], outcome: WriteOutcome? = nil) {
        client.send(.finishClaim(request.id, created: created, outcome: outcome), preferring: request.sentOn)
        if let presenter, let id = client.presenterID(of: presenter) { client.refreshURL(of: id) }
    }
}

// Conversions between the public option sets and the core's (same raw values). The public types are the library's
// own, not the core's, so that apps see every member with `import FileCoordination` alone.
extension FCCore.ReadingOptions {
    /// The core's options for the public ones.
    init(_ options: NSFileCoordinator.ReadingOptions) {
        self.init(rawValue: options.rawValue)
    }
}

extension FCCore.WritingOptions {
    /// The core's options for the public ones.
    init(_ options: NSFileCoordinator.WritingOptions) {
        self.init(rawValue: options.rawValue)
    }
}

extension Access {
    /// Whether a symbolic link named as the last component is the item (`false`) or its target is (issue 14): a
    /// read follows it only with `.resolvesSymbolicLink` (so that the target's presenters are asked only then); a
    /// write follows it (it writes the target's contents) unless it deletes or moves, which act on the link.
    var followsFinalLink: Bool {
        switch self {
        case .read(let options): options.contains(.resolvesSymbolicLink)
        case .write(let options): options.isDisjoint(with: [.forDeleting, .forMoving])
        }
    }
}
