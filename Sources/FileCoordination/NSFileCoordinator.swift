import FCCore
import FCProtocol
public import Foundation

#if !canImport(Darwin)
/// A pointer through which a method returns an error, as in Apple's `NSErrorPointer`: call with `error: &error`
/// where `var error: NSError?`.
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?
#endif

/// Coordinates reading and writing of files and directories among processes and with presenters: Apple's
/// `NSFileCoordinator`, with the same Swift names and signatures.
///
/// Each `coordinate…` call asks the arbiter for a claim on its items, waits until no conflicting claim holds them
/// and every affected presenter has relinquished, saved or accommodated as needed, runs the accessor, then lets
/// presenters hear what changed (SEMANTICS.md §2 and §3). Non-file and relative URLs fail with
/// ``FileCoordinationError/Code/unsupportedURL`` instead of being silently skipped.
///
/// - Important: A coordinator may be used from any thread; ``cancel()`` in particular is meant to be called from
///   another thread than the one waiting. The synchronous methods block the calling thread until the accessor has
///   run; do not call them from a presenter's own queue for its own item unless the coordinator was created with
///   that presenter.
open class NSFileCoordinator: NSObject, @unchecked Sendable {
    /// Options of a coordinated read (Apple's raw values).
    public struct ReadingOptions: OptionSet, Hashable, Sendable {
        /// The bits, as in Apple's `NSFileCoordinatorReadingOptions`.
        public let rawValue: UInt
        /// Options from their bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Do not ask presenters to save first.
        public static let withoutChanges = ReadingOptions(rawValue: 1 << 0)
        /// Hand the accessor a symbolic link's target.
        public static let resolvesSymbolicLink = ReadingOptions(rawValue: 1 << 1)
        /// Only metadata that is available at once is read.
        public static let immediatelyAvailableMetadataOnly = ReadingOptions(rawValue: 1 << 2)
        /// The read is for uploading: the accessor gets a snapshot (a copy of a file, a zip archive of a directory)
        /// made under the claim, which is released before the accessor runs; the snapshot is removed afterwards.
        public static let forUploading = ReadingOptions(rawValue: 1 << 3)
    }

    /// Options of a coordinated write (Apple's raw values).
    public struct WritingOptions: OptionSet, Hashable, Sendable {
        /// The bits, as in Apple's `NSFileCoordinatorWritingOptions`.
        public let rawValue: UInt
        /// Options from their bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// The write deletes the item.
        public static let forDeleting = WritingOptions(rawValue: 1 << 0)
        /// The write moves the item.
        public static let forMoving = WritingOptions(rawValue: 1 << 1)
        /// Ask presenters to save first.
        public static let forMerging = WritingOptions(rawValue: 1 << 2)
        /// The write replaces whatever is at the URL.
        public static let forReplacing = WritingOptions(rawValue: 1 << 3)
        /// Only metadata independent of the contents is written.
        public static let contentIndependentMetadataOnly = WritingOptions(rawValue: 1 << 4)
    }

    let coordinatorID: CoordinatorID
    private let presenter: (any NSFilePresenter)?
    /// What the app may change from any thread.
    private struct Settings {
        var purpose: String
        var purposeAssigned = false
        var cancelled = false
        var callTimeout: Duration?
    }
    private let settings: Locked<Settings>
    /// The client this coordinator's calls go through: the process's (``CoordinationClient/shared``), or a test's.
    let client: CoordinationClient

    /// Creates a coordinator on behalf of `filePresenter`, which then hears nothing of this coordinator's accesses
    /// (version messages aside) and whose writes made while answering a request go first (SEMANTICS.md §2 rule 5).
    public init(filePresenter: (any NSFilePresenter)?) {
        self.client = .shared
        self.presenter = filePresenter
        self.coordinatorID = CoordinatorID(client.newID())
        self.settings = Locked(Settings(purpose: Self.purpose(for: filePresenter)))
        super.init()
    }

    /// Creates a coordinator whose calls go through `client` (tests: a client bound to a daemon or an in-process
    /// arbiter of their own, docs/ARCHITECTURE.md §8).
    init(filePresenter: (any NSFilePresenter)?, client: CoordinationClient) {
        self.client = client
        self.presenter = filePresenter
        self.coordinatorID = CoordinatorID(client.newID())
        self.settings = Locked(Settings(purpose: Self.purpose(for: filePresenter)))
        super.init()
    }

    private static func purpose(for filePresenter: (any NSFilePresenter)?) -> String {
        guard let filePresenter else { return UUID().uuidString }
        return "presenter-\(ProcessInfo.processInfo.processIdentifier)-\(ObjectIdentifier(filePresenter).hashValue)"
    }

    /// Creates a coordinator that acts for no presenter.
    public override convenience init() {
        self.init(filePresenter: nil)
    }

    // MARK: Presenters

    /// Registers a presenter process-wide. Balance it with ``removeFilePresenter(_:)``.
    ///
    /// To be sure to hear of a write that races with the registration, register inside a coordinated read of the
    /// item (SEMANTICS.md §7).
    open class func addFilePresenter(_ filePresenter: any NSFilePresenter) {
        CoordinationClient.shared.addPresenter(filePresenter)
    }

    /// Unregisters a presenter. Requests it owed count as answered.
    open class func removeFilePresenter(_ filePresenter: any NSFilePresenter) {
        CoordinationClient.shared.removePresenter(filePresenter)
    }

    /// The presenters registered in this process.
    open class var filePresenters: [any NSFilePresenter] {
        CoordinationClient.shared.allPresenters
    }

    /// Coordinators with the same purpose never block each other, even in different processes.
    ///
    /// Every coordinator gets a unique one; coordinators created with the same presenter share one. It may be set
    /// once, to a non-empty string, and only on a coordinator created without a presenter; anything else is a
    /// programming error and traps, as Apple's raises an exception.
    open var purposeIdentifier: String {
        get { settings.withLock { $0.purpose } }
        set {
            settings.withLock { settings in
                precondition(!newValue.isEmpty, "NSFileCoordinator.purposeIdentifier must not be empty")
                precondition(
                    presenter == nil,
                    "NSFileCoordinator.purposeIdentifier cannot be set on a coordinator created with a presenter"
                )
                precondition(!settings.purposeAssigned, "NSFileCoordinator.purposeIdentifier can be set only once")
                settings.purpose = newValue
                settings.purposeAssigned = true
            }
        }
    }

    /// How long each later call of this coordinator may wait for its claim; `nil` (the default) waits as long as
    /// it takes, as Apple's does. Not in Apple's API: a call still waiting when the time is up returns without
    /// running its accessor, with ``FileCoordinationError/Code/timedOut`` and a message that says what it waited
    /// for (SEMANTICS.md §6). The `async` methods take a timeout per call instead.
    ///
    /// Creating one coordinator per call, as is usual, makes this a per-call deadline for the synchronous methods.
    /// Once the accessor runs, it runs to the end.
    public var timeout: Duration? {
        get { settings.withLock { $0.callTimeout } }
        set { settings.withLock { $0.callTimeout = newValue } }
    }

    // MARK: Coordinated access

    /// Reads an item once no writer holds it and its presenters have relinquished (and saved, unless
    /// `.withoutChanges`). On failure the accessor does not run and `outError` is set.
    open func coordinate(
        readingItemAt url: URL,
        options: NSFileCoordinator.ReadingOptions = [],
        error outError: NSErrorPointer,
        byAccessor reader: (URL) -> Void
    ) {
        if options.contains(.forUploading) {
            // The accessor gets a snapshot made under the claim, and runs after it is released (UploadSnapshot).
            let error = UploadSnapshot.coordinate(
                url,
                read: { body in
                    access([(url, .read(ReadingOptions_(options)))], refusesNestedWrite: true) { body($0[0]) }
                },
                reader: reader
            )
            outError?.pointee = error.map { $0 as NSError }
            return
        }
        let error = access([(url, .read(ReadingOptions_(options)))], refusesNestedWrite: true) { urls in
            reader(urls[0])
        }
        outError?.pointee = error.map { $0 as NSError }
    }

    /// Writes an item once no reader or writer holds it and its presenters have relinquished (and saved or
    /// accommodated, as the options ask). On failure the accessor does not run and `outError` is set.
    open func coordinate(
        writingItemAt url: URL,
        options: NSFileCoordinator.WritingOptions = [],
        error outError: NSErrorPointer,
        byAccessor writer: (URL) -> Void
    ) {
        let error = access([(url, .write(WritingOptions_(options)))], refusesNestedWrite: true) { urls in
            writer(urls[0])
        }
        outError?.pointee = error.map { $0 as NSError }
    }

    /// Reads one item and writes another, both taken at once (no deadlock with another process taking the same pair
    /// in the other order). A nested `coordinate(writingItemAt:…)` is allowed inside the accessor.
    open func coordinate(
        readingItemAt readingURL: URL,
        options readingOptions: NSFileCoordinator.ReadingOptions = [],
        writingItemAt writingURL: URL,
        options writingOptions: NSFileCoordinator.WritingOptions = [],
        error outError: NSErrorPointer,
        byAccessor readerWriter: (URL, URL) -> Void
    ) {
        let items: [(URL, Access)] = [
            (readingURL, .read(ReadingOptions_(readingOptions))), (writingURL, .write(WritingOptions_(writingOptions))),
        ]
        let error = access(items, refusesNestedWrite: false) { urls in readerWriter(urls[0], urls[1]) }
        outError?.pointee = error.map { $0 as NSError }
    }

    /// Writes two items, both taken at once. The usual move: `.forMoving` on the source, `.forReplacing` on the
    /// destination, then ``item(at:didMoveTo:)`` inside the accessor.
    open func coordinate(
        writingItemAt url1: URL,
        options options1: NSFileCoordinator.WritingOptions = [],
        writingItemAt url2: URL,
        options options2: NSFileCoordinator.WritingOptions = [],
        error outError: NSErrorPointer,
        byAccessor writer: (URL, URL) -> Void
    ) {
        let items: [(URL, Access)] = [
            (url1, .write(WritingOptions_(options1))), (url2, .write(WritingOptions_(options2))),
        ]
        let error = access(items, refusesNestedWrite: false) { urls in writer(urls[0], urls[1]) }
        outError?.pointee = error.map { $0 as NSError }
    }

    /// Asks the presenters of many items to relinquish and save, then runs `batchAccessor`, which makes its own
    /// coordinated calls with this coordinator and must call the completion handler it is given once they are done.
    ///
    /// As Apple documents it: returns when `batchAccessor` returns (on the calling thread). The items stay claimed,
    /// and their presenters relinquished, until the handler is called, from any thread and at any time (from a queue
    /// the block dispatched to, the main queue included); a second call does nothing. Calls this coordinator makes
    /// meanwhile, from any thread, are part of the batch and do not wait for it. A handler released without ever
    /// being called ends the batch then, with a warning (docs/SEMANTICS.md, "prepare and its completion handler").
    ///
    /// `@preconcurrency`, as Apple's is: a capture that is not `Sendable` is a warning in the Swift 6 language mode,
    /// not an error.
    @preconcurrency
    open func prepare(
        forReadingItemsAt readingURLs: [URL],
        options readingOptions: NSFileCoordinator.ReadingOptions = [],
        writingItemsAt writingURLs: [URL],
        options writingOptions: NSFileCoordinator.WritingOptions = [],
        error outError: NSErrorPointer,
        byAccessor batchAccessor: (@escaping @Sendable () -> Void) -> Void
    ) {
        let items =
            readingURLs.map { ($0, Access.read(ReadingOptions_(readingOptions))) }
            + writingURLs.map { ($0, Access.write(WritingOptions_(writingOptions))) }
        guard !items.isEmpty else {
            batchAccessor {}
            return
        }
        let error = prepareBatch(items, batchAccessor)
        outError?.pointee = error.map { $0 as NSError }
    }

    /// Coordinates many items at once and runs `accessor` on `queue` when they are granted, or with the error.
    /// Use each intent's ``NSFileAccessIntent/url`` inside the accessor.
    ///
    /// `@preconcurrency`, as Apple's is: a capture that is not `Sendable` is a warning in the Swift 6 language mode,
    /// not an error.
    @preconcurrency
    open func coordinate(
        with intents: [NSFileAccessIntent],
        queue: OperationQueue,
        byAccessor accessor: @escaping @Sendable ((any Error)?) -> Void
    ) {
        let items: [(URL, Access)] = intents.map { intent in
            switch intent.access {
            case .reading(let options): (intent.url, .read(ReadingOptions_(options)))
            case .writing(let options): (intent.url, .write(WritingOptions_(options)))
            }
        }
        let request: PreparedClaim
        switch prepareClaim(items, isPreparation: false, blocksThread: false) {
        case .failure(let error):
            queue.addOperation { accessor(error) }
            return
        case .success(let prepared):
            request = prepared
        }
        request.waiter.onOutcome { [self] outcome in
            switch outcome {
            case .failed(let error):
                queue.addOperation { accessor(error) }
            case .granted(let paths):
                let urls = request.urls(for: paths)
                for (intent, url) in zip(intents, urls) { intent.update(url: url) }
                queue.addOperation { [self] in
                    let access = ThreadContext.Access(
                        client: client,
                        coordinator: ObjectIdentifier(self),
                        claim: request.id,
                        refusesNestedWrite: false
                    )
                    ThreadContext.withAccess(access) { accessor(nil) }
                    finish(request, created: request.createdItems(paths: paths))
                }
            }
        }
        client.submit(.claimRequested(request.claimRequest))
    }

    /// Announces a move (App Sandbox on macOS). Does nothing here; call ``item(at:didMoveTo:)`` after the move.
    open func item(at oldURL: URL, willMoveTo newURL: URL) {}

    /// Tells presenters that the item at `oldURL` now is at `newURL`: it, and everything inside it, hear did move;
    /// enclosing directories hear subitem did move; claims waiting for it follow it (SEMANTICS.md §2 rule 7).
    /// Call it inside the accessor of a coordinated write of the item; elsewhere it is ignored.
    open func item(at oldURL: URL, didMoveTo newURL: URL) {
        // A moved symbolic link moved itself, not its target: the last component is not followed.
        guard let claim = ThreadContext.accesses.last(where: { $0.coordinator == ObjectIdentifier(self) })?.claim,
            let from = try? URLMapping.canonicalPath(oldURL, followingFinalLink: false)
        else { return }
        guard let to = try? URLMapping.canonicalPath(newURL, followingFinalLink: false) else { return }
        // A case-only rename in a case-insensitive directory (`my text` to `My Text`) keeps its canonical path; it is
        // still a move for the presenters, who hear it (issue 14). The old spelling is remembered, so that this
        // process's presenters hear where the item was as it was spelled.
        var fromName: [UInt8]?
        if from == to {
            guard oldURL.path != newURL.path else { return }
            URLMapping.rememberRename(of: from, spelledAs: oldURL)
            // Presenters in other processes never saw this spelling: it goes with the move (issue 14).
            fromName = Array(oldURL.lastPathComponent.utf8)
        }
        client.submit(.itemMoved(claim, from: from, to: to, fromName: fromName))
        VersionStoreFollower.itemMoved(from: from, to: to, client: client)
    }

    /// Tells presenters that ubiquity attributes changed. There are no ubiquitous (iCloud) items on Linux: this does
    /// nothing, and exists so that code written for Apple platforms compiles unchanged.
    open func item(at url: URL, didChangeUbiquityAttributes attributes: Set<URLResourceKey>) {}

    /// Cancels this coordinator's waiting calls, which return at once with `CocoaError(.userCancelled)` without
    /// running their accessors, and every later call. A running accessor finishes. Callable from any thread.
    open func cancel() {
        settings.withLock { $0.cancelled = true }
        client.submit(.coordinatorCancelled(client.clientID, coordinatorID))
    }

    // MARK: The claim machinery shared by every method

    /// A claim ready to be submitted, with what is needed to answer the caller.
    struct PreparedClaim {
        var id: ClaimID
        var claimRequest: ClaimRequest
        var waiter: ClaimWaiter
        var originals: [URL]
        var canonical: [ItemPath]
        var existedBefore: [Bool?]

        func urls(for paths: [ItemPath]) -> [URL] {
            zip(zip(originals, canonical), paths).map { pair, path in
                URLMapping.url(for: path, spelledAs: pair.0, canonical: pair.1)
            }
        }

        /// Written items that did not exist before the accessor and do now.
        func createdItems(paths: [ItemPath]) -> [ItemPath] {
            zip(existedBefore, paths).compactMap { existed, path in
                guard existed == false, FileManager.default.fileExists(atPath: path.description) else { return nil }
                return path
            }
        }
    }

    /// The error for a claim over the protocol's limits (a path longer than `PATH_MAX`, too many items), or `nil`.
    static func limitError(_ paths: [ItemPath], _ urls: [URL]) -> FileCoordinationError? {
        let limits = ProtocolLimits.default
        if paths.count > limits.maximumItemsPerClaim {
            return FileCoordinationError(
                .invalidRequest,
                "The call names \(paths.count) items; at most \(limits.maximumItemsPerClaim) can be coordinated "
                    + "at once. Coordinate them in smaller groups."
            )
        }
        for (path, url) in zip(paths, urls) where path.bytes.count > limits.maximumPathLength {
            return FileCoordinationError(
                .invalidRequest,
                "The path is \(path.bytes.count) bytes long once symbolic links are resolved; at most "
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
        let (isCancelled, ownTimeout) = settings.withLock { ($0.cancelled, $0.callTimeout) }
        if isCancelled { return .failure(CocoaError(.userCancelled)) }
        let timeout = (timeout ?? ownTimeout).map { min(max($0, .zero), ClaimRequest.longestTimeout) }
        var canonical: [ItemPath] = []
        // The second keys of items in directories whose case rule is undecided (docs/ARCHITECTURE.md §8.3).
        var foldedItems: [ClaimItem] = []
        var originals = items.map(\.0)
        for (index, (url, access)) in items.enumerated() {
            do {
                let resolved = try URLMapping.canonical(url, followingFinalLink: access.followsFinalLink)
                canonical.append(resolved.path)
                if let folded = resolved.canonical.foldedKey, let path = try? ItemPath(absolute: folded),
                    path != resolved.path
                {
                    foldedItems.append(ClaimItem(path: path, access: access))
                }
                // `.resolvesSymbolicLink` hands the accessor the link's target (SEMANTICS.md §4).
                if resolved.canonical.followedFinalLink, case .read(let options) = access,
                    options.contains(.resolvesSymbolicLink)
                {
                    originals[index] = URL(fileURLWithPath: resolved.canonical.spelling)
                }
            } catch {
                return .failure(error)
            }
        }
        // What the daemon would refuse fails this call alone, here, with the limit named (docs/PROTOCOL.md).
        if let limitError = Self.limitError(canonical, items.map(\.0)) { return .failure(limitError) }
        // A second key that some item already claims with the same access adds nothing.
        var seen = Set(zip(canonical, items).map { ClaimItem(path: $0, access: $1.1) })
        foldedItems = foldedItems.filter { seen.insert($0).inserted }
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
        let purpose = purposeIdentifier
        if purpose.utf8.count > ProtocolLimits.maximumPurposeLength {
            return .failure(
                FileCoordinationError(
                    .invalidRequest,
                    "The coordinator's purposeIdentifier is \(purpose.utf8.count) bytes long; at most "
                        + "\(ProtocolLimits.maximumPurposeLength) bytes can be coordinated."
                )
            )
        }
        let held = blocksThread ? client.presenterQueueHeldHere() : nil
        let id = ClaimID(client.newID())
        let waiter = ClaimWaiter(blocksThread: blocksThread)
        let request = ClaimRequest(
            id: id,
            client: client.clientID,
            coordinator: coordinatorID,
            purpose: PurposeID(purpose),
            filePresenter: presenter.flatMap { client.presenterID(of: $0) },
            fromPresenterQueue: held?.presenter,
            fromCallback: held?.callback,
            // The folded keys come last: the grant's first paths stay the caller's items, in order.
            items: zip(canonical, items).map { ClaimItem(path: $0, access: $1.1) } + foldedItems,
            isPreparation: isPreparation,
            timeout: timeout
        )
        client.register(waiter, for: request)
        let existedBefore: [Bool?] = zip(canonical, items).map { path, item in
            item.1.isWrite ? FileManager.default.fileExists(atPath: path.description) : nil
        }
        return .success(
            PreparedClaim(
                id: id,
                claimRequest: request,
                waiter: waiter,
                originals: originals,
                canonical: canonical,
                existedBefore: existedBefore
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
        let request: PreparedClaim
        switch prepareClaim(items, isPreparation: isPreparation, blocksThread: true) {
        case .failure(let error): return error
        case .success(let prepared): request = prepared
        }
        client.submit(.claimRequested(request.claimRequest))
        switch request.waiter.wait() {
        case .failed(let error):
            return error
        case .granted(let paths):
            let access = ThreadContext.Access(
                client: client,
                coordinator: mine,
                claim: request.id,
                refusesNestedWrite: refusesNestedWrite
            )
            ThreadContext.withAccess(access) { body(request.urls(for: paths)) }
            finish(request, created: request.createdItems(paths: paths))
            return nil
        }
    }

    func finish(_ request: PreparedClaim, created: [ItemPath]) {
        client.submit(.claimFinished(request.id, created: created))
        if let presenter, let id = client.presenterID(of: presenter) { client.refreshURL(of: id) }
    }
}

// Conversions between the public option sets and the core's (same raw values). The public types are the library's
// own, not the core's, so that apps see every member with `import FileCoordination` alone.
private func ReadingOptions_(_ options: NSFileCoordinator.ReadingOptions) -> FCCore.ReadingOptions {
    FCCore.ReadingOptions(rawValue: options.rawValue)
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

private func WritingOptions_(_ options: NSFileCoordinator.WritingOptions) -> FCCore.WritingOptions {
    FCCore.WritingOptions(rawValue: options.rawValue)
}
