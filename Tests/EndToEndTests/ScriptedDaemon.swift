import FCProtocol
import FCSystem
import Foundation
import SystemPackage

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// A daemon played by the test, frame by frame, for disagreements a real daemon cannot be brought to (a claim handed
/// back into a lease the client does not hold).
///
/// Its own thread accepts clients one after another and, with blocking reads, answers each `Hello` as a daemon of
/// this build would and each `Ping` with its `Pong` at once, however busy the test's tasks are (a client that waits
/// more than 2 s for its `HelloReply` gives up and connects again). Every other frame is kept for the test, which
/// reads them with ``next(timeout:)`` and answers with ``send(_:)`` on the client connected last.
///
/// Every `do` that catches one `Errno` also catches the rest: Swift 6.3's mandatory SIL passes never finished
/// compiling this file while a typed catch was left non-exhaustive.
///
/// - Important: Thread-safe: `state` guards what the thread and the test share.
final class ScriptedDaemon: @unchecked Sendable {
    private struct State {
        var client: UnixSocket?
        var connections = 0
        var unread: [Filecoord_V1_Frame] = []
        var received: [Filecoord_V1_Frame] = []
        var stopped = false
    }
    private let listener: UnixSocket
    private let state = NSLock()
    private var shared = State()

    init(path: String) throws {
        do {
            listener = try UnixSocket.listen(at: path, backlog: 8)
        } catch {
            throw HarnessError(description: "bind/listen \(path): \(error)")
        }
        let thread = Thread { [self] in serve() }
        thread.name = "scripted daemon"
        thread.start()
    }

    /// How many clients connected so far.
    var connections: Int { state.withLock { shared.connections } }
    /// Every frame the clients sent, in order (hellos and pings included).
    var received: [Filecoord_V1_Frame] { state.withLock { shared.received } }
    /// Every `Hello` the clients sent, in order.
    var hellos: [Filecoord_V1_Hello] {
        received.compactMap { frame in
            if case .hello(let hello)? = frame.payload { hello } else { nil }
        }
    }

    /// Sends one frame to the client connected last.
    func send(_ frame: Filecoord_V1_Frame) throws {
        guard let client = state.withLock({ shared.client }) else { throw HarnessError(description: "no client") }
        try Self.write(frame, to: client)
    }

    /// The next frame a client sent other than `Hello` and `Ping`.
    func next(timeout: Duration = defaultTimeout) async throws -> Filecoord_V1_Frame {
        let deadline = ContinuousClock.now + timeout
        while true {
            let frame = state.withLock { shared.unread.isEmpty ? nil : shared.unread.removeFirst() }
            if let frame { return frame }
            if ContinuousClock.now >= deadline {
                throw HarnessError(description: "no frame from the client within \(timeout); had \(received)")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Stops accepting and closes the client's connection; the thread ends.
    func stop() {
        let client = state.withLock {
            shared.stopped = true
            return shared.client
        }
        client?.shutdown()
        listener.shutdown()
    }

    // MARK: The thread

    private func serve() {
        while let client = try? listener.accept() {
            let stopped = state.withLock {
                shared.client = client
                shared.connections += 1
                return shared.stopped
            }
            if stopped { return }
            read(client)
        }
    }

    /// Reads one client until it closes.
    private func read(_ client: UnixSocket) {
        var decoder = FrameDecoder(accepting: .toDaemon)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count: Int
            do {
                count = try client.receive(into: &buffer)
            } catch {
                return
            }
            if count == 0 { return }
            decoder.append(buffer[0..<count])
            do {
                while let frame = try decoder.next() {
                    state.withLock { shared.received.append(frame) }
                    try answer(frame, on: client)
                }
            } catch {
                client.shutdown()
                return
            }
        }
    }

    /// Answers a `Hello` or a `Ping` on the thread; keeps any other frame for the test.
    private func answer(_ frame: Filecoord_V1_Frame, on client: UnixSocket) throws {
        switch frame.payload {
        case .hello(let hello)?:
            var reply = Filecoord_V1_HelloReply()
            reply.protocolVersion = hello.protocolVersion
            reply.daemonPid = ProcessIdentity.processID
            reply.revision = ProtocolVersion.revision
            try Self.write(Filecoord_V1_Frame(.helloReply(reply)), to: client)
        case .ping(let ping)?:
            var pong = Filecoord_V1_Pong()
            pong.nonce = ping.nonce
            try Self.write(Filecoord_V1_Frame(.pong(pong)), to: client)
        default:
            state.withLock { shared.unread.append(frame) }
        }
    }

    private static func write(_ frame: Filecoord_V1_Frame, to client: UnixSocket) throws {
        let bytes: [UInt8] = try FrameEncoder().encode(frame)
        var written = 0
        while written < bytes.count {
            do {
                let count: Int = try client.sendSome(bytes[written...])
                written += count
            } catch {
                throw HarnessError(description: "send to the client: \(error)")
            }
        }
    }
}
