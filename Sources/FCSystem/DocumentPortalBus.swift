internal import CFCLinux
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The document portal's own interface (`org.freedesktop.portal.Documents` on the session bus), as the daemon asks
/// it which host file a portal path exports (issue 26, docs/SEMANTICS.md "Sandboxed apps and the document portal").
///
/// Through sd-bus, loaded at run time (`libsystemd.so.0`, CFCLinux's `cfc_document_portal_call`): a machine without
/// it has no portal mapping, and nothing is linked against it. No call starts the portal (the bus's auto-start is
/// off): a session without a running portal answers at once.
///
/// - Important: Thread-safe; each call opens its own connection to the session bus and blocks the calling thread
///   until the reply comes or `timeout` passes.
public enum DocumentPortalBus {
    /// Why a call failed: the bus's or the portal's error name and message, or the local errno.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The D-Bus error name (`org.freedesktop.DBus.Error.ServiceUnknown`, `org.freedesktop.portal.Error.…`),
        /// empty when the failure is local.
        public var name: String
        /// The error's message, as the bus or the portal wrote it (empty when the failure is local).
        public var message: String
        /// The errno sd-bus returned (`ENOSYS` when libsystemd cannot be loaded).
        public var errno: Errno

        /// A failure with its name, message and errno.
        public init(name: String, message: String, errno: Errno = .ioError) {
            self.name = name
            self.message = message
            self.errno = errno
        }

        /// The failure for a log line.
        public var description: String {
            if errno == .noFunction { return "libsystemd.so.0 (sd-bus) cannot be loaded" }
            return name.isEmpty ? "\(errno)" : "\(name): \(message)"
        }
    }

    /// Whether a session bus may be there to ask, as sd-bus finds it: `DBUS_SESSION_BUS_ADDRESS` set, or a socket at
    /// `$XDG_RUNTIME_DIR/bus`. `false` means no call can reach a portal (a server, a CI runner): the daemon then
    /// does not ask at all. One `getenv` or two and at most one `stat`.
    public static func sessionBusMayExist() -> Bool {
        if let address = getenv("DBUS_SESSION_BUS_ADDRESS"), address.pointee != 0 { return true }
        guard let runtime = getenv("XDG_RUNTIME_DIR"), runtime.pointee != 0 else { return false }
        return (try? FileSystemCalls.status(String(cString: runtime) + "/bus", followingLinks: true)) != nil
    }

    /// Where the portal mounts its file system (`GetMountPoint`), as it names it.
    public static func mountPoint(timeout: Duration) -> Result<[UInt8], Failure> {
        call("GetMountPoint", nil, timeout: timeout)
    }

    /// The host path of the file or folder the document `id` exports (`Info(id)`'s first value). The portal refuses
    /// `Info` to sandboxed callers; the daemon runs on the host.
    public static func hostPath(ofDocument id: String, timeout: Duration) -> Result<[UInt8], Failure> {
        call("Info", id, timeout: timeout)
    }

    private static func call(_ method: String, _ argument: String?, timeout: Duration) -> Result<[UInt8], Failure> {
        let (seconds, attoseconds) = timeout.components
        let microseconds =
            UInt64(clamping: max(0, seconds)) &* 1_000_000 &+ UInt64(max(0, attoseconds / 1_000_000_000_000))
        var failure = cfc_dbus_failure()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count: Int = buffer.withUnsafeMutableBufferPointer { bytes in
            if let argument {
                return cfc_document_portal_call(
                    method,
                    argument,
                    microseconds,
                    bytes.baseAddress,
                    bytes.count,
                    &failure
                )
            }
            return cfc_document_portal_call(method, nil, microseconds, bytes.baseAddress, bytes.count, &failure)
        }
        guard count >= 0 else {
            let name = withUnsafeBytes(of: failure.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let message = withUnsafeBytes(of: failure.message) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            return .failure(Failure(name: name, message: message, errno: Errno(rawValue: CInt(-count))))
        }
        return .success(Array(buffer.prefix(count)))
    }
}
