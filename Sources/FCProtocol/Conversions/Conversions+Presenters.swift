public import FCCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Presenters: registrations, replies and messages.
// Conversions between filecoord.proto's messages and FCCore's values; the rules are in Conversions+Paths.swift.

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
        if let registeredAt = registration.registeredAt { registeredAtNs = registeredAt }
        if let changeTime = registration.changeTimeAtRegistration { changeTimeNs = changeTime }
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
            hasOtherNames: wire.hasOtherNames_p,
            registeredAt: wire.hasRegisteredAtNs ? wire.registeredAtNs : nil,
            changeTimeAtRegistration: wire.hasChangeTimeNs ? wire.changeTimeNs : nil
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
