import CFCLinux
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Watches one descriptor of another process (a shell's `exec 9>doc`) until that process no longer has it open or has
/// exited: what `fccoord --fd`'s holder waits for before it ends its claim (issue 43).
///
/// Event-based, with no polling loop: a pidfd of the process (readable once it has exited, `pidfd_open`, Linux 5.3)
/// and an inotify watch, through `/proc/<pid>/fd/<n>`, of the file the descriptor refers to (`IN_CLOSE_WRITE` and
/// `IN_CLOSE_NOWRITE`: the last descriptor of one of its open files closed, in any process). After each close event
/// the descriptor is looked at again: it is open still while `/proc/<pid>/fd/<n>` names the same file (device and
/// inode). A close that is not the last reference to its open file (a child of the shell still has a copy) makes no
/// event: the watch then ends at the next close of the file, or when the process exits. The wait is bounded by
/// `recheck` (a file system whose closes inotify does not see, a kernel without pidfds): it looks again at least that
/// often.
///
/// - Important: Not thread-safe: one thread waits. The descriptors are closed with the watch.
public final class ProcessDescriptorWatch {
    /// The watched process.
    public let processID: Int32
    /// Its descriptor's number.
    public let descriptor: Int32
    /// The file the descriptor referred to when the watch began.
    public let identity: FileIdentity
    private let processHandle: Int32
    private let closes: Int32

    /// Starts watching descriptor `descriptor` of process `processID`.
    ///
    /// - Throws: `EBADF` when the process has no such descriptor open; the `Errno` of `/proc` otherwise (`ENOENT`:
    ///   no such process).
    public init(process processID: Int32, descriptor: Int32) throws(Errno) {
        self.processID = processID
        self.descriptor = descriptor
        let link = "/proc/\(processID)/fd/\(descriptor)"
        // The watches first, then the file: a close between the two is then seen by the first check.
        processHandle = cfc_pidfd_open(processID)
        closes = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        if closes >= 0 {
            // Follows the magic link to the file itself; a pipe or socket may not be watchable (the recheck serves).
            _ = inotify_add_watch(closes, link, UInt32(IN_CLOSE_WRITE | IN_CLOSE_NOWRITE))
        }
        do {
            identity = try FileSystemCalls.status(link, followingLinks: true).identity
        } catch {
            if processHandle >= 0 { _ = libcClose(processHandle) }
            if closes >= 0 { _ = libcClose(closes) }
            throw error == .noSuchFileOrDirectory && ProcessLiveness.isAlive(processID) ? .badFileDescriptor : error
        }
    }

    deinit {
        if processHandle >= 0 { _ = libcClose(processHandle) }
        if closes >= 0 { _ = libcClose(closes) }
    }

    /// Whether the process still has the descriptor open on the same file.
    public var isOpen: Bool {
        guard let status = try? FileSystemCalls.status("/proc/\(processID)/fd/\(descriptor)", followingLinks: true)
        else { return false }
        return status.identity == identity
    }

    /// Returns once the process has exited or no longer has the descriptor open on the same file.
    public func waitUntilClosed(recheck: Duration) {
        let milliseconds = Int32(clamping: recheck.components.seconds * 1000)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while isOpen {
            var entries = [
                pollfd(fd: processHandle, events: Int16(POLLIN), revents: 0),
                pollfd(fd: closes, events: Int16(POLLIN), revents: 0),
            ]
            // A descriptor of -1 is ignored by poll.
            _ = try? retryOnInterrupt { libcPoll(&entries, 2, milliseconds) }
            if entries[0].revents != 0 { return }
            if entries[1].revents != 0 {
                // Drained: the events say only that something closed the file.
                _ = buffer.withUnsafeMutableBytes { libcRead(closes, $0.baseAddress!, $0.count) }
            }
        }
    }
}

/// A pipe whose ends are close-on-exec (`pipe2` with `O_CLOEXEC`): `fccoord --fd` and its holder's report.
public enum CloseOnExecPipe {
    /// Makes a pipe: its read end, then its write end.
    public static func make() throws(Errno) -> (read: FileDescriptor, write: FileDescriptor) {
        var ends: [Int32] = [-1, -1]
        let result = ends.withUnsafeMutableBufferPointer { cfc_pipe_cloexec($0.baseAddress!) }
        _ = try valueOrErrno { result }
        return (FileDescriptor(rawValue: ends[0]), FileDescriptor(rawValue: ends[1]))
    }

    /// Returns once no process has the pipe's read end open any more (`poll` reports `POLLERR` on `writeEnd`).
    public static func waitUntilReaderGone(_ writeEnd: FileDescriptor) {
        var entry = [pollfd(fd: writeEnd.rawValue, events: 0, revents: 0)]
        while entry[0].revents == 0 {
            guard (try? retryOnInterrupt({ libcPoll(&entry, 1, -1) })) != nil else { return }
        }
    }
}
