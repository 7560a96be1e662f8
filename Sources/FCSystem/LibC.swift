#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The C library's functions that FCSystem's own types shadow with members of the same name (`UnixSocket.close()`,
// `.send`, `.connect`, `FileSystemCalls.rename`...), under names nothing shadows. Defined at file scope, where the
// unqualified names are the C library's, so the same code builds against Glibc and Musl (no `Glibc.` prefix).

func libcClose(_ descriptor: Int32) -> Int32 { close(descriptor) }

func libcOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 { open(path, flags, mode) }

func libcRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

func libcWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(descriptor, bytes, count) }

func libcRename(_ source: String, _ destination: String) -> Int32 { rename(source, destination) }

func libcSocket(_ domain: Int32, _ type: Int32, _ protocol: Int32) -> Int32 { socket(domain, type, `protocol`) }

func libcConnect(_ socket: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(socket, address, length)
}

func libcBind(_ socket: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    bind(socket, address, length)
}

func libcListen(_ socket: Int32, _ backlog: Int32) -> Int32 { listen(socket, backlog) }

func libcSend(_ socket: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    send(socket, bytes, count, flags)
}

func libcReceive(_ socket: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    recv(socket, buffer, count, flags)
}

func libcPoll(_ entries: UnsafeMutablePointer<pollfd>, _ count: nfds_t, _ milliseconds: Int32) -> Int32 {
    poll(entries, count, milliseconds)
}

func libcShutdown(_ socket: Int32, _ how: Int32) -> Int32 { shutdown(socket, how) }
