import FCCore
import FCDumpModel
import FCProtocol
import NIOCore

// File progress through the daemon (issue 44; docs/PROTOCOL.md §12): the connection's progress frames go to the
// host's ``ProgressBoard`` in the daemon's paths, and what the board asks is sent, in the client's paths. Progress is
// not arbitration: it never waits for the arbiter's recovery or for the document portal, and an item's path is
// taken as the client sent it (a client in another mount namespace is translated; a document-portal path is not).

extension ArbiterHost {
    /// One progress frame from `client`.
    ///
    /// - Throws: ``ProtocolError`` for a frame the daemon cannot take (a bad path, an over-long string, an id reused
    ///   while live, more publications or subscriptions than one connection may have): the connection closes.
    func receiveProgress(
        _ payload: Filecoord_V1_Frame.OneOf_Payload,
        from client: ClientID,
        limits: ProtocolLimits
    )
        throws(ProtocolError)
    {
        loop.preconditionInEventLoop()
        let deliveries: [ProgressBoard.Delivery]
        do {
            switch payload {
            case .progressPublish(let message):
                try message.state.validate()
                let path = inDaemonPath(try ItemPath(wire: message.path, limits: limits), from: client)
                deliveries = try progress.publish(message.publicationID, at: path, state: message.state, by: client)
            case .progressUpdate(let message):
                try message.state.validate()
                deliveries = progress.update(message.publicationID, state: message.state, by: client)
            case .progressUnpublish(let message):
                deliveries = progress.unpublish(message.publicationID, by: client)
            case .progressSubscribe(let message):
                let path = inDaemonPath(try ItemPath(wire: message.path, limits: limits), from: client)
                deliveries = try progress.subscribe(message.subscriptionID, at: path, by: client)
            case .progressUnsubscribe(let message):
                progress.unsubscribe(message.subscriptionID, by: client)
                deliveries = []
            case .progressControl(let message):
                deliveries = progress.control(message.publicationID, message.action, by: client)
            default:
                return
            }
        } catch let refusal as ProgressBoard.Refusal {
            throw ProtocolError(.limitExceeded, "\(refusal)")
        } catch let error as ProtocolError {
            throw error
        } catch {
            throw ProtocolError(.invalidValue, "\(error)")
        }
        deliver(deliveries)
    }

    /// A client left: its publications end for their subscribers, and its subscriptions are dropped.
    func progressClientLeft(_ client: ClientID) {
        deliver(progress.disconnect(client))
    }

    private func inDaemonPath(_ path: ItemPath, from client: ClientID) -> ItemPath {
        connections.namespaces[client]?.toDaemon(path) ?? path
    }

    /// Sends what the board asked, each frame to its client, in order.
    func deliver(_ deliveries: [ProgressBoard.Delivery]) {
        for delivery in deliveries {
            switch delivery {
            case .appeared(let client, let subscription, let publication, let path, let state):
                let spelled = connections.namespaces[client]?.toClient(path) ?? path
                send(
                    .progressAppeared(
                        subscription: subscription,
                        publication: publication,
                        path: spelled,
                        state: state
                    ),
                    to: client
                )
            case .changed(let client, let publication, let state):
                var message = Filecoord_V1_ProgressChanged()
                message.publicationID = publication
                message.state = state
                send(Filecoord_V1_Frame(.progressChanged(message)), to: client)
            case .gone(let client, let publication):
                var message = Filecoord_V1_ProgressGone()
                message.publicationID = publication
                send(Filecoord_V1_Frame(.progressGone(message)), to: client)
            case .control(let client, let publication, let action):
                var message = Filecoord_V1_ProgressControlRequested()
                message.publicationID = publication
                message.action = action
                send(Filecoord_V1_Frame(.progressControlRequested(message)), to: client)
            }
        }
    }
}

extension ProgressBoard {
    /// Every item with file progress, for the dump (O(entries)).
    func dumpItems() -> [DaemonDump.ProgressItem] {
        items().map { item in
            DaemonDump.ProgressItem(
                path: item.path.escapedDescription,
                publishers: item.publications.map { id, entry in
                    DaemonDump.ProgressPublisher(
                        id: id,
                        client: entry.owner.rawValue,
                        completedUnitCount: entry.state.completedUnitCount,
                        totalUnitCount: entry.state.totalUnitCount,
                        fractionCompleted: entry.state.fractionCompleted,
                        fileOperationKind: entry.state.fileOperationKind,
                        cancelled: entry.state.cancelled,
                        paused: entry.state.paused
                    )
                },
                subscribers: item.subscribers.map(\.rawValue)
            )
        }
    }
}
