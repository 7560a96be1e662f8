import CFCLinux
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A Unix stream socket that owns its descriptor: the one socket type of the package (the library's connection to
/// `filecoordd`, `fcdump`, fc-load, the tests' raw clients and listeners, the benchmarks' bare round trips).
///
/// Every call is a thin wrapper in swift-system's style: it retries after `EINTR` in one place
/// (``retryOnInterrupt(_:)``), throws the `Errno` it failed with, and uses the C names (`SO_PEERCRED` and
/// `struct ucred` through CFCLinux). The descriptor is created close-on-exec and closed exactly once, when the
/// object goes away, so no other descriptor that reuses its number can be closed by mistake.
///
/// - Important: Thread-safe in the kernel's sense: one thread may receive while others send, and ``shutdown()`` from
///   any thread wakes a thread blocked in ``receive(into:)``. Sends from several threads may interleave: callers
///   that send frames from several threads serialise their sends themselves.
public final class UnixSocket: Sendable {
    /// The descriptor, for `poll` and the like. It stays owned by this object: never close it.
    public let descriptor: FileDescriptor

    private init(descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    deinit {
        _ = libcClose(descriptor.rawValue)
    }

    /// The raw descriptor number.
    public var rawValue: Int32 { descriptor.rawValue }

    // MARK: Opening

    /// A new socket connected to the socket file at `path`.
    ///
    /// - Throws: `Errno.fileNameTooLong` for a path longer than `sun_path` holds; the `Errno` of `socket` or
    ///   `connect` otherwise (`ENOENT`: no socket file; `ECONNREFUSED`: nothing listens).
    ///
    /// A path longer than a socket address holds is reached through its folder (``withAddressablePath(_:_:)``).
    public static func connect(to path: String) throws(Errno) -> UnixSocket {
        try withAddressablePath(path) { (path) throws(Errno) in try connectDirectly(to: path) }
    }

    private static func connectDirectly(to path: String) throws(Errno) -> UnixSocket {
        var address = try Self.address(path)
        let socket = try open()
        // connect is not restarted after EINTR (a retry fails with EALREADY while the first attempt proceeds).
        _ = try valueOrErrno {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    libcConnect(socket.rawValue, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        return socket
    }

    /// A new socket bound at `path` and listening with `backlog`. A path longer than a socket address holds is
    /// reached through its folder (``withAddressablePath(_:_:)``).
    public static func listen(at path: String, backlog: Int32 = 64) throws(Errno) -> UnixSocket {
        try withAddressablePath(path) { (path) throws(Errno) in try listenDirectly(at: path, backlog: backlog) }
    }

    /// The longest path a socket address holds (`sun_path` less its terminating NUL): 107 bytes on Linux.
    public static let maximumAddressLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Runs `body` with a spelling of `path` that fits in a socket address (``AddressablePath``), kept valid for
    /// the call.
    public static func withAddressablePath<T>(
        _ path: String,
        _ body: (String) throws(Errno) -> T
    ) throws(Errno) -> T {
        let addressable = try AddressablePath(path)
        defer { addressable.close() }
        return try body(addressable.spelling)
    }

    private static func listenDirectly(at path: String, backlog: Int32) throws(Errno) -> UnixSocket {
        var address = try Self.address(path)
        let socket = try open()
        _ = try valueOrErrno {
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    libcBind(socket.rawValue, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        }
        _ = try valueOrErrno { libcListen(socket.rawValue, backlog) }
        return socket
    }

    /// Accepts one connection on a listening socket, blocking until one comes (or ``shutdown()`` stops it, which
    /// throws `EINVAL`). The new socket is close-on-exec.
    public func accept() throws(Errno) -> UnixSocket {
        let fd = try retryOnInterrupt { cfc_accept_cloexec(rawValue) }
        return UnixSocket(descriptor: FileDescriptor(rawValue: fd))
    }

    /// Two sockets connected to each other (`socketpair`), both close-on-exec: a wake-up channel between threads.
    public static func pair() throws(Errno) -> (UnixSocket, UnixSocket) {
        var fds: [Int32] = [-1, -1]
        _ = try valueOrErrno {
            socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        }
        return (
            UnixSocket(descriptor: FileDescriptor(rawValue: fds[0])),
            UnixSocket(descriptor: FileDescriptor(rawValue: fds[1]))
        )
    }

    private static func open() throws(Errno) -> UnixSocket {
        let fd = try valueOrErrno {
            libcSocket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        return UnixSocket(descriptor: FileDescriptor(rawValue: fd))
    }

    /// The `sockaddr_un` of `path`.
    private static func address(_ path: String) throws(Errno) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        var utf8 = path.utf8.makeIterator()
        var tooLong = false
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            var index = 0
            while let byte = utf8.next() {
                guard index < capacity - 1 else {
                    tooLong = true
                    return
                }
                buffer[index] = byte
                index += 1
            }
            buffer[index] = 0
        }
        if tooLong { throw Errno.fileNameTooLong }
        return address
    }

    // MARK: Sending and receiving

    /// Sends all of `bytes` (`MSG_NOSIGNAL`: a closed peer is `EPIPE`, never `SIGPIPE`). On a non-blocking socket a
    /// full buffer throws `EAGAIN` after part of the bytes may have gone.
    public func send(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            let sent = try retryOnInterrupt {
                libcSend(rawValue, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            offset += sent
        }
    }

    /// Sends what the socket's buffer takes of `bytes` (one `send`); returns how many bytes went. On a non-blocking
    /// socket whose buffer is full, throws `EAGAIN`.
    public func sendSome(_ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        try retryOnInterrupt { libcSend(rawValue, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Sends all of `bytes`.
    public func send(_ bytes: [UInt8]) throws(Errno) {
        _ = try sendSomeOrAll(bytes[...], all: true)
    }

    /// Sends what the socket's buffer takes of `bytes` (one `send`); returns how many bytes went.
    public func sendSome(_ bytes: ArraySlice<UInt8>) throws(Errno) -> Int {
        try sendSomeOrAll(bytes, all: false)
    }

    private func sendSomeOrAll(_ bytes: ArraySlice<UInt8>, all: Bool) throws(Errno) -> Int {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(Errno) -> Int in
                if all {
                    try send(buffer)
                    return buffer.count
                }
                return try sendSome(buffer)
            }
        }
        return try result.get()
    }

    /// Receives what is available into `buffer` (from its start, up to its count); returns the count, 0 at end of
    /// stream.
    public func receive(into buffer: inout [UInt8]) throws(Errno) -> Int {
        let result = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(Errno) -> Int in try receive(into: raw) }
        }
        return try result.get()
    }

    /// Receives what is available into `buffer`, blocking until something is (on a blocking socket); returns the
    /// count, 0 at end of stream. A timeout (``setTimeouts(_:)``) or an empty non-blocking socket throws `EAGAIN`.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retryOnInterrupt { libcReceive(rawValue, buffer.baseAddress, buffer.count, 0) }
    }

    /// Receives what is available into `buffer` without blocking (`MSG_DONTWAIT`), whatever the socket's mode;
    /// returns the count, 0 at end of stream; throws `EAGAIN` when nothing is available.
    public func receiveAvailable(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retryOnInterrupt { libcReceive(rawValue, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT)) }
    }

    /// Fills `buffer` completely; `false` if the stream ended first.
    public func receiveExactly(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Bool {
        var offset = 0
        while offset < buffer.count {
            let count = try retryOnInterrupt {
                libcReceive(rawValue, buffer.baseAddress! + offset, buffer.count - offset, 0)
            }
            if count == 0 { return false }
            offset += count
        }
        return true
    }

    /// Waits until the socket is readable (data, end of stream, an error or a pending connection), for at most
    /// `timeout` (`nil`: as long as it takes); returns whether it is.
    public func waitUntilReadable(timeout: Duration?) throws(Errno) -> Bool {
        try wait(for: Int16(POLLIN), timeout: timeout)
    }

    /// Waits until the socket's buffer takes more bytes (or the connection failed), for at most `timeout` (`nil`: as
    /// long as it takes); returns whether it does.
    public func waitUntilWritable(timeout: Duration?) throws(Errno) -> Bool {
        try wait(for: Int16(POLLOUT), timeout: timeout)
    }

    private func wait(for events: Int16, timeout: Duration?) throws(Errno) -> Bool {
        var entry = pollfd(fd: rawValue, events: events, revents: 0)
        let milliseconds = Self.milliseconds(timeout)
        return try retryOnInterrupt { libcPoll(&entry, 1, milliseconds) } > 0
    }

    /// What `poll` waits for, and reports.
    public struct PollEvents: OptionSet, Sendable, Hashable {
        public let rawValue: Int16
        public init(rawValue: Int16) { self.rawValue = rawValue }
        /// Data, end of stream or a pending connection (`POLLIN`).
        public static let readable = PollEvents(rawValue: Int16(POLLIN))
        /// Room in the send buffer (`POLLOUT`).
        public static let writable = PollEvents(rawValue: Int16(POLLOUT))
        /// Both directions shut down, by either side or because the peer is gone (`POLLHUP`; always reported).
        public static let hangUp = PollEvents(rawValue: Int16(POLLHUP))
        /// An error is pending (`POLLERR`; always reported).
        public static let error = PollEvents(rawValue: Int16(POLLERR))
    }

    /// Waits until one of `sockets` has one of its events (or a hang-up or error, which are always reported), for
    /// at most `timeout` (`nil`: as long as it takes); returns what each reported, in order. Waiting for no event
    /// (`[]`) on a socket watches it for a hang-up only: data arriving on it does not wake the caller.
    public static func poll(
        _ sockets: [(UnixSocket, PollEvents)],
        timeout: Duration?
    ) throws(Errno) -> [PollEvents] {
        var entries = sockets.map { pollfd(fd: $0.0.rawValue, events: $0.1.rawValue, revents: 0) }
        let count = nfds_t(entries.count)
        let milliseconds = Self.milliseconds(timeout)
        _ = try retryOnInterrupt { libcPoll(&entries, count, milliseconds) }
        return entries.map { PollEvents(rawValue: $0.revents) }
    }

    private static func milliseconds(_ timeout: Duration?) -> Int32 {
        guard let timeout else { return -1 }
        let (seconds, attoseconds) = timeout.components
        return Int32(clamping: max(0, seconds) * 1000 + max(0, attoseconds) / 1_000_000_000_000_000)
    }

    // MARK: Options

    /// Bounds how long one send or receive may block (`SO_SNDTIMEO`, `SO_RCVTIMEO`); `nil` blocks as long as it
    /// takes. A call that times out throws `EAGAIN`.
    public func setTimeouts(_ timeout: Duration?) throws(Errno) {
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] { try setTimeout(option, timeout) }
    }

    /// Makes a blocking receive return `EAGAIN` after `timeout` without data (`SO_RCVTIMEO`; sends are not
    /// affected), or wait for ever with `nil`.
    public func setReceiveTimeout(_ timeout: Duration?) throws(Errno) {
        try setTimeout(SO_RCVTIMEO, timeout)
    }

    /// Sets `SO_RCVTIMEO` or `SO_SNDTIMEO` to `timeout` (at least 1 µs, since 0 means for ever), or to for ever.
    private func setTimeout(_ option: Int32, _ timeout: Duration?) throws(Errno) {
        var value = timeval()
        if let timeout {
            let (seconds, attoseconds) = timeout.components
            value.tv_sec = Int(seconds)
            value.tv_usec = Int(attoseconds / 1_000_000_000_000)
            if value.tv_sec == 0 && value.tv_usec == 0 { value.tv_usec = 1 }
        }
        _ = try valueOrErrno {
            setsockopt(rawValue, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    /// Makes sends and receives fail with `EAGAIN` instead of blocking (`O_NONBLOCK`), or block again.
    public func setNonBlocking(_ nonBlocking: Bool) throws(Errno) {
        let flags = try valueOrErrno { fcntl(rawValue, F_GETFL) }
        let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags { _ = try valueOrErrno { fcntl(rawValue, F_SETFL, wanted) } }
    }

    /// Shuts the connection down both ways: a blocked receive returns end of stream, a blocked accept fails. The
    /// descriptor stays open (and owned) until the object goes away. Errors are ignored (the peer may be gone).
    ///
    /// Not in a child that `fork()` made (``ForkWatch``): the socket is its parent's too, and shutdown would end the
    /// parent's connection; the child's descriptor closes with it.
    public func shutdown() {
        guard !ForkWatch.isForkedChild else { return }
        _ = libcShutdown(rawValue, Int32(SHUT_RDWR))
    }

    /// The peer as the kernel saw it when it connected (`SO_PEERCRED`).
    public func peerCredentials() throws(Errno) -> PeerCredentials {
        var credentials = PeerCredentials(pid: 0, uid: 0, gid: 0)
        let result = cfc_peer_credentials(rawValue, &credentials.pid, &credentials.uid, &credentials.gid)
        guard result == 0 else { throw Errno(rawValue: result) }
        return credentials
    }
}

/// The process at the other end of a Unix socket, as the kernel saw it when it connected (`struct ucred`).
public struct PeerCredentials: Sendable, Hashable {
    /// Its process id.
    public var pid: Int32
    /// Its user id.
    public var uid: UInt32
    /// Its group id.
    public var gid: UInt32

    /// Credentials from their parts.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The socket option that holds them: `SOL_SOCKET`, `SO_PEERCRED`, read as a ``KernelValue``. For a socket
    /// layer that reads options itself (the daemon's NIO channels, whose descriptors NIO owns).
    public static var socketOption: (level: Int32, name: Int32) { (SOL_SOCKET, SO_PEERCRED) }

    /// The option's value as the kernel writes it: `struct ucred`, by its CFCLinux name (`cfc_ucred`, checked
    /// against glibc's `struct ucred` when CFCLinux is compiled). Pass this type to a generic `getsockopt` (NIO's
    /// `unsafeGetSocketOption`), then make ``PeerCredentials`` from it.
    public struct KernelValue: Sendable {
        var value = cfc_ucred()

        /// Zeroes, to be filled by `getsockopt`.
        public init() {}
    }

    /// Credentials from the value `getsockopt(SO_PEERCRED)` wrote.
    public init(_ kernel: KernelValue) {
        self.init(pid: kernel.value.pid, uid: kernel.value.uid, gid: kernel.value.gid)
    }
}

/// A spelling of a socket's path that fits in a socket address (`sun_path`, 107 bytes): the path itself when it fits,
/// else `/proc/self/fd/N/NAME`, N being a descriptor of the path's folder (`O_PATH`, close-on-exec) held until
/// ``close()``. The kernel resolves that spelling to the same file, so `bind` creates and `connect` finds the socket
/// at the path however deep its folder is (issue 37: runtime folders deep in temporary trees).
///
/// - Important: Use the spelling only until ``close()`` (or the object goes away), on the thread that made it or
///   after handing it over; it names the folder's descriptor, which is this process's alone.
public final class AddressablePath: Sendable {
    /// The path to give `bind` or `connect`.
    public let spelling: String
    private let folder: Int32

    /// - Throws: `Errno.fileNameTooLong` when even the folder's spelling is too long (a socket's own name of about
    ///   90 bytes or more) or `/proc` is not mounted; the folder's `open` error otherwise.
    public init(_ path: String) throws(Errno) {
        guard path.utf8.count > UnixSocket.maximumAddressLength else {
            spelling = path
            folder = -1
            return
        }
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { throw Errno.fileNameTooLong }
        let folderPath = slash == path.utf8.startIndex ? "/" : String(path[..<slash])
        let name = String(path[path.utf8.index(after: slash)...])
        let descriptor = try valueOrErrno { cfc_open_directory_path(folderPath) }
        let spelled = "/proc/self/fd/\(descriptor)/\(name)"
        var status = stat()
        guard spelled.utf8.count <= UnixSocket.maximumAddressLength, stat("/proc/self/fd/\(descriptor)", &status) == 0
        else {
            _ = libcClose(descriptor)
            throw Errno.fileNameTooLong
        }
        spelling = spelled
        folder = descriptor
    }

    /// Closes the folder's descriptor; the spelling names nothing afterwards. Call once.
    public func close() {
        if folder >= 0 { _ = libcClose(folder) }
    }
}
