import FCCore
import NIOCore

/// The daemon's connections: each connected client's channel and what was read about it when it connected, the ones
/// the daemon is closing itself, and the count of connections open (handshakes included, against
/// ``DaemonConfiguration/maximumConnections``).
///
/// A value owned by ``ArbiterHost``: everything runs on the arbiter's event loop (the host asserts it with
/// `preconditionInEventLoop` in the methods that use this registry); not `Sendable`.
struct ConnectionRegistry {
    /// Most connections open at once.
    let maximumConnections: Int
    /// Each connected client's channel.
    private var channels: [ClientID: any Channel] = [:]
    /// Connections being closed by the daemon: nothing more is sent to them.
    private var closing: Set<ClientID> = []
    /// Connections open now, those still in their handshake included.
    private(set) var openConnections = 0
    /// Each connected client's command line, read once when it connected (for the dump).
    private(set) var arguments: [ClientID: [String]] = [:]
    /// The path translation of each client in another mount namespace than the daemon's (issue 26).
    private(set) var namespaces: [ClientID: MountNamespaceTranslation] = [:]
    /// The clients that leave the case folding of their paths to the daemon (`Hello.daemon_folds_names`).
    private var foldingClients: Set<ClientID> = []
    /// Each connected client's claims that failed `TIMED_OUT` (for the dump: a preload client lets its program's
    /// call through uncoordinated after each, Languages/preload/README.md).
    private(set) var timedOutClaims: [ClientID: Int] = [:]

    init(maximumConnections: Int) {
        self.maximumConnections = maximumConnections
    }

    /// Counts a new connection; `false` when as many as ``maximumConnections`` are open.
    mutating func opened() -> Bool {
        guard openConnections < maximumConnections else { return false }
        openConnections += 1
        return true
    }

    /// Counts a connection that closed (one ``opened()`` accepted).
    mutating func closedOne() {
        openConnections -= 1
    }

    /// Records a client that finished its handshake.
    mutating func add(
        _ channel: any Channel,
        for client: ClientID,
        arguments: [String],
        namespace: MountNamespaceTranslation?,
        foldsNames: Bool = false
    ) {
        channels[client] = channel
        self.arguments[client] = arguments
        namespaces[client] = namespace
        if foldsNames { foldingClients.insert(client) }
    }

    /// Whether `client` leaves the case folding of its paths to the daemon.
    func foldsNames(_ client: ClientID) -> Bool { foldingClients.contains(client) }

    /// Whether any connected client leaves the case folding of its paths to the daemon.
    var anyFoldsNames: Bool { !foldingClients.isEmpty }

    /// The channel of a connected client, closing or not.
    subscript(client: ClientID) -> (any Channel)? { channels[client] }

    /// The channel of a connected client that frames may still be sent to: `nil` once the daemon closes it.
    func reachable(_ client: ClientID) -> (any Channel)? {
        closing.contains(client) ? nil : channels[client]
    }

    /// Every connected client's channel.
    var allChannels: Dictionary<ClientID, any Channel>.Values { channels.values }

    /// Every connected client, with its channel.
    var all: [ClientID: any Channel] { channels }

    /// Marks a connected client's connection as closed by the daemon; its channel the first time only, `nil` after
    /// (or for a client not connected).
    mutating func startClosing(_ client: ClientID) -> (any Channel)? {
        guard let channel = channels[client], closing.insert(client).inserted else { return nil }
        return channel
    }

    /// Counts a claim of `client` that failed `TIMED_OUT`.
    mutating func countTimedOutClaim(of client: ClientID) {
        timedOutClaims[client, default: 0] += 1
    }

    /// Forgets a client whose connection closed, once: `nil` when it was not connected (or already forgotten),
    /// else whether the daemon had closed it itself (``startClosing(_:)``).
    mutating func forget(_ client: ClientID) -> Bool? {
        guard channels.removeValue(forKey: client) != nil else { return nil }
        let closedByDaemon = closing.remove(client) != nil
        arguments[client] = nil
        namespaces[client] = nil
        foldingClients.remove(client)
        timedOutClaims[client] = nil
        return closedByDaemon
    }
}
