/// The `NSFilePresenter` callbacks a presenter implements.
///
/// A presenter declares them when it registers (default: all). The arbiter sends no message a presenter does not
/// implement, and treats an unimplemented relinquish, save or accommodate as an immediate yes (docs/SEMANTICS.md §3).
public struct PresenterCallbacks: OptionSet, Hashable, Sendable {
    /// The callback bits.
    public var rawValue: UInt32
    /// Creates a set of callbacks from their bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `relinquishPresentedItem(toReader:)`
    public static let relinquishToReader = PresenterCallbacks(rawValue: 1 << 0)
    /// `relinquishPresentedItem(toWriter:)`
    public static let relinquishToWriter = PresenterCallbacks(rawValue: 1 << 1)
    /// `savePresentedItemChanges(completionHandler:)`
    public static let savePresentedItemChanges = PresenterCallbacks(rawValue: 1 << 2)
    /// `accommodatePresentedItemDeletion(completionHandler:)`
    public static let accommodatePresentedItemDeletion = PresenterCallbacks(rawValue: 1 << 3)
    /// `accommodatePresentedSubitemDeletion(at:completionHandler:)`
    public static let accommodatePresentedSubitemDeletion = PresenterCallbacks(rawValue: 1 << 4)
    /// `presentedItemDidMove(to:)`
    public static let presentedItemDidMove = PresenterCallbacks(rawValue: 1 << 5)
    /// `presentedItemDidChange()`
    public static let presentedItemDidChange = PresenterCallbacks(rawValue: 1 << 6)
    /// `presentedSubitemDidChange(at:)`
    public static let presentedSubitemDidChange = PresenterCallbacks(rawValue: 1 << 7)
    /// `presentedSubitemDidAppear(at:)`
    public static let presentedSubitemDidAppear = PresenterCallbacks(rawValue: 1 << 8)
    /// `presentedSubitem(at:didMoveTo:)`
    public static let presentedSubitemDidMove = PresenterCallbacks(rawValue: 1 << 9)
    /// `presentedItemDidGain(_:)`
    public static let presentedItemDidGainVersion = PresenterCallbacks(rawValue: 1 << 10)
    /// `presentedItemDidLose(_:)`
    public static let presentedItemDidLoseVersion = PresenterCallbacks(rawValue: 1 << 11)
    /// `presentedItemDidResolveConflict(_:)`
    public static let presentedItemDidResolveConflictVersion = PresenterCallbacks(rawValue: 1 << 12)
    /// `presentedSubitem(at:didGain:)`
    public static let presentedSubitemDidGainVersion = PresenterCallbacks(rawValue: 1 << 13)
    /// `presentedSubitem(at:didLose:)`
    public static let presentedSubitemDidLoseVersion = PresenterCallbacks(rawValue: 1 << 14)
    /// `presentedSubitem(at:didResolve:)`
    public static let presentedSubitemDidResolveConflictVersion = PresenterCallbacks(rawValue: 1 << 15)

    /// Every callback.
    public static let all = PresenterCallbacks(rawValue: (1 << 16) - 1)

    /// The `presentedSubitem…` notifications. A package presenter that implements none of them is sent
    /// `presentedItemDidChange` instead (docs/SEMANTICS.md §3).
    public static let subitemNotifications: PresenterCallbacks = [
        .presentedSubitemDidChange, .presentedSubitemDidAppear, .presentedSubitemDidMove,
        .presentedSubitemDidGainVersion, .presentedSubitemDidLoseVersion, .presentedSubitemDidResolveConflictVersion,
    ]

    /// Each callback with its short name (as in the dump) and the `NSFilePresenter` method (as in reports), in bit
    /// order.
    private static let table: [(callback: PresenterCallbacks, name: String, method: String)] = [
        (.relinquishToReader, "relinquishToReader", "relinquishPresentedItem(toReader:)"),
        (.relinquishToWriter, "relinquishToWriter", "relinquishPresentedItem(toWriter:)"),
        (.savePresentedItemChanges, "savePresentedItemChanges", "savePresentedItemChanges(completionHandler:)"),
        (
            .accommodatePresentedItemDeletion, "accommodatePresentedItemDeletion",
            "accommodatePresentedItemDeletion(completionHandler:)"
        ),
        (
            .accommodatePresentedSubitemDeletion, "accommodatePresentedSubitemDeletion",
            "accommodatePresentedSubitemDeletion(at:completionHandler:)"
        ),
        (.presentedItemDidMove, "presentedItemDidMove", "presentedItemDidMove(to:)"),
        (.presentedItemDidChange, "presentedItemDidChange", "presentedItemDidChange()"),
        (.presentedSubitemDidChange, "presentedSubitemDidChange", "presentedSubitemDidChange(at:)"),
        (.presentedSubitemDidAppear, "presentedSubitemDidAppear", "presentedSubitemDidAppear(at:)"),
        (.presentedSubitemDidMove, "presentedSubitemDidMove", "presentedSubitem(at:didMoveTo:)"),
        (.presentedItemDidGainVersion, "presentedItemDidGainVersion", "presentedItemDidGain(_:)"),
        (.presentedItemDidLoseVersion, "presentedItemDidLoseVersion", "presentedItemDidLose(_:)"),
        (
            .presentedItemDidResolveConflictVersion, "presentedItemDidResolveConflictVersion",
            "presentedItemDidResolveConflict(_:)"
        ),
        (.presentedSubitemDidGainVersion, "presentedSubitemDidGainVersion", "presentedSubitem(at:didGain:)"),
        (.presentedSubitemDidLoseVersion, "presentedSubitemDidLoseVersion", "presentedSubitem(at:didLose:)"),
        (
            .presentedSubitemDidResolveConflictVersion, "presentedSubitemDidResolveConflictVersion",
            "presentedSubitem(at:didResolve:)"
        ),
    ]

    /// The callbacks' short names (`presentedItemDidChange`, `relinquishToReader`), in bit order.
    public var names: [String] { Self.table.filter { contains($0.callback) }.map(\.name) }

    /// The `NSFilePresenter` methods (`presentedItemDidChange()`), in bit order.
    public var methods: [String] { Self.table.filter { contains($0.callback) }.map(\.method) }
}

/// How a version of an item changed (`NSFileVersion`).
public enum VersionChange: Hashable, Sendable {
    case added(VersionID)
    case removed(VersionID)
    case resolved(VersionID)
}

/// A message to a presenter. Those that need a reply carry a ``RequestID`` in ``PresenterMessage``.
public enum PresenterMessageKind: Hashable, Sendable, CustomStringConvertible {
    case relinquishToReader
    case relinquishToWriter
    case savePresentedItemChanges
    case accommodatePresentedItemDeletion
    case accommodatePresentedSubitemDeletion(at: ItemPath)
    /// Run the reacquirer handed back in reply to the relinquish request named.
    case reacquire(relinquish: RequestID)
    case presentedItemDidChange
    case presentedItemDidMove(to: ItemPath)
    case presentedSubitemDidChange(at: ItemPath)
    case presentedSubitemDidAppear(at: ItemPath)
    case presentedSubitemDidMove(from: ItemPath, to: ItemPath)
    case presentedItemVersion(VersionChange)
    case presentedSubitemVersion(at: ItemPath, VersionChange)

    /// `true` for the messages that wait for the presenter's reply.
    public var needsReply: Bool {
        switch self {
        case .relinquishToReader, .relinquishToWriter, .savePresentedItemChanges, .accommodatePresentedItemDeletion,
            .accommodatePresentedSubitemDeletion:
            true
        default:
            false
        }
    }

    /// The callback that receives this message.
    public var callback: PresenterCallbacks {
        switch self {
        case .relinquishToReader: .relinquishToReader
        case .relinquishToWriter: .relinquishToWriter
        case .savePresentedItemChanges: .savePresentedItemChanges
        case .accommodatePresentedItemDeletion: .accommodatePresentedItemDeletion
        case .accommodatePresentedSubitemDeletion: .accommodatePresentedSubitemDeletion
        case .reacquire: []
        case .presentedItemDidChange: .presentedItemDidChange
        case .presentedItemDidMove: .presentedItemDidMove
        case .presentedSubitemDidChange: .presentedSubitemDidChange
        case .presentedSubitemDidAppear: .presentedSubitemDidAppear
        case .presentedSubitemDidMove: .presentedSubitemDidMove
        case .presentedItemVersion(.added): .presentedItemDidGainVersion
        case .presentedItemVersion(.removed): .presentedItemDidLoseVersion
        case .presentedItemVersion(.resolved): .presentedItemDidResolveConflictVersion
        case .presentedSubitemVersion(_, .added): .presentedSubitemDidGainVersion
        case .presentedSubitemVersion(_, .removed): .presentedSubitemDidLoseVersion
        case .presentedSubitemVersion(_, .resolved): .presentedSubitemDidResolveConflictVersion
        }
    }

    /// The `NSFilePresenter` call this message stands for (or the reacquirer run), with its arguments, for logs.
    public var description: String {
        switch self {
        case .relinquishToReader: "relinquishPresentedItem(toReader:)"
        case .relinquishToWriter: "relinquishPresentedItem(toWriter:)"
        case .savePresentedItemChanges: "savePresentedItemChanges"
        case .accommodatePresentedItemDeletion: "accommodatePresentedItemDeletion"
        case .accommodatePresentedSubitemDeletion(let at): "accommodatePresentedSubitemDeletion(at: \(at))"
        case .reacquire(let request): "reacquire (after \(request))"
        case .presentedItemDidChange: "presentedItemDidChange"
        case .presentedItemDidMove(let to): "presentedItemDidMove(to: \(to))"
        case .presentedSubitemDidChange(let at): "presentedSubitemDidChange(at: \(at))"
        case .presentedSubitemDidAppear(let at): "presentedSubitemDidAppear(at: \(at))"
        case .presentedSubitemDidMove(let from, let to): "presentedSubitemAt(\(from), didMoveTo: \(to))"
        case .presentedItemVersion(let change): "presentedItemVersion(\(change))"
        case .presentedSubitemVersion(let at, let change): "presentedSubitemVersion(at: \(at), \(change))"
        }
    }
}

/// A message for one presenter, to be delivered on its queue in the order the arbiter emits them.
public struct PresenterMessage: Hashable, Sendable, CustomStringConvertible {
    /// The presenter to message.
    public var presenter: PresenterID
    /// The client that owns the presenter.
    public var client: ClientID
    /// Set when the message needs a reply (``ArbiterEvent/presenterReplied(_:_:)``).
    public var request: RequestID?
    /// The claim on whose behalf the message is sent, if any.
    public var claim: ClaimID?
    /// What to tell the presenter.
    public var kind: PresenterMessageKind
    /// With ``PresenterMessageKind/presentedSubitemDidMove(from:to:)`` of a rename in place (a case-only rename,
    /// issue 14): the old last component as the mover spelled it, for a client that never spelled it. Else `nil`.
    public var movedFromName: [UInt8]?

    /// Creates a message for one presenter.
    public init(
        presenter: PresenterID,
        client: ClientID,
        request: RequestID?,
        claim: ClaimID?,
        kind: PresenterMessageKind,
        movedFromName: [UInt8]? = nil
    ) {
        self.presenter = presenter
        self.client = client
        self.request = request
        self.claim = claim
        self.kind = kind
        self.movedFromName = movedFromName
    }

    /// The presenter, the message and any request id, for logs.
    public var description: String {
        "\(presenter) <- \(kind)" + (request.map { " [\($0)]" } ?? "")
    }
}

/// An error a presenter returned from save or accommodate, carried intact across processes.
public struct PresenterError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The `NSError` domain.
    public var domain: String
    /// The `NSError` code.
    public var code: Int
    /// The error's localized description.
    public var message: String

    /// Creates an error from an `NSError`'s domain, code and localized description.
    public init(domain: String, code: Int, message: String) {
        self.domain = domain
        self.code = code
        self.message = message
    }

    /// The domain, code and message, for logs.
    public var description: String { "\(domain) \(code): \(message)" }
}

/// A presenter's answer to a request.
public enum PresenterReply: Hashable, Sendable {
    /// The presenter called the reader/writer block, handing back a reacquirer or not.
    case relinquished(reacquirer: Bool)
    /// Save or accommodate finished without error.
    case succeeded
    /// Save or accommodate failed: the claim fails with this error.
    case failed(PresenterError)
}
