public import FCCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Claims: requests, items, grants, failures.
// Conversions between filecoord.proto's messages and FCCore's values; the rules are in Conversions+Paths.swift.

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

    init(wire: Filecoord_V1_ClaimItem, field: @autoclosure () -> String, limits: ProtocolLimits) throws(ProtocolError) {
        self.init(
            path: try decodePath(wire.path, field: "\(field()).path", limits: limits),
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
        if let hold = request.maximumHold { maximumHoldMilliseconds = wireMilliseconds(hold) }
        nonblocking = request.nonblocking
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
        if wire.hasMaximumHoldMilliseconds {
            maximumHold = .milliseconds(Int64(min(wire.maximumHoldMilliseconds, maximumTimeoutMilliseconds)))
        }
        nonblocking = wire.nonblocking
    }
}

extension Filecoord_V1_FinishClaim {
    /// `FinishClaim` for the client's claim `claim`, reporting the items its accessor created and, for a write,
    /// what it left behind.
    public init(claim: ClaimID, created: [ItemPath], outcome: WriteOutcome? = nil) {
        self.init()
        claimID = claim.rawValue
        self.created = created.map(encodePath)
        if let outcome {
            endedAtNs = outcome.endedAt
            // In path order, so that one outcome always encodes alike; a single item (the usual write) is not sorted,
            // which spares the client's gated write path an array.
            if outcome.items.count == 1, let only = outcome.items.first {
                written = [Filecoord_V1_ItemState(path: only.key, only.value)]
            } else {
                written = outcome.items.sorted { $0.key < $1.key }.map {
                    Filecoord_V1_ItemState(path: $0.key, $0.value)
                }
            }
        }
    }

    /// The items the accessor created.
    ///
    /// - Throws: ``ProtocolError`` for an invalid path.
    public func createdPaths(limits: ProtocolLimits = .default) throws(ProtocolError) -> [ItemPath] {
        try decodePaths(created, field: "FinishClaim.created", limits: limits)
    }

    /// What the write left behind, `nil` when the client did not say (`ended_at_ns` 0).
    ///
    /// - Throws: ``ProtocolError`` for an invalid path or a negative size (the daemon then drops the outcome, not the
    ///   finish). A change time may be negative (before 1970, as some network file systems show).
    public func outcome(limits: ProtocolLimits = .default) throws(ProtocolError) -> WriteOutcome? {
        guard endedAtNs != 0 else { return nil }
        var items: [ItemPath: ItemStamp] = [:]
        for (index, state) in written.enumerated() {
            let path = try decodePath(state.path, field: "FinishClaim.written[\(index)].path", limits: limits)
            guard state.size >= 0 else {
                throw ProtocolError(.invalidValue, "FinishClaim.written[\(index)] has a negative size")
            }
            items[path] =
                state.present
                ? .present(inode: state.inode, size: state.size, changeTime: state.changeTimeNs) : .absent
        }
        return WriteOutcome(endedAt: endedAtNs, items: items)
    }
}

extension Filecoord_V1_ItemState {
    /// The state of `path`.
    init(path: ItemPath, _ stamp: ItemStamp) {
        self.init()
        self.path = encodePath(path)
        if case .present(let inode, let size, let changeTime) = stamp {
            present = true
            self.inode = inode
            self.size = size
            changeTimeNs = changeTime
        }
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
        case .clusterUnreachable: self = .clusterUnreachable(wire.message)
        case .wouldWait: self = .wouldWait(wire.message)
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
        case .clusterUnreachable(let reason):
            kind = .clusterUnreachable
            if message == nil { self.message = reason }
        case .wouldWait(let report):
            kind = .wouldWait
            if message == nil { self.message = report }
        }
    }

    /// `ClaimFailed` for an arbiter failure of the client's claim `claim` (ids copied as they are).
    public init(claim: ClaimID, failure: ClaimFailure) {
        self.init(claim: claim, reason: ClaimFailedReason(failure))
    }
}
