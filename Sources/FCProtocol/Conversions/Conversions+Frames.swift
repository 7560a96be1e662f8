public import FCCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Frames: arbiter events and effects, errors and dumps.
// Conversions between filecoord.proto's messages and FCCore's values; the rules are in Conversions+Paths.swift.

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
            self = .claimFinished(
                ClaimID(message.claimID),
                created: try message.createdPaths(limits: limits),
                // An outcome the daemon cannot read is dropped, not the finish: the write's echoes are then told
                // apart by the echo retention alone.
                outcome: (try? message.outcome(limits: limits)) ?? nil
            )
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
            .watchUnavailable, .watchAvailable, .leaseGranted, .leaseRecalled, .claimInsideLease:
            throw ProtocolError(.unexpectedMessage, "\(payload.messageName) is sent by the daemon, not to it")
        case .versionStoreReply, .pong:
            throw ProtocolError(.unexpectedMessage, "\(payload.messageName) is sent by the daemon, not to it")
        case .ping:
            // Answered by the connection itself (a keepalive, issue 28), not by the arbiter.
            throw ProtocolError(.unexpectedMessage, "Ping is no arbiter event")
        case .versionStoreRequest:
            // Answered by the daemon's version store (FCDaemon.VersionStoreService), not by the arbiter.
            throw ProtocolError(.unexpectedMessage, "VersionStoreRequest is no arbiter event")
        case .progressPublish, .progressUpdate, .progressUnpublish, .progressSubscribe, .progressUnsubscribe,
            .progressControl:
            // File progress (issue 44) goes to the daemon's progress board, not to the arbiter.
            throw ProtocolError(.unexpectedMessage, "\(payload.messageName) is no arbiter event")
        case .queryStart, .queryStop, .queryResults:
            // Live queries (issue 44) go to the daemon's query service, not to the arbiter.
            throw ProtocolError(.unexpectedMessage, "\(payload.messageName) is no arbiter event")
        case .leaseCounterIdle:
            // Read by the daemon against the client's lease counters (FCDaemon's LeaseCounterBoard), which may then
            // return the lease to the arbiter.
            throw ProtocolError(.unexpectedMessage, "\(payload.messageName) is no arbiter event")
        case .progressAppeared, .progressChanged, .progressGone, .progressControlRequested, .queryItems,
            .queryWatchUnavailable, .queryWatchAvailable:
            throw ProtocolError(.unexpectedMessage, "\(payload.messageName) is sent by the daemon, not to it")
        }
    }
}

extension Filecoord_V1_Frame {
    /// The frame a client sends for a claim (`RequestClaim`).
    public init(claim request: ClaimRequest) {
        self.init(.requestClaim(Filecoord_V1_RequestClaim(request)))
    }

    /// The frame a client sends for `message`, with ids copied as they are. The daemon reads it back as the
    /// message's event (``ArbiterEvent/init(wire:client:)`` gives ``ClientMessage/event(from:)`` for the client
    /// of the connection).
    public init(_ message: ClientMessage) {
        switch message {
        case .returnLease(let lease, let running):
            var wire = Filecoord_V1_LeaseReturned()
            wire.leaseID = lease.rawValue
            wire.running = running.map {
                var request = $0
                request.isHeld = true
                return Filecoord_V1_RequestClaim(request)
            }
            self.init(.leaseReturned(wire))
        case .declareHeldClaim(let request):
            self.init(claim: request)
        case .addPresenter(let registration):
            self.init(.registerPresenter(Filecoord_V1_RegisterPresenter(registration)))
        case .removePresenter(let presenter):
            self.init(.unregisterPresenter(Filecoord_V1_UnregisterPresenter(presenter: presenter)))
        case .presenterURLChanged(let presenter, let path):
            self.init(.presenterURLChanged(Filecoord_V1_PresenterURLChanged(presenter: presenter, path: path)))
        case .finishClaim(let claim, let created, let outcome):
            self.init(.finishClaim(Filecoord_V1_FinishClaim(claim: claim, created: created, outcome: outcome)))
        case .cancelCoordinator(let coordinator, _):
            self.init(.cancelCoordinator(Filecoord_V1_CancelCoordinator(coordinator: coordinator)))
        case .cancelClaim(let claim):
            self.init(.cancelClaim(Filecoord_V1_CancelClaim(claim: claim)))
        case .preparationReturned(let claim):
            var wire = Filecoord_V1_PreparationReturned()
            wire.claimID = claim.rawValue
            self.init(.preparationReturned(wire))
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
    /// itself (`startTimer`, `cancelTimer`, `log`, the watcher's).
    public init?(_ effect: ArbiterEffect) {
        switch effect {
        case .startTimer, .cancelTimer, .log, .watch, .unwatch, .leaseDropped, .fileWithOtherNamesWritten,
            .hostGateWanted, .hostGateDrained, .drainWatcher:
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
        case .watchAvailable(let presenter, _, let directory):
            var message = Filecoord_V1_WatchAvailable()
            message.presenterID = presenter.rawValue
            message.directory = encodePath(directory)
            self.init(.watchAvailable(message))
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
