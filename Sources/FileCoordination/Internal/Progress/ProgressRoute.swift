import FCCore
import FCProtocol
import Logging

/// Where a process's file progress frames go (issue 44): its daemon connection, or, when the process coordinates in
/// process, a board of its own (``ProgressCenter``), where its own publications and subscriptions meet.
enum ProgressRoute {
    case daemon(DaemonTransport)
    case local

    /// The connection's serial (``DaemonTransport/serial``, from 1); 0 for the process's own board.
    var serial: UInt64 {
        switch self {
        case .daemon(let transport): transport.serial
        case .local: 0
        }
    }
}

extension ProgressBoard {
    /// The only client of an in-process board: the process itself.
    private static let process = ClientID(1)

    /// What `frame`, sent by this process, makes the board tell it, as the daemon would tell it
    /// (docs/PROTOCOL.md §12). A frame the board refuses (which the center never sends) tells nothing.
    func news(for frame: Filecoord_V1_Frame) -> [ProgressNews] {
        let me = Self.process
        let deliveries: [Delivery]
        switch frame.payload {
        case .progressPublish(let message)?:
            guard let path = try? ItemPath(wire: message.path) else { return [] }
            deliveries = (try? publish(message.publicationID, at: path, state: message.state, by: me)) ?? []
        case .progressUpdate(let message)?:
            deliveries = update(message.publicationID, state: message.state, by: me)
        case .progressUnpublish(let message)?:
            deliveries = unpublish(message.publicationID, by: me)
        case .progressSubscribe(let message)?:
            guard let path = try? ItemPath(wire: message.path) else { return [] }
            deliveries = (try? subscribe(message.subscriptionID, at: path, by: me)) ?? []
        case .progressUnsubscribe(let message)?:
            unsubscribe(message.subscriptionID, by: me)
            deliveries = []
        case .progressControl(let message)?:
            deliveries = control(message.publicationID, message.action, by: me)
        default:
            deliveries = []
        }
        return deliveries.compactMap { delivery in
            switch delivery {
            case .appeared(_, let subscription, let publication, let path, let state):
                .appeared(
                    subscription: subscription,
                    publication: publication,
                    path: path,
                    state: ProgressSnapshot(wire: state)
                )
            case .changed(_, let publication, let state):
                .changed(publication: publication, ProgressSnapshot(wire: state))
            case .gone(_, let publication): .gone(publication: publication)
            case .control(_, let publication, let action):
                ProgressAction(wire: action).map { .control(publication: publication, $0) }
            }
        }
    }
}

extension ProgressCenter {
    /// A center whose frames go through `connection`, the client's (made there if needed).
    convenience init(ids: IDSource, connection: ConnectionManager, logger: @escaping @Sendable () -> Logger) {
        self.init(
            ids: ids,
            connect: { connection.transport() },
            current: { connection.current },
            logger: logger
        )
    }
}
