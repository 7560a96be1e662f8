// A small blocking Unix-socket client: Hello, DumpRequest, DumpReply. It only connects: it never starts a daemon.

import FCProtocol
import Foundation

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// Why the dump could not be had.
struct DumpError: Error, CustomStringConvertible {
    var description: String
}

/// At most this much dump is read (a daemon's dump is a few hundred bytes per presenter and claim).
let maximumDumpBytes = 1 << 30

/// Connects to `socketPath`, says hello as `fcdump`, and returns the JSON of one dump (its `DumpReply` frames put
/// together). Each read waits at most `timeoutSeconds`.
func fetchDump(socketPath: String, timeoutSeconds: Int = 5) throws(DumpError) -> [UInt8] {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw DumpError(description: "socket() failed: \(String(cString: strerror(errno)))") }
    defer { close(fd) }

    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let pathBytes = Array(socketPath.utf8)
    guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
        throw DumpError(description: "the socket path is too long: \(socketPath)")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: pathBytes)
        raw[pathBytes.count] = 0
    }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard connected == 0 else {
        let reason = String(cString: strerror(errno))
        throw DumpError(
            description: """
                no filecoordd is running on \(socketPath) (connect: \(reason)).
                Start one with `filecoordd` (add `--socket \(socketPath)` for a socket other than the default), or \
                run any program that uses FileCoordination, which starts it on demand. fcdump never starts a daemon.
                """
        )
    }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

    let encoder = FrameEncoder()
    do {
        var bytes: [UInt8] = []
        try encoder.encode(
            Filecoord_V1_Frame(.hello(Filecoord_V1_Hello(clientName: "fcdump", pid: getpid()))),
            into: &bytes
        )
        try encoder.encode(Filecoord_V1_Frame(.dumpRequest(Filecoord_V1_DumpRequest())), into: &bytes)
        try sendAll(fd, bytes)
    } catch let error as DumpError {
        throw error
    } catch {
        throw DumpError(description: "could not encode a request: \(error)")
    }

    var decoder = FrameDecoder(maximumFrameSize: Int(UInt32.max), accepting: .toClient)
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var json: [UInt8] = []
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 && errno == EINTR { continue }
        if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
            throw DumpError(
                description: "filecoordd on \(socketPath) did not answer within \(timeoutSeconds) s "
                    + "(\(json.isEmpty ? "no dump yet" : "\(json.count) bytes of the dump so far")); "
                    + "a daemon this busy may need a longer --timeout"
            )
        }
        if count < 0 {
            throw DumpError(description: "reading from \(socketPath) failed: \(String(cString: strerror(errno)))")
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
                throw DumpError(description: "filecoordd on \(socketPath) refused fcdump: \(refused.reason)")
            case .protocolError(let error)?:
                throw DumpError(description: "filecoordd on \(socketPath) reported a protocol error: \(error.reason)")
            default:
                continue  // HelloReply.
            }
        }
    }
}

private func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws(DumpError) {
    var sent = 0
    while sent < bytes.count {
        let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { throw DumpError(description: "sending failed: \(String(cString: strerror(errno)))") }
        sent += count
    }
}
