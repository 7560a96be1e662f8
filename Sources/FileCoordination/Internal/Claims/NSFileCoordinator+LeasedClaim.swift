import FCCore
import FCProtocol
import Foundation
import Synchronization

// The leased claim (issue 39): a single-item read or write that a lease this process holds grants at once, made
// without the machinery of a claim that may wait. What it leaves out is what such a claim never needs: no waiter
// (nothing waits), no claim table entry for a request in flight (only the held claim, which a lost connection
// declares to the next daemon), no arrays of items, URLs and paths, no dictionary entry in the lease per claim.
// Whatever the lease cannot grant at once takes the general way (NSFileCoordinator+Claims.swift), as before.

extension NSFileCoordinator {
    /// What ``accessInLease(_:_:_:)`` did.
    enum LeasedAccess {
        /// Nothing: the call takes the general way (``access(_:refusesNestedWrite:isPreparation:_:)``).
        case notTaken
        /// The accessor ran under a claim a lease granted, now finished.
        case ran
    }

    /// Runs `body` under a claim on `url` decided at once by a lease this client holds, when the call is one such a
    /// claim can serve: a single item, read or written without the options that hand back another URL or follow a
    /// move or a deletion (`.forUploading`, `.resolvesSymbolicLink`, `.forMoving`, `.forDeleting`), by a coordinator
    /// with no presenter and no setting changed, not from a presenter's queue, not nested under a read or write of
    /// the same coordinator, on a plain absolute path (no trailing slash). Anything else, and anything that fails
    /// on the way (a path that cannot be made canonical, a lease that holds claims, a file with other names), is
    /// `.notTaken` before anything is done: the general way then decides it and reports the error, once.
    ///
    /// - Important: Runs on the calling thread, which runs the accessor; takes the lease table's and the claim
    ///   table's locks, one at a time, never while `body` runs.
    func accessInLease(_ url: URL, _ access: Access, _ body: (URL) -> Void) -> LeasedAccess {
        let client = self.client
        guard client.leases.heldCount.load(ordering: .acquiring) > 0, presenter == nil, access.isDecidedAtOnceInLease,
            settingsUnchanged.load(ordering: .acquiring), type(of: self) == NSFileCoordinator.self
        else { return .notTaken }
        let mine = ObjectIdentifier(self)
        if access.isWrite, ThreadContext.accesses.contains(where: { $0.coordinator == mine }) { return .notTaken }
        guard client.presenterQueueHeldHere() == nil else { return .notTaken }
        // The path read from the URL's string when it can be, else asked of the URL. It keeps a directory URL's
        // trailing slash, which the general way handles (a trailing slash follows a final link).
        guard let given = URLMapping.plainFilePath(of: url) ?? Self.askedPath(of: url).map(PathBytes.init),
            given.withBytes({ $0.count > 1 && $0.first == UInt8(ascii: "/") && $0.last != UInt8(ascii: "/") }),
            let resolved = try? URLMapping.canonical(given, of: url, followingFinalLink: access.followsFinalLink),
            !resolved.hasOtherNames, resolved.foldedKey == nil, !resolved.followedFinalLink,
            resolved.key.byteCount <= ProtocolLimits.default.maximumPathLength
        else { return .notTaken }
        let id = ClaimID(client.newID())
        let claim = StraightClaim(
            id: id,
            client: client.clientID,
            coordinator: coordinatorID,
            purpose: initialPurpose,
            item: ClaimItem(
                path: resolved.key,
                access: access,
                identity: resolved.identity.map(ItemIdentity.init),
                hasOtherNames: false
            )
        )
        guard let lease = client.leases.grantAtOnce(claim) else { return .notTaken }
        let context = ThreadContext.Access(client: client, coordinator: mine, claim: id, refusesNestedWrite: true)
        ThreadContext.withAccess(context) { body(url) }
        if client.leases.finishAtOnce(id, in: lease) { return .ran }
        // The lease was recalled, returned or dropped while the accessor ran, or another claim came into it: the
        // claim ends the general way, with what a write left behind.
        let prepared = PreparedClaim(
            id: id,
            claimRequest: claim.request,
            waiter: ClaimWaiter(blocksThread: false),
            originals: [url],
            canonical: [resolved.key],
            existedBefore: [access.isWrite ? resolved.exists : nil],
            route: nil
        )
        finish(prepared, paths: [resolved.key])
        return .ran
    }
}

extension NSFileCoordinator {
    /// The absolute path of a `file:` URL with no base that ``URLMapping/plainFilePath(of:)`` cannot read from its
    /// string (a `%`, a host), asked of the URL; `nil` for any other URL. A trailing slash is kept, so that the
    /// caller leaves such a URL to the general way.
    ///
    /// An escaped path is decoded as `path` decodes it, the spelling the file system is handed: `%2F` and `%00` stay
    /// as written (`path(percentEncoded: false)` decoded them, so a lease claimed `a/b` for the file `a%2Fb`, a key
    /// that another process's claim on that file never met). `path(percentEncoded: true)` is half of `path`'s
    /// instructions, and a path with no `%` is the same decoded or not.
    static func askedPath(of url: URL) -> String? {
        guard url.isFileURL, url.baseURL == nil else { return nil }
        let given = url.path(percentEncoded: true)
        guard let last = given.utf8.last, last != UInt8(ascii: "/"), given.utf8.contains(UInt8(ascii: "%")) else {
            return given
        }
        return url.path
    }
}

extension Access {
    /// Whether a claim of this access on one item may be granted by ``NSFileCoordinator/accessInLease(_:_:_:)``:
    /// no option that hands the accessor another URL or moves or deletes the item.
    var isDecidedAtOnceInLease: Bool {
        switch self {
        case .read(let options): options.isDisjoint(with: [.forUploading, .resolvesSymbolicLink])
        case .write(let options): options.isDisjoint(with: [.forMoving, .forDeleting])
        }
    }
}
