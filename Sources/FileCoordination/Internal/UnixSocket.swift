import Foundation

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// A connected Unix stream socket used with blocking calls: one reader thread reads, any thread writes (writes are
/// serialised by a lock so that frames never interleave).
///
/// - Important: Thread-safe for one reader and many writers. ``close()`` may be called from any thread and wakes
///   a blocked reader.
final class UnixSocket: @unchecked Sendable {
    /// Why a socket call failed.
    struct Failure: Error, CustomStringConvertible {
        /// The `errno` value.
        var code: Int32
        /// The call that failed.
        var call: String
        var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    private let descriptor: Int32
    private let writeLock = NSLock()

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Connects to the socket at `path`.
    static func connect(to path: String) throws(Failure) -> UnixSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(code: errno, call: "socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            Glibc.close(fd)
            throw Failure(code: ENAMETOOLONG, call: "connect")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                Glibc.connect(fd, sockaddrPointer, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw Failure(code: code, call: "connect")
        }
        return UnixSocket(descriptor: fd)
    }

    /// Writes all of `bytes`, or throws.
    func write(_ bytes: [UInt8]) throws(Failure) {
        writeLock.lock()
        defer { writeLock.unlock() }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(code: errno, call: "send")
            }
            offset += written
        }
    }

    /// Reads what is available, blocking until something is. Returns an empty array at end of stream.
    func read(maximum: Int = 64 * 1024) throws(Failure) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximum)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, maximum, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(code: errno, call: "recv")
            }
            return Array(buffer.prefix(count))
        }
    }

    /// Bounds how long a read or a write may block (`SO_RCVTIMEO`, `SO_SNDTIMEO`); `nil` waits as long as it takes.
    /// A read or write that times out throws `EAGAIN`.
    func setTimeout(_ timeout: Duration?) throws(Failure) {
        var value = timeval()
        if let timeout {
            let (seconds, attoseconds) = timeout.components
            value.tv_sec = Int(seconds)
            value.tv_usec = Int(attoseconds / 1_000_000_000_000)
            if value.tv_sec == 0 && value.tv_usec == 0 { value.tv_usec = 1 }
        }
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
            let result = setsockopt(descriptor, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
            if result != 0 { throw Failure(code: errno, call: "setsockopt") }
        }
    }

    /// Shuts the connection down both ways; a blocked ``read(maximum:)`` returns end of stream.
    func shutdownBoth() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
    }

    deinit {
        Glibc.close(descriptor)
    }
}
