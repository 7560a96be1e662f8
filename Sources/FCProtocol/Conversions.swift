public import FCCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Conversions between the wire messages of filecoord.proto and FCCore's value types.
//
// Ids are copied as they are: presenter, claim and coordinator ids on the wire are the client's own numbering, and
// the daemon maps them to its own (and back) around these conversions. Conversions from the wire validate what they
// read (paths through `ItemPath(absolute:)`, enum values, limits) and throw a `ProtocolError`; conversions to the
// wire cannot fail. All of them are pure functions of values: usable from any thread.

// MARK: - Paths

extension ItemPath {
    /// Parses a path received on the wire: raw bytes, absolute, no NUL, at most `limits.maximumPathLength` bytes.
    /// The path is normalised lexically, as `ItemPath(absolute:)` does.
    ///
    /// - Throws: ``ProtocolError`` with `.pathTooLong`, or `.invalidPath` for an empty or relative path or one
    ///   containing NUL.
    public init(wire bytes: some Collection<UInt8>, limits: ProtocolLimits = .default) throws(ProtocolError) {
        self = try decodePath(bytes, field: "path", limits: limits)
    }
}

func decodePath(
    _ bytes: some Collection<UInt8>,
    field: String,
    limits: ProtocolLimits
) throws(ProtocolError)
    -> ItemPath
{
    let count = bytes.count
    guard count <= limits.maximumPathLength else {
        throw ProtocolError(
            .pathTooLong,
            "\(field) is \(count) bytes long; the limit is \(limits.maximumPathLength)"
        )
    }
    do {
        return try ItemPath(absolute: bytes)
    } catch {
        throw ProtocolError(.invalidPath, "\(field): \(error)")
    }
}

func decodePaths(_ list: [Data], field: String, limits: ProtocolLimits) throws(ProtocolError) -> [ItemPath] {
    var paths: [ItemPath] = []
    paths.reserveCapacity(list.count)
    for (index, bytes) in list.enumerated() {
        paths.append(try decodePath(bytes, field: "\(field)[\(index)]", limits: limits))
    }
    return paths
}

/// A path's bytes, written straight into the message's `Data` from its components (no intermediate array).
func encodePath(_ path: ItemPath) -> Data {
    let slash = UInt8(ascii: "/")
    guard !path.isRoot else { return Data([slash]) }
    var data = Data(capacity: path.components.reduce(0) { $0 + $1.count + 1 })
    for component in path.components {
        data.append(slash)
        data.append(contentsOf: component)
    }
    return data
}

// MARK: - Limits

extension Filecoord_V1_Limits {
    /// The limits as `HelloReply` carries them (each clamped to `UInt32.max`).
    public init(_ limits: ProtocolLimits) {
        self.init()
        maximumFrameSize = UInt32(clamping: limits.maximumFrameSize)
        maximumClaimsPerClient = UInt32(clamping: limits.maximumClaimsPerClient)
        maximumPresentersPerClient = UInt32(clamping: limits.maximumPresentersPerClient)
        maximumItemsPerClaim = UInt32(clamping: limits.maximumItemsPerClaim)
        maximumPathLength = UInt32(clamping: limits.maximumPathLength)
    }
}

extension ProtocolLimits {
    /// The limits a daemon announced in `HelloReply.limits`; a field that is 0 (absent) takes its default.
    public init(wire: Filecoord_V1_Limits) {
        func value(_ field: UInt32, _ fallback: Int) -> Int { field == 0 ? fallback : Int(field) }
        self.init(
            maximumFrameSize: value(wire.maximumFrameSize, ProtocolLimits.defaultMaximumFrameSize),
            maximumClaimsPerClient: value(wire.maximumClaimsPerClient, ProtocolLimits.defaultMaximumClaimsPerClient),
            maximumPresentersPerClient: value(
                wire.maximumPresentersPerClient,
                ProtocolLimits.defaultMaximumPresentersPerClient
            ),
            maximumItemsPerClaim: value(wire.maximumItemsPerClaim, ProtocolLimits.defaultMaximumItemsPerClaim),
            maximumPathLength: value(wire.maximumPathLength, ProtocolLimits.defaultMaximumPathLength)
        )
    }
}

// MARK: - Presenters

extension Filecoord_V1_RegisterPresenter {
    /// The registration as the client sends it. The presenter id is copied as it is (the client's numbering); the
    /// client id is not sent (the connection is the client).
    public init(_ registration: PresenterRegistration) {
        self.init()
        presenterID = registration.id.rawValue
        if let path = registration.path { self.path = encodePath(path) }
        callbacks = registration.callbacks.rawValue
        isPackage = registration.isPackage
        if let queue = registration.serialQueue { serialQueue = queue }
        if let identity = registration.identity { self.identity = Filecoord_V1_FileIdentity(identity) }
        hasOtherNames_p = registration.hasOtherNames
    }
}

extension PresenterRegistration {
    /// The registration a client sent, for the client `client`. Callback bits this version does not know are
    /// kept (the arbiter ignores them).
    ///
    /// - Throws: ``ProtocolError`` for an invalid path.
    public init(
        wire: Filecoord_V1_RegisterPresenter,
        client: ClientID,
        limits: ProtocolLimits = .default
    ) throws(ProtocolError) {
        self.init(
            id: PresenterID(wire.presenterID),
            client: client,
            path: wire.hasPath ? try decodePath(wire.path, field: "RegisterPresenter.path", limits: limits) : nil,
            callbacks: PresenterCallbacks(rawValue: wire.callbacks),
            isPackage: wire.isPackage,
            serialQueue: wire.hasSerialQueue ? wire.serialQueue : nil,
            identity: wire.hasIdentity ? ItemIdentity(wire.identity) : nil,
            hasOtherNames: wire.hasOtherNames_p
        )
    }
}

extension Filecoord_V1_UnregisterPresenter {
    /// `UnregisterPresenter` for the client's presenter `presenter`.
    public init(presenter: PresenterID) {
        self.init()
        presenterID = presenter.rawValue
    }
}

extension Filecoord_V1_PresenterURLChanged {
    /// `PresenterURLChanged` for the client's presenter `presenter`, now at `path` (`nil`: no URL).
    public init(presenter: PresenterID, path: ItemPath?) {
        self.init()
        presenterID = presenter.rawValue
        if let path { self.path = encodePath(path) }
    }

    /// The new location, `nil` when absent.
    ///
    /// - Throws: ``ProtocolError`` for an invalid path.
    public func itemPath(limits: ProtocolLimits = .default) throws(ProtocolError) -> ItemPath? {
        hasPath ? try decodePath(path, field: "PresenterURLChanged.path", limits: limits) : nil
    }
}

// MARK: - Claims

extension Access {
    /// The `ClaimItem.options` bits: Apple's raw values of the reading or writing options.
    public var wireOptions: UInt64 {
        switch self {
        case .read(let options): UInt64(options.rawValue)
        case .write(let options): UInt64(options.rawValue)
        }
    }

    /// The access a `ClaimItem` describes. Option bits this version does not know are kept (the arbiter ignores
    /// them).
    ///
    /// - Throws: ``ProtocolError`` with `.invalidValue` if the options do not fit in `UInt` (32-bit platforms).
    public init(wireWrite write: Bool, options: UInt64) throws(ProtocolError) {
        guard let bits = UInt(exactly: options) else {
            throw ProtocolError(.invalidValue, "ClaimItem.options \(options) does not fit this platform's UInt")
        }
        self = write ? .write(WritingOptions(rawValue: bits)) : .read(ReadingOptions(rawValue: bits))
    }
}

extension Filecoord_V1_ClaimItem {
    /// The item as `RequestClaim` carries it.
    public init(_ item: ClaimItem) {
        self.init()
        path = encodePath(item.path)
        write = item.access.isWrite
        options = item.access.wireOptions
        if let identity = item.identity { self.identity = Filecoord_V1_FileIdentity(identity) }
        hasOtherNames_p = item.hasOtherNames
    }
}

extension ClaimItem {
    /// The item a `RequestClaim` carried.
    ///
    /// - Throws: ``ProtocolError`` for an invalid path or options.
    public init(wire: Filecoord_V1_ClaimItem, limits: ProtocolLimits = .default) throws(ProtocolError) {
        try self.init(wire: wire, field: "ClaimItem", limits: limits)
    }

    init(wire: Filecoord_V1_ClaimItem, field: String, limits: ProtocolLimits) throws(ProtocolError) {
        self.init(
            path: try decodePath(wire.path, field: "\(field).path", limits: limits),
            access: try Access(wireWrite: wire.write, options: wire.options),
            identity: wire.hasIdentity ? ItemIdentity(wire.identity) : nil,
            hasOtherNames: wire.hasOtherNames_p
        )
    }
}

extension Filecoord_V1_FileIdentity {
    /// A file's identity as `ClaimItem.identity` and `RegisterPresenter.identity` carry it (issue 26).
    public init(_ identity: ItemIdentity) {
        self.init()
        device = identity.device
        inode = identity.inode
    }
}

extension ItemIdentity {
    /// The identity a frame carried. Any two numbers are valid: the arbiter only compares them.
    public init(_ wire: Filecoord_V1_FileIdentity) {
        self.init(device: wire.device, inode: wire.inode)
    }
}

extension Filecoord_V1_RequestClaim {
    /// The request as the client sends it. Ids are copied as they are (the client's numbering); the client id is
    /// not sent.
    public init(_ request: ClaimRequest) {
        self.init()
        claimID = request.id.rawValue
        coordinatorID = request.coordinator.rawValue
        purpose = request.purpose.rawValue
        if let presenter = request.filePresenter { filePresenterID = presenter.rawValue }
        if let presenter = request.fromPresenterQueue { fromPresenterQueue = presenter.rawValue }
        if let callback = request.fromCallback { fromCallback = callback.rawValue }
        items = request.items.map(Filecoord_V1_ClaimItem.init)
        isPreparation = request.isPreparation
        held = request.isHeld
        if let timeout = request.timeout { timeoutMilliseconds = wireMilliseconds(timeout) }
    }
}

/// The longest timeout the wire carries, in milliseconds: ``ClaimRequest/longestTimeout``; longer ones are cut to it.
let maximumTimeoutMilliseconds = UInt64(ClaimRequest.longestTimeout / .milliseconds(1))

/// A timeout in whole milliseconds, rounded up (a timeout never ends early), negative ones as 0.
func wireMilliseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0, attoseconds >= 0 else { return 0 }
    let perMillisecond: Int64 = 1_000_000_000_000_000
    let fraction = UInt64((attoseconds + perMillisecond - 1) / perMillisecond)
    guard UInt64(seconds) < maximumTimeoutMilliseconds / 1000 else { return maximumTimeoutMilliseconds }
    return min(UInt64(seconds) * 1000 + fraction, maximumTimeoutMilliseconds)
}

extension ClaimRequest {
    /// The request a client sent, for the client `client`, with the client's ids. An empty item list is passed
    /// through: the arbiter fails such a claim with `invalidRequest`.
    ///
    /// - Throws: ``ProtocolError`` with `.limitExceeded` for more than `limits.maximumItemsPerClaim` items, or for
    ///   an invalid item.
    public init(
        wire: Filecoord_V1_RequestClaim,
        client: ClientID,
        limits: ProtocolLimits = .default
    )
        throws(ProtocolError)
    {
        guard wire.items.count <= limits.maximumItemsPerClaim else {
            throw ProtocolError(
                .limitExceeded,
                "RequestClaim has \(wire.items.count) items; the limit is \(limits.maximumItemsPerClaim)"
            )
        }
        guard wire.purpose.utf8.count <= ProtocolLimits.maximumPurposeLength else {
            throw ProtocolError(
                .limitExceeded,
                "RequestClaim.purpose is \(wire.purpose.utf8.count) bytes long; the limit is "
                    + "\(ProtocolLimits.maximumPurposeLength)"
            )
        }
        var items: [ClaimItem] = []
        items.reserveCapacity(wire.items.count)
        for (index, item) in wire.items.enumerated() {
            items.append(try ClaimItem(wire: item, field: "RequestClaim.items[\(index)]", limits: limits))
        }
        self.init(
            id: ClaimID(wire.claimID),
            client: client,
            coordinator: CoordinatorID(wire.coordinatorID),
            purpose: PurposeID(wire.purpose),
            filePresenter: wire.hasFilePresenterID ? PresenterID(wire.filePresenterID) : nil,
            fromPresenterQueue: wire.hasFromPresenterQueue ? PresenterID(wire.fromPresenterQueue) : nil,
            // Unknown bits are ignored, as in RegisterPresenter.callbacks.
            fromCallback: wire.hasFromCallback
                ? PresenterCallbacks(rawValue: wire.fromCallback).intersection(.all) : nil,
            items: items,
            isPreparation: wire.isPreparation,
            timeout: wire.hasTimeoutMilliseconds
                ? .milliseconds(Int64(min(wire.timeoutMilliseconds, maximumTimeoutMilliseconds))) : nil
        )
        isHeld = wire.held
    }
}

extension Filecoord_V1_FinishClaim {
    /// `FinishClaim` for the client's claim `claim`, reporting the items its accessor created.
    public init(claim: ClaimID, created: [ItemPath]) {
        self.init()
        claimID = claim.rawValue
        self.created = created.map(encodePath)
    }

    /// The items the accessor created.
    ///
    /// - Throws: ``ProtocolError`` for an invalid path.
    public func createdPaths(limits: ProtocolLimits = .default) throws(ProtocolError) -> [ItemPath] {
        try decodePaths(created, field: "FinishClaim.created", limits: limits)
    }
}

extension Filecoord_V1_CancelCoordinator {
    /// `CancelCoordinator` for the client's coordinator `coordinator`.
    public init(coordinator: CoordinatorID) {
        self.init()
        coordinatorID = coordinator.rawValue
    }
}

extension Filecoord_V1_CancelClaim {
    /// `CancelClaim` for the client's claim `claim`.
    public init(claim: ClaimID) {
        self.init()
        claimID = claim.rawValue
    }
}

extension Filecoord_V1_ItemMoved {
    /// `ItemMoved` inside the client's claim `claim`; `fromName`, the old last component as spelled, for a rename in
    /// place.
    public init(claim: ClaimID, from: ItemPath, to: ItemPath, fromName: [UInt8]? = nil) {
        self.init()
        claimID = claim.rawValue
        self.from = encodePath(from)
        self.to = encodePath(to)
        if let fromName { self.fromName = Data(fromName) }
    }
}

/// A single path component as spelled (issue 14's `from_name`, `moved_from_name`): at most 255 bytes (`NAME_MAX`),
/// no `/`, no NUL, not empty, `.` or `..`.
func decodeName(_ bytes: Data, field: String) throws(ProtocolError) -> [UInt8] {
    let name = Array(bytes)
    guard !name.isEmpty, name.count <= 255, !name.contains(UInt8(ascii: "/")), !name.contains(0),
        name != [UInt8(ascii: ".")], name != [UInt8(ascii: "."), UInt8(ascii: ".")]
    else {
        throw ProtocolError(.invalidValue, "\(field) must be one path component of 1 to 255 bytes")
    }
    return name
}

extension Filecoord_V1_Granted {
    /// `Granted` for the client's claim `claim`, with one path per requested item.
    public init(claim: ClaimID, paths: [ItemPath]) {
        self.init()
        claimID = claim.rawValue
        self.paths = paths.map(encodePath)
    }

    /// The granted paths, one per requested item, in request order.
    ///
    /// - Throws: ``ProtocolError`` for an invalid path, or more paths than `limits.maximumItemsPerClaim`.
    public func itemPaths(limits: ProtocolLimits = .default) throws(ProtocolError) -> [ItemPath] {
        guard paths.count <= limits.maximumItemsPerClaim else {
            throw ProtocolError(
                .limitExceeded,
                "Granted has \(paths.count) paths; the limit is \(limits.maximumItemsPerClaim)"
            )
        }
        return try decodePaths(paths, field: "Granted.paths", limits: limits)
    }
}

// MARK: - Versions

extension VersionChange {
    /// The change a `VersionChanged` or `PresenterMessage` carries.
    ///
    /// - Throws: ``ProtocolError`` with `.invalidValue` for an unspecified or unknown kind, or an empty version id.
    public init(wireKind: Filecoord_V1_VersionChangeKind, versionID: String) throws(ProtocolError) {
        guard !versionID.isEmpty else {
            throw ProtocolError(.invalidValue, "a version change names no version")
        }
        let id = VersionID(versionID)
        switch wireKind {
        case .added: self = .added(id)
        case .removed: self = .removed(id)
        case .resolved: self = .resolved(id)
        case .unspecified, .UNRECOGNIZED:
            throw ProtocolError(.invalidValue, "version change kind \(wireKind.rawValue) is not valid")
        }
    }

    /// The kind, as the wire carries it.
    public var wireKind: Filecoord_V1_VersionChangeKind {
        switch self {
        case .added: .added
        case .removed: .removed
        case .resolved: .resolved
        }
    }

    /// The version the change is about.
    public var versionID: VersionID {
        switch self {
        case .added(let id), .removed(let id), .resolved(let id): id
        }
    }
}

extension Filecoord_V1_VersionChanged {
    /// `VersionChanged` inside the client's claim `claim`.
    public init(claim: ClaimID, path: ItemPath, change: VersionChange) {
        self.init()
        claimID = claim.rawValue
        self.path = encodePath(path)
        kind = change.wireKind
        versionID = change.versionID.rawValue
    }
}

// MARK: - Presenter replies

extension Filecoord_V1_PresenterFailure {
    /// The error as the wire carries it.
    public init(_ error: PresenterError) {
        self.init()
        domain = error.domain
        code = Int64(error.code)
        message = error.message
    }
}

extension PresenterError {
    /// The error a `PresenterFailure` carried. A code beyond this platform's `Int` is clamped.
    public init(wire: Filecoord_V1_PresenterFailure) {
        self.init(domain: wire.domain, code: Int(clamping: wire.code), message: wire.message)
    }
}

extension Filecoord_V1_PresenterReply {
    /// The client's answer `reply` to the daemon's request `request`.
    public init(request: RequestID, reply: PresenterReply) {
        self.init()
        requestID = request.rawValue
        switch reply {
        case .relinquished(let reacquirer):
            var relinquished = Filecoord_V1_PresenterReply.Relinquished()
            relinquished.reacquirer = reacquirer
            result = .relinquished(relinquished)
        case .succeeded:
            result = .succeeded(Filecoord_V1_PresenterReply.Succeeded())
        case .failed(let error):
            result = .failed(Filecoord_V1_PresenterFailure(error))
        }
    }
}

extension PresenterReply {
    /// The answer a `PresenterReply` carried.
    ///
    /// - Throws: ``ProtocolError`` with `.invalidValue` when no result is set.
    public init(wire: Filecoord_V1_PresenterReply) throws(ProtocolError) {
        switch wire.result {
        case .relinquished(let relinquished): self = .relinquished(reacquirer: relinquished.reacquirer)
        case .succeeded: self = .succeeded
        case .failed(let failure): self = .failed(PresenterError(wire: failure))
        case nil: throw ProtocolError(.invalidValue, "PresenterReply for request \(wire.requestID) has no result")
        }
    }
}

// MARK: - Presenter messages

extension Filecoord_V1_PresenterMessage.Kind {
    /// The kind of an FCCore message, without its arguments.
    public init(_ kind: PresenterMessageKind) {
        switch kind {
        case .relinquishToReader: self = .relinquishToReader
        case .relinquishToWriter: self = .relinquishToWriter
        case .savePresentedItemChanges: self = .savePresentedItemChanges
        case .accommodatePresentedItemDeletion: self = .accommodatePresentedItemDeletion
        case .accommodatePresentedSubitemDeletion: self = .accommodatePresentedSubitemDeletion
        case .reacquire: self = .reacquire
        case .presentedItemDidChange: self = .presentedItemDidChange
        case .presentedItemDidMove: self = .presentedItemDidMove
        case .presentedSubitemDidChange: self = .presentedSubitemDidChange
        case .presentedSubitemDidAppear: self = .presentedSubitemDidAppear
        case .presentedSubitemDidMove: self = .presentedSubitemDidMove
        case .presentedItemVersion: self = .presentedItemVersion
        case .presentedSubitemVersion: self = .presentedSubitemVersion
        }
    }
}

extension Filecoord_V1_PresenterMessage {
    /// The message as the daemon sends it. Ids are copied as they are: the daemon passes a message whose presenter
    /// (and claim, if any) it has already mapped to the receiving client's numbering, and no claim of another
    /// client. The client id is not sent.
    public init(_ message: PresenterMessage) {
        self.init()
        presenterID = message.presenter.rawValue
        if let request = message.request { requestID = request.rawValue }
        if let claim = message.claim { claimID = claim.rawValue }
        kind = Filecoord_V1_PresenterMessage.Kind(message.kind)
        switch message.kind {
        case .relinquishToReader, .relinquishToWriter, .savePresentedItemChanges, .accommodatePresentedItemDeletion,
            .presentedItemDidChange:
            break
        case .accommodatePresentedSubitemDeletion(let at), .presentedSubitemDidChange(let at),
            .presentedSubitemDidAppear(let at):
            path = encodePath(at)
        case .reacquire(let relinquish):
            reacquireRequestID = relinquish.rawValue
        case .presentedItemDidMove(let to):
            path = encodePath(to)
        case .presentedSubitemDidMove(let from, let to):
            path = encodePath(from)
            path2 = encodePath(to)
            if let name = message.movedFromName { movedFromName = Data(name) }
        case .presentedItemVersion(let change):
            versionKind = change.wireKind
            versionID = change.versionID.rawValue
        case .presentedSubitemVersion(let at, let change):
            path = encodePath(at)
            versionKind = change.wireKind
            versionID = change.versionID.rawValue
        }
    }
}

extension PresenterMessageKind {
    /// The kind and arguments a `PresenterMessage` carried. Fields the kind does not use are ignored.
    ///
    /// - Throws: ``ProtocolError`` for an unspecified or unknown kind, or an invalid path or version change.
    public init(wire: Filecoord_V1_PresenterMessage, limits: ProtocolLimits = .default) throws(ProtocolError) {
        func path() throws(ProtocolError) -> ItemPath {
            try decodePath(wire.path, field: "PresenterMessage.path", limits: limits)
        }
        func change() throws(ProtocolError) -> VersionChange {
            try VersionChange(wireKind: wire.versionKind, versionID: wire.versionID)
        }
        switch wire.kind {
        case .relinquishToReader: self = .relinquishToReader
        case .relinquishToWriter: self = .relinquishToWriter
        case .savePresentedItemChanges: self = .savePresentedItemChanges
        case .accommodatePresentedItemDeletion: self = .accommodatePresentedItemDeletion
        case .accommodatePresentedSubitemDeletion: self = .accommodatePresentedSubitemDeletion(at: try path())
        case .reacquire: self = .reacquire(relinquish: RequestID(wire.reacquireRequestID))
        case .presentedItemDidChange: self = .presentedItemDidChange
        case .presentedItemDidMove: self = .presentedItemDidMove(to: try path())
        case .presentedSubitemDidChange: self = .presentedSubitemDidChange(at: try path())
        case .presentedSubitemDidAppear: self = .presentedSubitemDidAppear(at: try path())
        case .presentedSubitemDidMove:
            self = .presentedSubitemDidMove(
                from: try path(),
                to: try decodePath(wire.path2, field: "PresenterMessage.path2", limits: limits)
            )
        case .presentedItemVersion: self = .presentedItemVersion(try change())
        case .presentedSubitemVersion: self = .presentedSubitemVersion(at: try path(), try change())
        case .unspecified, .UNRECOGNIZED:
            throw ProtocolError(.invalidValue, "PresenterMessage.kind \(wire.kind.rawValue) is not valid")
        }
    }
}

extension PresenterMessage {
    /// The message the daemon sent, for the receiving client `client`, with the client's ids.
    ///
    /// - Throws: ``ProtocolError`` for an invalid kind or argument, or when `request_id` is absent on a kind that
    ///   needs a reply or present on one that does not.
    public init(
        wire: Filecoord_V1_PresenterMessage,
        client: ClientID,
        limits: ProtocolLimits = .default
    ) throws(ProtocolError) {
        let kind = try PresenterMessageKind(wire: wire, limits: limits)
        guard wire.hasRequestID == kind.needsReply else {
            throw ProtocolError(
                .invalidValue,
                "PresenterMessage \(kind) " + (kind.needsReply ? "needs a request_id" : "must not carry a request_id")
            )
        }
        self.init(
            presenter: PresenterID(wire.presenterID),
            client: client,
            request: wire.hasRequestID ? RequestID(wire.requestID) : nil,
            claim: wire.hasClaimID ? ClaimID(wire.claimID) : nil,
            kind: kind,
            movedFromName: wire.hasMovedFromName
                ? try decodeName(wire.movedFromName, field: "PresenterMessage.moved_from_name") : nil
        )
    }
}

// MARK: - Claim failures

extension ClaimFailedReason {
    /// The reason a `ClaimFailed` carried.
    ///
    /// - Throws: ``ProtocolError`` with `.invalidValue` for an unspecified or unknown kind.
    public init(wire: Filecoord_V1_ClaimFailed) throws(ProtocolError) {
        switch wire.kind {
        case .cancelled:
            self = .cancelled
        case .presenterError:
            self = .presenterError(
                PresenterError(wire: wire.presenterError),
                presenter: wire.hasPresenterID ? PresenterID(wire.presenterID) : nil
            )
        case .invalidRequest: self = .invalidRequest(wire.message)
        case .deadlock: self = .deadlock(wire.message)
        case .shuttingDown: self = .shuttingDown(wire.message)
        case .limitExceeded: self = .limitExceeded(wire.message)
        case .timedOut: self = .timedOut(wire.message)
        case .unspecified, .UNRECOGNIZED:
            throw ProtocolError(.invalidValue, "ClaimFailed.kind \(wire.kind.rawValue) is not valid")
        }
    }
}

extension Filecoord_V1_ClaimFailed {
    /// `ClaimFailed` for the client's claim `claim`. `message` is set to the reason's description unless given.
    public init(claim: ClaimID, reason: ClaimFailedReason, message: String? = nil) {
        self.init()
        claimID = claim.rawValue
        self.message = message ?? reason.description
        switch reason {
        case .cancelled:
            kind = .cancelled
        case .presenterError(let error, let presenter):
            kind = .presenterError
            presenterError = Filecoord_V1_PresenterFailure(error)
            if let presenter { presenterID = presenter.rawValue }
        case .invalidRequest(let reason):
            kind = .invalidRequest
            if message == nil { self.message = reason }
        case .deadlock(let report):
            kind = .deadlock
            if message == nil { self.message = report }
        case .shuttingDown(let reason):
            kind = .shuttingDown
            if message == nil { self.message = reason }
        case .limitExceeded(let reason):
            kind = .limitExceeded
            if message == nil { self.message = reason }
        case .timedOut(let report):
            kind = .timedOut
            if message == nil { self.message = report }
        }
    }

    /// `ClaimFailed` for an arbiter failure of the client's claim `claim` (ids copied as they are).
    public init(claim: ClaimID, failure: ClaimFailure) {
        self.init(claim: claim, reason: ClaimFailedReason(failure))
    }
}

// MARK: - Errors and dumps

extension Filecoord_V1_ProtocolError {
    /// The `ProtocolError` frame the daemon sends before closing a connection.
    public init(_ error: ProtocolError) {
        self.init()
        reason = error.description
    }
}

extension Filecoord_V1_DumpReply {
    /// A `DumpReply` carrying the daemon's state as JSON bytes.
    public init(json: some Sequence<UInt8>) {
        self.init()
        self.json = Data(json)
    }
}

// MARK: - Events and effects

extension ArbiterEvent {
    /// The arbiter event a client's frame stands for, for the client `client`, with the client's ids (the daemon
    /// maps them before feeding the arbiter). `nil` for `Hello` and `DumpRequest`, which the daemon answers itself.
    ///
    /// - Throws: ``ProtocolError``: `.unexpectedMessage` for a daemon-to-client message, `.unknownMessage` for a
    ///   frame with no message, or the error of the message's conversion.
    public init?(
        wire frame: Filecoord_V1_Frame,
        client: ClientID,
        limits: ProtocolLimits = .default
    )
        throws(ProtocolError)
    {
        guard let payload = frame.payload else {
            throw ProtocolError(.unknownMessage, "the frame carries no message")
        }
        switch payload {
        case .hello, .dumpRequest:
            return nil
        case .registerPresenter(let message):
            self = .presenterAdded(try PresenterRegistration(wire: message, client: client, limits: limits))
        case .unregisterPresenter(let message):
            self = .presenterRemoved(PresenterID(message.presenterID))
        case .presenterURLChanged(let message):
            self = .presenterURLChanged(PresenterID(message.presenterID), to: try message.itemPath(limits: limits))
        case .requestClaim(let message):
            self = .claimRequested(try ClaimRequest(wire: message, client: client, limits: limits))
        case .finishClaim(let message):
            self = .claimFinished(ClaimID(message.claimID), created: try message.createdPaths(limits: limits))
        case .cancelCoordinator(let message):
            self = .coordinatorCancelled(client, CoordinatorID(message.coordinatorID))
        case .cancelClaim(let message):
            self = .claimCancelled(ClaimID(message.claimID))
        case .preparationReturned(let message):
            self = .preparationReturned(ClaimID(message.claimID))
        case .presenterReply(let message):
            self = .presenterReplied(RequestID(message.requestID), try PresenterReply(wire: message))
        case .itemMoved(let message):
            self = .itemMoved(
                ClaimID(message.claimID),
                from: try decodePath(message.from, field: "ItemMoved.from", limits: limits),
                to: try decodePath(message.to, field: "ItemMoved.to", limits: limits),
                fromName: message.hasFromName ? try decodeName(message.fromName, field: "ItemMoved.from_name") : nil
            )
        case .versionChanged(let message):
            self = .versionChanged(
                ClaimID(message.claimID),
                try decodePath(message.path, field: "VersionChanged.path", limits: limits),
                try VersionChange(wireKind: message.kind, versionID: message.versionID)
            )
        case .leaseReturned(let message):
            guard message.running.count <= limits.maximumClaimsPerClient else {
                throw ProtocolError(
                    .limitExceeded,
                    "LeaseReturned declares \(message.running.count) running claims; at most \(limits.maximumClaimsPerClient)"
                )
            }
            var running: [ClaimRequest] = []
            running.reserveCapacity(message.running.count)
            for wire in message.running {
                var request = try ClaimRequest(wire: wire, client: client, limits: limits)
                request.isHeld = true
                running.append(request)
            }
            self = .leaseReturned(LeaseID(message.leaseID), client: client, running: running)
        case .helloReply, .refused, .granted, .claimFailed, .presenterMessage, .protocolError, .dumpReply,
            .watchUnavailable, .leaseGranted, .leaseRecalled, .claimInsideLease:
            throw ProtocolError(.unexpectedMessage, "\(payload.messageName) is sent by the daemon, not to it")
        case .versionStoreReply, .pong:
            throw ProtocolError(.unexpectedMessage, "\(payload.messageName) is sent by the daemon, not to it")
        case .ping:
            // Answered by the connection itself (a keepalive, issue 28), not by the arbiter.
            throw ProtocolError(.unexpectedMessage, "Ping is no arbiter event")
        case .versionStoreRequest:
            // Answered by the daemon's version store (FCDaemon.VersionStoreService), not by the arbiter.
            throw ProtocolError(.unexpectedMessage, "VersionStoreRequest is no arbiter event")
        }
    }
}

extension Filecoord_V1_Frame {
    /// The frame a client sends for an arbiter event, with ids copied as they are. `nil` for the events a client
    /// does not send (`clientConnected`, which is `Hello`'s job, `clientDisconnected`, which is closing the
    /// connection, and `timerFired`, which is the daemon's own).
    public init?(_ event: ArbiterEvent) {
        switch event {
        case .clientConnected, .clientDisconnected, .timerFired, .fileSystemChanged:
            return nil
        case .leaseReturned(let lease, _, let running):
            var message = Filecoord_V1_LeaseReturned()
            message.leaseID = lease.rawValue
            message.running = running.map {
                var request = $0
                request.isHeld = true
                return Filecoord_V1_RequestClaim(request)
            }
            self.init(.leaseReturned(message))
        case .presenterAdded(let registration):
            self.init(.registerPresenter(Filecoord_V1_RegisterPresenter(registration)))
        case .presenterRemoved(let presenter):
            self.init(.unregisterPresenter(Filecoord_V1_UnregisterPresenter(presenter: presenter)))
        case .presenterURLChanged(let presenter, let path):
            self.init(.presenterURLChanged(Filecoord_V1_PresenterURLChanged(presenter: presenter, path: path)))
        case .claimRequested(let request):
            self.init(.requestClaim(Filecoord_V1_RequestClaim(request)))
        case .claimFinished(let claim, let created):
            self.init(.finishClaim(Filecoord_V1_FinishClaim(claim: claim, created: created)))
        case .coordinatorCancelled(_, let coordinator):
            self.init(.cancelCoordinator(Filecoord_V1_CancelCoordinator(coordinator: coordinator)))
        case .claimCancelled(let claim):
            self.init(.cancelClaim(Filecoord_V1_CancelClaim(claim: claim)))
        case .preparationReturned(let claim):
            var message = Filecoord_V1_PreparationReturned()
            message.claimID = claim.rawValue
            self.init(.preparationReturned(message))
        case .presenterReplied(let request, let reply):
            self.init(.presenterReply(Filecoord_V1_PresenterReply(request: request, reply: reply)))
        case .itemMoved(let claim, let from, let to, let fromName):
            self.init(.itemMoved(Filecoord_V1_ItemMoved(claim: claim, from: from, to: to, fromName: fromName)))
        case .versionChanged(let claim, let path, let change):
            self.init(.versionChanged(Filecoord_V1_VersionChanged(claim: claim, path: path, change: change)))
        }
    }

    /// The frame the daemon sends for an arbiter effect addressed to a client, with ids copied as they are (the
    /// daemon maps them to the receiving client's numbering first). `nil` for the effects the daemon carries out
    /// itself (`startTimer`, `cancelTimer`, `log`).
    public init?(_ effect: ArbiterEffect) {
        switch effect {
        case .startTimer, .cancelTimer, .log, .watch, .unwatch, .leaseDropped:
            return nil
        case .grantLease(let lease, _, let subtree):
            var message = Filecoord_V1_LeaseGranted()
            message.leaseID = lease.rawValue
            message.subtree = encodePath(subtree)
            self.init(.leaseGranted(message))
        case .recallLease(let lease, _):
            var message = Filecoord_V1_LeaseRecalled()
            message.leaseID = lease.rawValue
            self.init(.leaseRecalled(message))
        case .claimInsideLease(let claim, _, let lease):
            var message = Filecoord_V1_ClaimInsideLease()
            message.claimID = claim.rawValue
            message.leaseID = lease.rawValue
            self.init(.claimInsideLease(message))
        case .watchUnavailable(let presenter, _, let directory, let reason):
            var message = Filecoord_V1_WatchUnavailable()
            message.presenterID = presenter.rawValue
            message.directory = encodePath(directory)
            message.reason = reason
            self.init(.watchUnavailable(message))
        case .grant(let claim, _, let paths):
            self.init(.granted(Filecoord_V1_Granted(claim: claim, paths: paths)))
        case .fail(let claim, _, let failure):
            self.init(.claimFailed(Filecoord_V1_ClaimFailed(claim: claim, failure: failure)))
        case .message(let message):
            self.init(.presenterMessage(Filecoord_V1_PresenterMessage(message)))
        }
    }

    /// A `ProtocolError` frame, sent by the daemon just before it closes the connection.
    public init(_ error: ProtocolError) {
        self.init(.protocolError(Filecoord_V1_ProtocolError(error)))
    }
}
