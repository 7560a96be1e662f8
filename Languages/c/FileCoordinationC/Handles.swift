import CFileCoord
import FCBridge
import FCSystem
import FCToolkit
import FileCoordination
import Foundation

// The objects behind filecoord.h's opaque handles. A handle is an `Unmanaged` reference retained once when it is
// handed out and released by the function that frees it.

/// `filecoord_error`: a code, a message and an errno.
final class ErrorBox {
    let code: Int32
    let message: UnsafeMutablePointer<CChar>
    let errno: Int32

    init(_ error: BridgeError) {
        code = error.code.rawValue
        message = strdup(error.message)
        errno = error.errno
    }

    deinit { free(message) }
}

/// `filecoord_coordinator`: one `NSFileCoordinator`, whose settings apply to each call made with it.
final class CoordinatorBox: Sendable {
    let coordinator = NSFileCoordinator(filePresenter: nil)
    let timeout = Locked<Duration?>(nil)
    let nonblocking = Locked(false)
    let purpose = Locked<String?>(nil)

    var settings: CallSettings {
        CallSettings(timeout: timeout.withLock { $0 }, purpose: nil, nonblocking: nonblocking.withLock { $0 })
    }
}

/// `filecoord_claim`: a claim held by a thread of its own until `filecoord_claim_end`.
// @unchecked: `paths` holds raw C strings (not `Sendable`), copied once in `init` and only read (by C callers, as
// `const char *`) until `deinit` frees them; the semaphores are `Sendable`.
final class ClaimBox: @unchecked Sendable {
    let paths: [UnsafeMutablePointer<CChar>]
    private let release: DispatchSemaphore
    private let finished: DispatchSemaphore

    init(paths: [String], release: DispatchSemaphore, finished: DispatchSemaphore) {
        self.paths = paths.map { strdup($0) }
        self.release = release
        self.finished = finished
    }

    /// Lets the holding thread's accessor return and waits until the claim is released. In a child that fork() made
    /// of the holder (a `with` block left by the child, in Python) it does nothing: the claim and its thread are the
    /// parent's, the child has no such thread to wait for (until stop 68 the child waited for ever).
    func end() {
        guard !ForkWatch.isForkedChild else { return }
        release.signal()
        finished.wait()
    }

    deinit { for path in paths { free(path) } }
}

/// `filecoord_presenter`: a registered ``BridgePresenter`` forwarding to C callbacks.
final class PresenterBox: Sendable {
    let presenter: BridgePresenter

    init(_ presenter: BridgePresenter) { self.presenter = presenter }
}

/// A C context pointer, which the caller promises may be used from the library's threads.
// @unchecked: a raw pointer is not Sendable; the C caller promised it may cross threads (docs/man).
struct CContext: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
}

/// Handles to and from their objects.
enum Handle {
    static func make<T: AnyObject>(_ object: T) -> OpaquePointer {
        OpaquePointer(Unmanaged.passRetained(object).toOpaque())
    }

    static func get<T: AnyObject>(_ handle: OpaquePointer, as type: T.Type) -> T {
        Unmanaged<T>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
    }

    static func take<T: AnyObject>(_ handle: OpaquePointer, as type: T.Type) -> T {
        Unmanaged<T>.fromOpaque(UnsafeRawPointer(handle)).takeRetainedValue()
    }
}

/// Stores `error` in `*out` (when given) and returns its code.
func report(_ error: BridgeError, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    out?.pointee = Handle.make(ErrorBox(error))
    return error.code.rawValue
}

/// A C string argument, or the error that it is missing.
func string(_ pointer: UnsafePointer<CChar>?, _ name: String) -> Result<String, BridgeError> {
    guard let pointer else { return .failure(BridgeError(.invalidArgument, "\(name) is NULL.")) }
    let value = String(cString: pointer)
    guard !value.isEmpty else { return .failure(BridgeError(.invalidArgument, "\(name) is empty.")) }
    return .success(value)
}
