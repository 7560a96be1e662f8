import FCCore
import FCProtocol
import FCSystem
import FCToolkit
import Foundation
import Logging
import Synchronization
import SystemPackage

/// The connection to `filecoordd`: events go out as frames, frames come back as ``InboundMessage``s
/// (docs/ARCHITECTURE.md §8.1 and §9).
///
/// A blocking socket. The handshake happens in ``connect(socketPath:client:delegate:mayStart:handshakeTimeout:)``;
/// from then on `submitClaim(_:waiter:)` and `send(_:)` write frames from any thread, and whoever holds the *reader
/// role* reads frames and hands grants, failures, presenter messages and version replies to the delegate in the order
/// the daemon sent them. The role is the one way the connection is read, in every configuration
/// (docs/ARCHITECTURE.md §8.1):
///
/// - A caller blocked in a synchronous call reads its own reply on its own thread (``awaitOutcome(of:holdingRole:)``), handling
///   every frame on the way: the grant wakes the caller and nobody else, two wake-ups per round trip as for a bare
///   socket. Callers take turns; one whose reply another reader handled is woken by it.
/// - The *listener* thread takes the role only when it is free and data has arrived that no caller reads: while
///   frames may come unasked (lease grants and recalls, presenter messages, replies of `async` and intents claims
///   and of version calls). Otherwise it only watches for the connection's end (`poll` for a hang-up, which data
///   arriving does not wake), so that a daemon that dies while claims are held is noticed at once (issue 11).
///
/// - Important: Thread-safe. `reading` guards the role; `decoder` and `buffer` belong to the role's holder.
// @unchecked: `decoder` and `buffer` are touched only by the reader role's holder (one thread at a time, `reading`);
// `delegate` (a weak reference) is set only in `init`.
final class DaemonTransport: ArbiterTransport, ReplyReader, @unchecked Sendable {
    let socket: UnixSocket
    /// Serialises sends, so that frames sent from several threads never interleave.
    let sendLock = Locked(())
    let encoder = FrameEncoder()
    let client: ClientID
    /// This connection's number among the process's connections, never reused: the leases a connection's daemon
    /// granted are known by it (a lease id is the daemon's, and a later daemon numbers from 1 again).
    let serial = DaemonTransport.serials.add(1, ordering: .relaxed).newValue
    private static let serials = Atomic<UInt64>(0)
    weak var delegate: (any TransportDelegate)?
    /// Set once, by the first thread that sees the connection end.
    let lost = Atomic<Bool>(false)
    /// Where this connection logs: its client's logger.
    let logger: @Sendable () -> Logger
    /// The daemon's pid, from its `HelloReply`.
    let daemonPID: Int32
    /// The additions within the protocol version the daemon understands (`HelloReply.revision`): a message added
    /// within the version goes only to a daemon whose revision is at least the message's.
    let daemonRevision: UInt32
    /// Tells a daemon that is busy for a waiting call from one that stopped answering (issue 28).
    let keepalive: KeepaliveClock

    /// Who may read, and who waits to.
    struct ReadingState {
        /// A thread holds the reader role (it reads, or is about to).
        var readerBusy = false
        /// The listener waits for the role (it found it busy while data waited).
        var listenerParked = false
        /// Blocked callers that wait for their outcome or for the role, in arrival order.
        var parked: [ClaimWaiter] = []
        /// Presenters registered on this connection: their messages come unasked.
        var presenters: Set<PresenterID> = []
        /// Claims of calls that do not block a thread (`async`, intents): no caller reads their replies.
        var unattendedClaims: Set<ClaimID> = []
        /// Version store requests sent and not answered yet: the listener reads their replies.
        var versionRequests = 0
        /// This client publishes or subscribes to file progress on this connection (issue 44): subscribers' news and
        /// publishers' controls come unasked.
        var progress = false
        /// Since when ``unattendedClaims`` is not empty: the listener then watches the daemon's silence for them.
        var unattendedSince: ContinuousClock.Instant?
        /// The client may be granted leases (issue 23): their grants and recalls come unasked, and a recall must be
        /// answered while no call of this process waits (then the listener reads it).
        var answersRecalls = false
        /// The connection is gone.
        var closed = false
        /// Why, once the delegate heard it.
        var lostError: FileCoordinationError?

        /// Whether frames may come that no blocked caller asked for: then the listener reads data whenever the role
        /// is free, rather than only watching for the connection's end. Callers read their replies either way.
        var unaskedExpected: Bool {
            answersRecalls || !presenters.isEmpty || !unattendedClaims.isEmpty || versionRequests > 0 || progress
        }
    }
    let reading = Locked(ReadingState())
    /// `reading`'s `unattendedClaims.count`, stored under it at each change: a grant read for a caller that reads
    /// it itself (the common case) then finds no unattended claim to end without taking the lock.
    let unattendedCount = Atomic<Int>(0)
    /// Frames received and not yet handled. Only the reader role's holder touches it.
    var decoder: FrameDecoder
    /// The receive buffer, one for the connection's life. Only the reader role's holder touches it.
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
    /// Where the listener sleeps while the role is busy.
    let listenerWakeUp = DispatchSemaphore(value: 0)
    /// A byte sent here wakes the listener from `poll`, to read or stop reading data.
    let wakeSender: UnixSocket
    let wakeReceiver: UnixSocket

    init(
        socket: UnixSocket,
        decoder: FrameDecoder,
        wake: (UnixSocket, UnixSocket),
        client: ClientID,
        daemonPID: Int32,
        daemonRevision: UInt32,
        keepalive: KeepaliveClock,
        delegate: any TransportDelegate,
        logger: @escaping @Sendable () -> Logger
    ) {
        self.keepalive = keepalive
        self.logger = logger
        self.socket = socket
        self.decoder = decoder
        (self.wakeSender, self.wakeReceiver) = wake
        self.client = client
        self.daemonPID = daemonPID
        self.daemonRevision = daemonRevision
        self.delegate = delegate
    }

    deinit {
        buffer.deallocate()
    }

    /// Closes the connection; the listener ends and the delegate hears it.
    func close() {
        socket.shutdown()
    }

    /// `true` once the connection is gone.
    var isLost: Bool { lost.load(ordering: .acquiring) }
}
