import FCCore
import FCProtocol
import FCToolkit
public import Foundation
import Synchronization

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
/// presenters hear what changed (docs/SEMANTICS.md §2 and §3). Non-file and relative URLs fail with
/// ``FileCoordinationError/Code/unsupportedURL`` instead of being silently skipped.
///
/// - Important: A coordinator may be used from any thread; ``cancel()`` in particular is meant to be called from
///   another thread than the one waiting. The synchronous methods block the calling thread until the accessor has
///   run; do not call them from a presenter's own queue for its own item unless the coordinator was created with
///   that presenter.
// @unchecked: an open class (not checkable); its state is `let`s and `Locked` settings, the presenter only read.
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
    let presenter: (any NSFilePresenter)?
    /// What the app may change from any thread.
    struct Settings {
        var purpose: PurposeID
        var purposeAssigned = false
        var cancelled = false
        var callTimeout: Duration?
        var refusesToWait = false
    }
    /// A `Mutex` kept in the object, not a box of its own: one allocation less per coordinator (issue 39).
    let settings: Mutex<Settings>
    /// `true` until a setting changes (a purpose set, a timeout, a cancel), stored under `settings` when one does: a
    /// call of a coordinator nobody changed (the common case) reads it and the `let`s below, not the lock.
    let settingsUnchanged = Atomic<Bool>(true)
    /// The purpose the coordinator was made with (a UUID's bytes, spelled when asked).
    let initialPurpose: PurposeID
    /// The client this coordinator's calls go through: the process's (``CoordinationClient/shared``), or a test's.
    let client: CoordinationClient

    /// Creates a coordinator on behalf of `filePresenter`, which then hears nothing of this coordinator's accesses
    /// (version messages aside) and whose writes made while answering a request go first (docs/SEMANTICS.md §2 rule 5).
    public init(filePresenter: (any NSFilePresenter)?) {
        self.client = .shared
        self.presenter = filePresenter
        self.coordinatorID = CoordinatorID(client.newID())
        self.initialPurpose = Self.purpose(for: filePresenter)
        self.settings = Mutex(Settings(purpose: initialPurpose))
        super.init()
    }

    /// Creates a coordinator whose calls go through `client` (tests: a client bound to a daemon or an in-process
    /// arbiter of their own, docs/ARCHITECTURE.md §8).
    init(filePresenter: (any NSFilePresenter)?, client: CoordinationClient) {
        self.client = client
        self.presenter = filePresenter
        self.coordinatorID = CoordinatorID(client.newID())
        self.initialPurpose = Self.purpose(for: filePresenter)
        self.settings = Mutex(Settings(purpose: initialPurpose))
        super.init()
    }

    private static func purpose(for filePresenter: (any NSFilePresenter)?) -> PurposeID {
        guard let filePresenter else { return uniquePurpose() }
        return PurposeID(
            "presenter-\(ProcessInfo.processInfo.processIdentifier)-\(ObjectIdentifier(filePresenter).hashValue)"
        )
    }

    /// This process's random UUID as two big-endian words, and how many purposes were made from it.
    private static let purposeBase: (high: UInt64, low: UInt64) = withUnsafeBytes(of: UUID().uuid) { bytes in
        (
            UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
            UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        )
    }
    private static let purposesMade = Atomic<UInt64>(0)

    /// A purpose no other coordinator has, in any process, shaped as a UUID like Apple's: this process's random UUID
    /// with a counter added into its last six bytes (version and variant untouched). A `UUID()` per coordinator read
    /// the kernel's random source on every call (issue 23's profile of a leased read); the purpose is kept as bytes
    /// and spelled only when asked (``PurposeID/init(uuidBytes:_:)``).
    private static func uniquePurpose() -> PurposeID {
        let count = purposesMade.wrappingAdd(1, ordering: .relaxed).newValue
        let lastSix: UInt64 = 0xFFFF_FFFF_FFFF
        let base = purposeBase
        return PurposeID(uuidBytes: base.high, (base.low & ~lastSix) | ((base.low &+ count) & lastSix))
    }

    /// Creates a coordinator that acts for no presenter.
    public override convenience init() {
        self.init(filePresenter: nil)
    }

    // MARK: Presenters

    /// Registers a presenter process-wide. Balance it with ``removeFilePresenter(_:)``.
    ///
    /// To be sure to hear of a write that races with the registration, register inside a coordinated read of the
    /// item (docs/SEMANTICS.md §7).
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
        get { settings.withLock { $0.purpose.rawValue } }
        set {
            settings.withLock { settings in
                precondition(!newValue.isEmpty, "NSFileCoordinator.purposeIdentifier must not be empty")
                precondition(
                    presenter == nil,
                    "NSFileCoordinator.purposeIdentifier cannot be set on a coordinator created with a presenter"
                )
                precondition(!settings.purposeAssigned, "NSFileCoordinator.purposeIdentifier can be set only once")
                settings.purpose = PurposeID(newValue)
                settings.purposeAssigned = true
                settingsUnchanged.store(false, ordering: .releasing)
            }
        }
    }

    /// How long each later call of this coordinator may wait for its claim; `nil` (the default) waits as long as
    /// it takes, as Apple's does. Not in Apple's API: a call still waiting when the time is up returns without
    /// running its accessor, with ``FileCoordinationError/Code/timedOut`` and a message that says what it waited
    /// for (docs/SEMANTICS.md §6). The `async` methods take a timeout per call instead.
    ///
    /// Creating one coordinator per call, as is usual, makes this a per-call deadline for the synchronous methods.
    /// Once the accessor runs, it runs to the end.
    public var timeout: Duration? {
        get { settings.withLock { $0.callTimeout } }
        set {
            settings.withLock {
                $0.callTimeout = newValue
                settingsUnchanged.store(false, ordering: .releasing)
            }
        }
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
                    access([(url, .read(FCCore.ReadingOptions(options)))], refusesNestedWrite: true) { body($0[0]) }
                },
                reader: reader
            )
            outError?.pointee = error.map { $0 as NSError }
            return
        }
        let read = Access.read(FCCore.ReadingOptions(options))
        // Granted at once by a lease this process holds: no waiter, no round trip (issue 39).
        if case .ran = accessInLease(url, read, reader) {
            outError?.pointee = nil
            return
        }
        let error = access([(url, read)], refusesNestedWrite: true) { urls in reader(urls[0]) }
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
        let write = Access.write(FCCore.WritingOptions(options))
        // Granted at once by a lease this process holds: no waiter, no round trip (issue 39).
        if case .ran = accessInLease(url, write, writer) {
            outError?.pointee = nil
            return
        }
        let error = access([(url, write)], refusesNestedWrite: true) { urls in writer(urls[0]) }
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
            (readingURL, .read(FCCore.ReadingOptions(readingOptions))),
            (writingURL, .write(FCCore.WritingOptions(writingOptions))),
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
            (url1, .write(FCCore.WritingOptions(options1))), (url2, .write(FCCore.WritingOptions(options2))),
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
    /// being called ends the batch then, with a warning (docs/SEMANTICS.md §10).
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
            readingURLs.map { ($0, Access.read(FCCore.ReadingOptions(readingOptions))) }
            + writingURLs.map { ($0, Access.write(FCCore.WritingOptions(writingOptions))) }
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
            case .reading(let options): (intent.url, .read(FCCore.ReadingOptions(options)))
            case .writing(let options): (intent.url, .write(FCCore.WritingOptions(options)))
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
                    finish(request, paths: paths)
                }
            }
        }
        client.submitClaim(request.claimRequest, waiter: request.waiter)
    }

    /// Announces a move (App Sandbox on macOS). Does nothing here; call ``item(at:didMoveTo:)`` after the move.
    open func item(at oldURL: URL, willMoveTo newURL: URL) {}

    /// Tells presenters that the item at `oldURL` now is at `newURL`: it, and everything inside it, hear did move;
    /// enclosing directories hear subitem did move; claims waiting for it follow it (docs/SEMANTICS.md §2 rule 7).
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
        client.send(.itemMoved(claim, from: from, to: to, fromName: fromName))
        VersionStoreFollower.itemMoved(from: from, to: to, client: client)
    }

    /// Tells presenters that ubiquity attributes changed. There are no ubiquitous (iCloud) items on Linux: this does
    /// nothing, and exists so that code written for Apple platforms compiles unchanged.
    open func item(at url: URL, didChangeUbiquityAttributes attributes: Set<URLResourceKey>) {}

    /// Cancels this coordinator's waiting calls, which return at once with `CocoaError(.userCancelled)` without
    /// running their accessors, and every later call. A running accessor finishes. Callable from any thread.
    open func cancel() {
        settings.withLock {
            $0.cancelled = true
            settingsUnchanged.store(false, ordering: .releasing)
        }
        client.send(.cancelCoordinator(coordinatorID, of: client.clientID))
    }
}
