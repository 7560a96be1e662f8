import FCCore
import FCProtocol
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The connection to `filecoordd`: events go out as frames, frames come back as effects (DESIGN.md decisions 2–4).
///
/// A blocking socket with one reader thread. The handshake happens in ``connect(socketPath:delegate:)``; from then
/// on `submit(_:)` writes frames from any thread and the reader thread hands grants, failures and presenter messages
/// to the delegate in the order the daemon sent them. When the connection drops, the delegate hears
/// ``TransportDelegate/transportLost(_:)`` once; the transport is not used again.
///
/// - Important: Thread-safe.
final class DaemonTransport: ArbiterTransport, @unchecked Sendable {
    private let socket: UnixSocket
    private let encoder = FrameEncoder()
    private let client: ClientID
    private weak var delegate: (any TransportDelegate)?
    private let lock = NSLock()
    private var lost = false
    /// The daemon's pid, from its `HelloReply`.
    let daemonPID: Int32

    private init(socket: UnixSocket, client: ClientID, daemonPID: Int32, delegate: any TransportDelegate) {
        self.socket = socket
        self.client = client
        self.daemonPID = daemonPID
        self.delegate = delegate
    }

    /// Why ``connect(socketPath:client:delegate:mayStart:handshakeTimeout:)`` got no connection.
    enum ConnectFailure: Error {
        /// Nothing answers and there is no daemon to start (in-process coordination may be right).
        case noDaemon(String)
        /// Worth trying again: refused, reset or closed during the handshake, no answer in time (a daemon that is
        /// starting, stopping, restarting or stopped).
        case transient(String)
        /// Trying again will not help: the daemon refused this protocol version.
        case permanent(FileCoordinationError)
    }

    /// Connects (starting the daemon if needed and `mayStart` is set), says hello within `handshakeTimeout`, and
    /// starts the reader thread.
    static func connect(
        socketPath: String,
        client: ClientID,
        delegate: any TransportDelegate,
        mayStart: Bool = true,
        handshakeTimeout: Duration = .seconds(2)
    ) -> Result<DaemonTransport, ConnectFailure> {
        let socket: UnixSocket
        switch DaemonLauncher.connectOrStart(socketPath: socketPath, mayStart: mayStart) {
        case .failure(.noDaemon(let message)): return .failure(.noDaemon(message))
        case .failure(.failed(let message)): return .failure(.transient(message))
        case .success(let connected): socket = connected
        }
        var hello = Filecoord_V1_Hello()
        hello.protocolVersion = ProtocolVersion.current
        hello.clientName = ProcessInfo.processInfo.processName
        hello.pid = ProcessInfo.processInfo.processIdentifier
        var decoder = FrameDecoder(accepting: .toClient)
        do {
            // A daemon that accepted but does not answer (stopped, or not a daemon at all) must not hold the call.
            try socket.setTimeout(handshakeTimeout)
            try socket.write(try FrameEncoder().encode(Filecoord_V1_Frame(.hello(hello))))
            while true {
                let bytes = try socket.read()
                guard !bytes.isEmpty else {
                    return .failure(
                        .transient("filecoordd at \(socketPath) closed the connection during the handshake")
                    )
                }
                decoder.append(bytes)
                guard let frame = try decoder.next() else { continue }
                switch frame.payload {
                case .helloReply(let reply)?:
                    try socket.setTimeout(nil)
                    let transport = DaemonTransport(
                        socket: socket,
                        client: client,
                        daemonPID: reply.daemonPid,
                        delegate: delegate
                    )
                    transport.startReading(decoder)
                    return .success(transport)
                case .refused(let refused)?:
                    return .failure(.permanent(FileCoordinationError(.protocolVersionMismatch, refused.reason)))
                default:
                    return .failure(
                        .transient("filecoordd at \(socketPath) answered the handshake with something else")
                    )
                }
            }
        } catch let failure as UnixSocket.Failure where failure.code == EAGAIN || failure.code == EWOULDBLOCK {
            return .failure(
                .transient(
                    "filecoordd at \(socketPath) accepted but did not answer the handshake within \(handshakeTimeout)"
                )
            )
        } catch {
            return .failure(.transient("the handshake with filecoordd at \(socketPath) failed: \(error)"))
        }
    }

    func submit(_ event: ArbiterEvent) {
        guard let frame = Filecoord_V1_Frame(event) else { return }
        do {
            try socket.write(try encoder.encode(frame))
        } catch {
            connectionLost("writing to filecoordd failed: \(error)")
        }
    }

    /// Sends one frame that is no arbiter event (a version store request); throws if the connection is gone.
    func send(_ frame: Filecoord_V1_Frame) throws {
        try socket.write(try encoder.encode(frame))
    }

    /// Closes the connection; the reader thread ends and the delegate hears it.
    func close() {
        socket.shutdownBoth()
    }

    private func startReading(_ initial: FrameDecoder) {
        let thread = Thread { [self] in readLoop(initial) }
        thread.name = "FileCoordination.reader"
        thread.start()
    }

    private func readLoop(_ initial: FrameDecoder) {
        var decoder = initial
        while true {
            do {
                while let frame = try decoder.next() { handle(frame) }
                let bytes = try socket.read()
                guard !bytes.isEmpty else {
                    connectionLost("filecoordd closed the connection")
                    return
                }
                decoder.append(bytes)
            } catch {
                connectionLost("the connection to filecoordd failed: \(error)")
                return
            }
        }
    }

    private func handle(_ frame: Filecoord_V1_Frame) {
        guard let delegate else { return }
        switch frame.payload {
        case .granted(let granted)?:
            guard let paths = try? granted.itemPaths() else { return }
            delegate.perform([.grant(ClaimID(granted.claimID), client: client, paths: paths)])
        case .claimFailed(let failed)?:
            let claim = ClaimID(failed.claimID)
            guard let reason = try? ClaimFailedReason(wire: failed) else {
                delegate.fail(claim, with: FileCoordinationError(.invalidRequest, failed.message))
                return
            }
            switch reason {
            case .deadlock(let message):
                delegate.fail(claim, with: FileCoordinationError(.deadlock, message))
            case .timedOut(let message):
                delegate.fail(claim, with: FileCoordinationError(.timedOut, message))
            case .shuttingDown(let message):
                delegate.fail(claim, with: FileCoordinationError(.connectionLost, message))
            case .limitExceeded(let message):
                delegate.fail(claim, with: FileCoordinationError(.invalidRequest, message))
            case .cancelled, .presenterError, .invalidRequest:
                if let failure = reason.claimFailure {
                    delegate.perform([.fail(claim, client: client, failure)])
                } else if case .presenterError(let error, _) = reason {
                    delegate.perform([.fail(claim, client: client, .presenterError(error, presenter: PresenterID(0)))])
                }
            }
        case .presenterMessage(let wire)?:
            guard let message = try? PresenterMessage(wire: wire, client: client) else { return }
            delegate.perform([.message(message)])
        case .versionStoreReply(let reply)?:
            VersionRequestTable.shared.complete(reply)
        case .protocolError(let error)?:
            FileCoordinationLogging.logger.error("filecoordd closed the connection: \(error.reason)")
        default:
            break
        }
    }

    /// `true` once the connection is gone.
    var isLost: Bool { lock.withLock { lost } }

    private func connectionLost(_ reason: String) {
        let first = lock.withLock {
            defer { lost = true }
            return !lost
        }
        guard first else { return }
        socket.shutdownBoth()
        VersionRequestTable.shared.transportLost(self)
        delegate?.transportLost(
            FileCoordinationError(
                .connectionLost,
                "The connection to filecoordd was lost (\(reason)); the call failed instead of waiting. The next call reconnects."
            ),
            from: self
        )
    }
}

/// Who a transport reports to.
protocol TransportDelegate: AnyObject, Sendable {
    /// Grants, failures the arbiter decided, and presenter messages, in order.
    func perform(_ effects: [ArbiterEffect])
    /// A failure the daemon decided itself (deadlock, shutdown, limit), already as the caller's error.
    func fail(_ claim: ClaimID, with error: any Error)
    /// The connection `transport` is gone: if it was the one in use, every waiting call must fail, and the next
    /// call reconnects.
    func transportLost(_ error: FileCoordinationError, from transport: DaemonTransport)
}
