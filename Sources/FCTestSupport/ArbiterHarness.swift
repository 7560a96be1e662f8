public import FCCore

/// Drives an ``Arbiter`` in tests, benchmarks and demonstrations: assigns ids, feeds events, and keeps every effect
/// so that tests can ask what a presenter was told, whether a claim was granted, and which requests are open.
///
/// Paths are written as strings (`"/d/a.txt"`); a malformed one traps, since a test wrote it.
///
/// - Important: Not thread-safe, like the arbiter it drives.
public final class ArbiterHarness {
    /// The arbiter under test.
    public let arbiter: Arbiter
    /// Every effect, in the order the arbiter emitted them.
    public private(set) var effects: [ArbiterEffect] = []
    /// Effects of the last event only.
    public private(set) var lastEffects: [ArbiterEffect] = []
    /// The time given with each event (``Arbiter/handle(_:at:)``): `nil` (no time) unless a test sets it.
    public var now: Duration?

    private var nextClient: UInt64 = 0
    private var nextPresenter: UInt64 = 0
    private var nextClaim: UInt64 = 0
    private var nextCoordinator: UInt64 = 0

    /// Creates a harness around a new arbiter.
    ///
    /// The default configuration has no presenter timeout and no deadlock detector, so that tests see only the
    /// effects they provoke; tests of those features configure them.
    public init(
        configuration: ArbiterConfiguration = ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: nil)
    ) {
        self.arbiter = Arbiter(configuration: configuration)
    }

    /// Feeds one event and records its effects.
    @discardableResult
    public func send(_ event: ArbiterEvent) -> [ArbiterEffect] {
        lastEffects = arbiter.handle(event, at: now)
        effects += lastEffects
        return lastEffects
    }

    /// Forgets the effects recorded so far (``effects`` starts again empty).
    public func clearEffects() {
        effects = []
    }

    // MARK: Building state

    /// Connects a new client; `answersRecalls` makes it one that leases may be granted to (docs/SEMANTICS.md §13).
    public func connect(_ name: String = "client", pid: Int32 = 0, answersRecalls: Bool = false) -> ClientID {
        nextClient += 1
        let id = ClientID(nextClient)
        send(
            .clientConnected(
                ClientInfo(
                    id: id,
                    pid: pid == 0 ? Int32(1000 + nextClient) : pid,
                    name: name,
                    answersRecalls: answersRecalls
                )
            )
        )
        return id
    }

    /// The leases granted by the last event, with their holder and subtree.
    public var lastLeaseGrants: [(LeaseID, ClientID, ItemPath)] {
        lastEffects.compactMap {
            if case .grantLease(let id, let client, let subtree) = $0 { return (id, client, subtree) }
            return nil
        }
    }

    /// The leases recalled by the last event.
    public var lastRecalls: [LeaseID] {
        lastEffects.compactMap {
            if case .recallLease(let id, _) = $0 { return id }
            return nil
        }
    }

    /// Registers a presenter of `path` (or of no item yet, with `nil`).
    @discardableResult
    public func present(
        _ path: String?,
        client: ClientID,
        callbacks: PresenterCallbacks = .all,
        isPackage: Bool = false,
        serialQueue: UInt64? = nil,
        identity: ItemIdentity? = nil
    ) -> PresenterID {
        nextPresenter += 1
        let id = PresenterID(nextPresenter)
        send(
            .presenterAdded(
                PresenterRegistration(
                    id: id,
                    client: client,
                    path: path.map(Self.path),
                    callbacks: callbacks,
                    isPackage: isPackage,
                    serialQueue: serialQueue,
                    identity: identity
                )
            )
        )
        return id
    }

    /// A new coordinator id.
    public func coordinator() -> CoordinatorID {
        nextCoordinator += 1
        return CoordinatorID(nextCoordinator)
    }

    /// Requests a claim. By default each claim comes from a new coordinator with a purpose of its own.
    @discardableResult
    public func claim(
        _ items: [ClaimItem],
        client: ClientID,
        coordinator: CoordinatorID? = nil,
        purpose: PurposeID? = nil,
        filePresenter: PresenterID? = nil,
        fromPresenterQueue: PresenterID? = nil,
        fromCallback: PresenterCallbacks? = nil
    ) -> ClaimID {
        nextClaim += 1
        let id = ClaimID(nextClaim)
        let coordinator = coordinator ?? self.coordinator()
        send(
            .claimRequested(
                ClaimRequest(
                    id: id,
                    client: client,
                    coordinator: coordinator,
                    purpose: purpose ?? PurposeID("purpose-\(client.rawValue)-\(coordinator.rawValue)"),
                    filePresenter: filePresenter,
                    fromPresenterQueue: fromPresenterQueue,
                    fromCallback: fromCallback,
                    items: items
                )
            )
        )
        return id
    }

    /// Requests a read of one item.
    @discardableResult
    public func read(
        _ path: String,
        _ options: ReadingOptions = [],
        client: ClientID,
        coordinator: CoordinatorID? = nil,
        purpose: PurposeID? = nil,
        filePresenter: PresenterID? = nil
    ) -> ClaimID {
        claim(
            [Self.read(path, options)],
            client: client,
            coordinator: coordinator,
            purpose: purpose,
            filePresenter: filePresenter
        )
    }

    /// Requests a write of one item.
    @discardableResult
    public func write(
        _ path: String,
        _ options: WritingOptions = [],
        client: ClientID,
        coordinator: CoordinatorID? = nil,
        purpose: PurposeID? = nil,
        filePresenter: PresenterID? = nil
    ) -> ClaimID {
        claim(
            [Self.write(path, options)],
            client: client,
            coordinator: coordinator,
            purpose: purpose,
            filePresenter: filePresenter
        )
    }

    /// Ends a granted claim's access.
    public func finish(_ claim: ClaimID, created: [String] = []) {
        send(.claimFinished(claim, created: created.map(Self.path)))
    }

    /// Answers one request.
    public func reply(_ request: RequestID, _ reply: PresenterReply) {
        send(.presenterReplied(request, reply))
    }

    /// Answers every open request with yes (relinquish with a reacquirer, save and accommodate succeed), again and
    /// again until none is open. Returns how many were answered.
    @discardableResult
    public func answerAll(reacquirer: Bool = true) -> Int {
        var answered = 0
        while let (request, kind) = openRequests().first {
            answered += 1
            switch kind {
            case .relinquishToReader, .relinquishToWriter: reply(request, .relinquished(reacquirer: reacquirer))
            default: reply(request, .succeeded)
            }
        }
        return answered
    }

    // MARK: Reading the record

    /// Requests sent and not answered yet, oldest first.
    public func openRequests() -> [(RequestID, PresenterMessageKind)] {
        let open = arbiter.snapshot().outstandingRequests
        var out: [(RequestID, PresenterMessageKind)] = []
        for case .message(let message) in effects {
            if let request = message.request, open[request] != nil { out.append((request, message.kind)) }
        }
        return out
    }

    /// Open requests of one presenter, oldest first.
    public func openRequests(of presenter: PresenterID) -> [(RequestID, PresenterMessageKind)] {
        let open = arbiter.snapshot().outstandingRequests
        var out: [(RequestID, PresenterMessageKind)] = []
        for case .message(let message) in effects where message.presenter == presenter {
            if let request = message.request, open[request] != nil { out.append((request, message.kind)) }
        }
        return out
    }

    /// Every message a presenter was sent, in order.
    public func messages(to presenter: PresenterID) -> [PresenterMessageKind] {
        effects.compactMap {
            if case .message(let message) = $0, message.presenter == presenter { return message.kind }
            return nil
        }
    }

    /// Every message sent, in order.
    public var allMessages: [PresenterMessage] {
        effects.compactMap {
            if case .message(let message) = $0 { return message }
            return nil
        }
    }

    /// The paths a claim was granted with, or `nil` if it was not granted.
    public func grantedPaths(_ claim: ClaimID) -> [ItemPath]? {
        for case .grant(let id, _, let paths) in effects where id == claim { return paths }
        return nil
    }

    /// `true` once the claim was granted.
    public func isGranted(_ claim: ClaimID) -> Bool { grantedPaths(claim) != nil }

    /// Why a claim failed, or `nil` if it did not.
    public func failure(_ claim: ClaimID) -> ClaimFailure? {
        for case .fail(let id, _, let failure) in effects where id == claim { return failure }
        return nil
    }

    /// The index in ``effects`` of a claim's grant, for ordering checks.
    public func grantIndex(_ claim: ClaimID) -> Int? {
        effects.firstIndex {
            if case .grant(let id, _, _) = $0 { return id == claim }
            return false
        }
    }

    // MARK: Building values

    /// A canonical path from a string; traps on a malformed one.
    public static func path(_ string: String) -> ItemPath {
        do {
            return try ItemPath(absolute: string)
        } catch {
            preconditionFailure("bad test path \(string): \(error)")
        }
    }

    /// A read item.
    public static func read(_ path: String, _ options: ReadingOptions = []) -> ClaimItem {
        ClaimItem(path: Self.path(path), access: .read(options))
    }

    /// A write item.
    public static func write(_ path: String, _ options: WritingOptions = []) -> ClaimItem {
        ClaimItem(path: Self.path(path), access: .write(options))
    }
}

@available(*, unavailable)
extension ArbiterHarness: Sendable {}
