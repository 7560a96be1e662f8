// A small blocking Unix-socket client: Hello, DumpRequest, DumpReply. It only connects: it never starts a daemon.

import FCProtocol
import FCSystem
import Foundation
import SystemPackage

/// Why the dump could not be had.
struct DumpError: Error, CustomStringConvertible {
    var description: String
}

/// At most this much dump is read (a daemon's dump is a few hundred bytes per presenter and claim).
let maximumDumpBytes = 1 << 30

/// Connects to `socketPath`, says hello as `fcdump`, and returns the JSON of one dump (its `DumpReply` frames put
/// together). Each read waits at most `timeoutSeconds`.
func fetchDump(socketPath: String, timeoutSeconds: Int = 5) throws(DumpError) -> [UInt8] {
    let socket: UnixSocket
    do {
        // Only a daemon of this user's, in a folder of this user's, is asked (docs/SEMANTICS.md §12): nothing is
        // sent to anyone else.
        socket = try DaemonTrust.connect(to: socketPath)
    } catch {
        switch error {
        case .untrusted(let refusal):
            throw DumpError(description: refusal.description)
        case .unreachable(.fileNameTooLong):
            throw DumpError(
                description: "the socket path \(socketPath) is \(socketPath.utf8.count) bytes long: a Unix socket "
                    + "address holds \(UnixSocket.maximumAddressLength), and reaching it through its folder "
                    + "(/proc/self/fd) did not work either; use a shorter --socket"
            )
        case .unreachable(let error):
            throw DumpError(
                description: """
                    no filecoordd is running on \(socketPath) (connect: \(error)).
                    Start one with `filecoordd` (add `--socket \(socketPath)` for a socket other than the default), \
                    or run any program that uses FileCoordination, which starts it on demand. fcdump never starts a \
                    daemon.
                    """
            )
        }
    }
    try? socket.setTimeouts(.seconds(timeoutSeconds))

    let encoder = FrameEncoder()
    do {
        var bytes: [UInt8] = []
        try encoder.encode(
            Filecoord_V1_Frame(.hello(Filecoord_V1_Hello(clientName: "fcdump", pid: ProcessIdentity.processID))),
            into: &bytes
        )
        try encoder.encode(Filecoord_V1_Frame(.dumpRequest(Filecoord_V1_DumpRequest())), into: &bytes)
        try socket.send(bytes)
    } catch let error as Errno {
        throw DumpError(description: "sending failed: \(error)")
    } catch {
        throw DumpError(description: "could not encode a request: \(error)")
    }

    var decoder = FrameDecoder(maximumFrameSize: Int(UInt32.max), accepting: .toClient)
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var json: [UInt8] = []
    while true {
        let count: Int
        do {
            count = try socket.receive(into: &buffer)
        } catch .resourceTemporarilyUnavailable {
            throw DumpError(
                description: "filecoordd on \(socketPath) did not answer within \(timeoutSeconds) s "
                    + "(\(json.isEmpty ? "no dump yet" : "\(json.count) bytes of the dump so far")); "
                    + "is it stopped (SIGSTOP, a debugger, a frozen cgroup) or hung? A daemon merely this busy may "
                    + "need a longer --timeout"
            )
        } catch {
            throw DumpError(description: "reading from \(socketPath) failed: \(error)")
        }
        if count == 0 { throw DumpError(description: "filecoordd on \(socketPath) closed the connection") }
        let frames: [Filecoord_V1_Frame]
        do {
            frames = try decoder.feed(buffer[..<count])
        } catch {
            throw DumpError(description: "filecoordd on \(socketPath) sent a malformed frame: \(error)")
        }
        for frame in frames {
            switch frame.payload {
            case .dumpReply(let reply)?:
                json += reply.json
                guard json.count <= maximumDumpBytes else {
                    throw DumpError(
                        description: "filecoordd on \(socketPath) sent a dump over \(maximumDumpBytes) bytes"
                    )
                }
                if !reply.more { return json }
            case .refused(let refused)?:
                throw DumpError(
                    description: "filecoordd on \(socketPath) refused fcdump: \(refused.reason.escapedForTerminal)"
                )
            case .protocolError(let error)?:
                throw DumpError(
                    description:
                        "filecoordd on \(socketPath) reported a protocol error: \(error.reason.escapedForTerminal)"
                )
            default:
                continue  // HelloReply.
            }
        }
    }
}
