import FCCore
import FCFileSystemPolicy
import FCProtocol
import FCSystem
import Foundation
import Logging
import Synchronization
import SystemPackage

// Reaching and greeting the daemon: the connection a ``DaemonTransport`` starts from.

extension DaemonTransport {
    /// One attempt: connects to the daemon at the policy's socket (starting it first if nothing answers, `mayStart`
    /// is set and the policy allows it), says hello within the policy's handshake timeout, and starts the listener
    /// thread. The transport logs through `logger`.
    static func connect(
        policy: ConnectionPolicy,
        mayStart: Bool,
        client: ClientID,
        delegate: any TransportDelegate,
        logger: @escaping @Sendable () -> Logger
    ) -> Result<DaemonTransport, ConnectFailure> {
        let socketPath = policy.socketPath
        let handshakeTimeout = policy.handshakeTimeout
        let socket: UnixSocket
        switch DaemonLauncher.connectOrStart(socketPath: socketPath, mayStart: mayStart && policy.mayStartDaemon) {
        case .failure(let failure): return .failure(failure)
        case .success(let connected): socket = connected
        }
        var hello = Filecoord_V1_Hello()
        hello.protocolVersion = ProtocolVersion.current
        hello.clientName = ProcessInfo.processInfo.processName
        hello.pid = ProcessInfo.processInfo.processIdentifier
        hello.answersRecalls = policy.answersRecalls
        hello.pathRules = PathRules.revision
        var decoder = FrameDecoder(accepting: .toClient)
        do {
            // A daemon that accepted but does not answer (stopped, or not a daemon at all) must not hold the call.
            try socket.setTimeouts(handshakeTimeout)
            try socket.send(try FrameEncoder().encode(Filecoord_V1_Frame(.hello(hello))))
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
            defer { buffer.deallocate() }
            while true {
                let count = try socket.receive(into: buffer)
                guard count > 0 else {
                    return .failure(
                        .transient("filecoordd at \(socketPath) closed the connection during the handshake")
                    )
                }
                decoder.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                guard let frame = try decoder.next() else { continue }
                switch frame.payload {
                case .helloReply(let reply)?:
                    try socket.setTimeouts(nil)
                    let clock = KeepaliveClock(
                        policy: policy.keepalive,
                        enabled: reply.revision >= ProtocolVersion.keepaliveRevision
                    )
                    // A blocked reader wakes this often to look at the daemon's silence (sends never time out).
                    if clock.enabled { try socket.setReceiveTimeout(policy.keepalive.checkEvery) }
                    let wake = try UnixSocket.pair()
                    try wake.0.setNonBlocking(true)
                    let transport = DaemonTransport(
                        socket: socket,
                        decoder: decoder,
                        wake: wake,
                        client: client,
                        daemonPID: reply.daemonPid,
                        daemonRevision: reply.revision,
                        keepalive: clock,
                        delegate: delegate,
                        logger: logger
                    )
                    if policy.answersRecalls { transport.updateReading { $0.answersRecalls = true } }
                    transport.startListening()
                    return .success(transport)
                case .refused(let refused)?:
                    return .failure(.unreachable(FileCoordinationError(.protocolVersionMismatch, refused.reason)))
                default:
                    return .failure(
                        .transient("filecoordd at \(socketPath) answered the handshake with something else")
                    )
                }
            }
        } catch let failure as Errno where failure == .resourceTemporarilyUnavailable {
            return .failure(
                .transient(
                    "filecoordd at \(socketPath) accepted but did not answer the handshake within \(handshakeTimeout)"
                )
            )
        } catch {
            return .failure(.transient("the handshake with filecoordd at \(socketPath) failed: \(error)"))
        }
    }
}
