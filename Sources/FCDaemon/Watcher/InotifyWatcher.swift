import CInotifyTools
public import FCCore
import FCFileSystemPolicy
import FCSystem
import FCToolkit
import Foundation
public import Logging
import SystemPackage

/// The inotify backend of ``FileSystemWatcher``, through libinotifytools.
///
/// libinotifytools keeps global state and is not thread-safe, so one thread of this watcher owns it: it adds and
/// removes watches, reads events and delivers them. Other threads only queue commands (``watch(_:)``,
/// ``unwatch(_:)``) under a lock and wake the thread by writing one byte at offset 0 of a private wake file that
/// it watches (libinotifytools offers no other way to interrupt its read). One watch per directory, whatever the
/// number of presenters that need it (the arbiter counts them); `IN_ONLYDIR`, so a presented file costs nothing.
///
/// - Important: One `InotifyWatcher` per process (libinotifytools' state is global). Thread-safe as described.
// @unchecked: `control` is reached only under its lock; every other `var` only on the watcher thread (`wakeFile` is
// set before that thread starts; the ones not `private` are shared with the extensions in the InotifyWatcher+*.swift
// files, on that thread too; the settle timer only calls `enqueue`).
public final class InotifyWatcher: FileSystemWatcher, @unchecked Sendable {
    /// What other threads ask of the watcher thread (``enqueue(_:)``).
    enum Command {
        case watch(ItemPath, indexing: Bool)
        case unwatch(ItemPath)
        case fileWritten(FileIdentity)
        case changedSince(Int64, Int64?, ItemPath, PresenterID)
        case barrier(UInt64)
        /// Nothing but a report (``FileSystemWatcher/drain()``).
        case drain
        /// A held change may be due (``SettlingChanges``): the watcher's own timer.
        case settle
    }

    /// The events watched in every directory: a finished write, a change without one (`IN_MODIFY`, `IN_ATTRIB`: held
    /// until it settles, ``SettlingChanges``), and the names that come and go.
    static let mask = UInt32(
        IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR
    )
    /// The events watched on a file of a watched directory that has other names (issue 26): a finished write through
    /// any name, a write without one (`IN_MODIFY`, as in a directory), a change of its link count (`IN_ATTRIB`: a link
    /// made or removed anywhere), its end.
    static let linkedFileMask = UInt32(IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_DONT_FOLLOW)

    let cap: Int?
    private let wakePath: String
    /// The wake file's folder and name: its writes are not held in a watched folder (``isWakeFile(_:name:)``).
    var wakeFile: (folder: FileIdentity, name: [UInt8])?
    let logger: Logger
    /// What other threads hand the watcher thread.
    private struct Control {
        var commands: [Command] = []
        var wakePending = false
        var stopping = false
        var wakeFile: FileDescriptor?
        var thread: Thread?
        /// Set when the watcher thread ended by itself (``end(after:because:lost:)``): what ``enqueue(_:)`` answers
        /// with from then.
        var ended: Ended?
    }
    private let control = Locked(Control())
    private let stopped = DispatchSemaphore(value: 0)
    // Owned by the watcher thread.
    private var deliver: @Sendable (WatcherReport) -> Void = { _ in }
    var wakeWatch: Int32 = -1
    var byDescriptor: [Int32: ItemPath] = [:]
    /// Per watch, whether its directory's names compare case-insensitively (`FileSystemCaseRule`, as the client's
    /// canonicaliser decides): event names there are case-folded as the arbiter's keys are (issue 14). Absent while
    /// undecided (an empty directory of a FUSE file system that the device does not name): asked again at its next
    /// event. At most one entry per watch.
    var foldsNames: [Int32: Bool] = [:]
    /// Per directory watch, the directory's `(st_dev, st_ino)` when it was added (`InotifyWatcher+DirectoryWatches.swift`).
    var directoryIdentities: [Int32: FileIdentity] = [:]
    var byPath: [ItemPath: Int32] = [:]
    /// Directories the arbiter asked for and has not given up, watched or not.
    var wanted: Set<ItemPath> = []
    /// Wanted directories refused for want of a watch (the daemon's cap, or the kernel's limit), each with whether its
    /// files are to be indexed, and how many watches were in use at the last refusal: tried again as watches are let
    /// go (``retryWaitingForRoom(into:)``).
    var waitingForRoom: [ItemPath: Bool] = [:]
    var watchesAtRefusal = 0
    var roomRefusals = 0
    /// Directories told as failed watches (`watchFailed`) while wanted: their watch, once added, is told as
    /// `watchAdded`.
    var toldFailed: Set<ItemPath> = []
    /// The watched directories whose files are indexed by identity (``FileSystemWatcher/watch(_:indexingFiles:)``):
    /// all but those watched for live queries only.
    var indexed: Set<ItemPath> = []
    var status = WatcherStatus(backend: "inotify")
    /// The files of watched directories that have other names, each watched by its inode (issue 26).
    var linked = LinkedFileWatches()
    /// Writes through a watched directory's name of a linked file whose echo on the file's own watch is to come.
    var echoes = LinkedWriteEchoes()
    /// The identity of each file in the watched directories (issue 26).
    var files = WatchedFileIdentities()
    /// Directories past ``LinkedFileWatches/maximumPerDirectory`` or ``WatchedFileIdentities/maximumPerDirectory``,
    /// logged once per watch.
    var cutDirectories: Set<ItemPath> = []
    /// Watches added and removed since the last report.
    var added: [ItemPath] = []
    var removed: [ItemPath] = []
    /// Barrier tokens passed since the last report (on the watcher thread).
    private var barriers: [UInt64] = []
    /// A name had no spelling left (``unseenSpelling(_:as:identity:)``): libinotifytools is started again after the
    /// batch. Never set while ``renewing``.
    var renewalWanted = false
    /// Tests only (`@testable`): why a renewal's start of libinotifytools is to fail, set before ``start(deliver:)``
    /// (it cannot be made to fail on demand: another thread must take the instance or the descriptor number freed in
    /// the instant between the close and the open). `nil` in use.
    var renewalFault: String?
    /// Whether ``renew(into:)`` is adding the watches again.
    var renewing = false
    /// Changes without a finished write, held until they settle.
    var settling: SettlingChanges
    /// Whether a ``Command/settle`` is on its way (one at a time: it comes no later than any held change is due).
    var settleArmed = false
    /// When the batch being read was read (a held change's time), and how far the watcher had read before it.
    var batchReadAt = ContinuousClock.now
    var drainedBeforeBatch = ChangeTimes.now
    /// Whether the batch being read held anything but changes to hold (a report is due: an event, a watch's status).
    var readOther = false
    /// Per move of the batch being read, the moved item's change told before it (its place in the batch), and those
    /// dropped.
    var toldBeforeMoves: [UInt32: Int] = [:]
    var droppedFromBatch: Set<Int> = []
    /// Where the settling timer waits (no thread of its own).
    let settleTimers = DispatchQueue(label: "filecoordd.watcher.settling")

    /// Creates a watcher that uses at most `maximumWatches` watches (besides the kernel's limit), waking itself
    /// through a file at `wakePath` (in the daemon's private runtime folder), holding changes without a finished
    /// write for `settlingTiming` (tests shorten or lengthen it).
    public init(
        maximumWatches: Int?,
        wakePath: String,
        logger: Logger = Logger(label: "filecoordd.watcher"),
        settlingTiming: SettlingTiming = .standard
    ) {
        self.cap = maximumWatches
        self.wakePath = wakePath
        settling = SettlingChanges(timing: settlingTiming)
        self.logger = logger
        status.watchCap = maximumWatches
        status.kernelMaximumWatches = Self.readLimit("max_user_watches")
        status.queueLimit = Self.readLimit("max_queued_events")
    }

    public func start(deliver: @escaping @Sendable (WatcherReport) -> Void) throws {
        let file = try FileDescriptor.open(
            FilePath(wakePath),
            .writeOnly,
            options: [.create, .truncate, .closeOnExec],
            permissions: [.ownerReadWrite]
        )
        _ = try file.writeAll(toAbsoluteOffset: 0, [0])
        control.withLock { $0.wakeFile = file }
        let wakeBytes = Array(wakePath.utf8)
        let slash = wakeBytes.lastIndex(of: UInt8(ascii: "/")) ?? -1
        if let folder = try? FileSystemCalls.status(
            pathBytes: slash > 0 ? Array(wakeBytes[..<slash]) : Array("/".utf8),
            followingLinks: true,
            readingMount: false
        ) {
            wakeFile = (folder.identity, Array(wakeBytes[(slash + 1)...]))
        }
        let started = DispatchSemaphore(value: 0)
        let failure = Locked<WatcherError?>(nil)
        let thread = Thread { [self] in
            nameCurrentThread("fcd.watcher")
            self.deliver = deliver
            if let error = self.setUp() {
                failure.withLock { $0 = error }
                started.signal()
                self.stopped.signal()
                return
            }
            started.signal()
            self.run()
            inotifytools_cleanup()
            self.stopped.signal()
        }
        thread.name = "filecoordd-watcher"
        control.withLock { $0.thread = thread }
        thread.start()
        started.wait()
        if let error = failure.withLock({ $0 }) {
            stop()
            throw error
        }
    }

    public func watch(_ directory: ItemPath, indexingFiles: Bool) {
        enqueue(.watch(directory, indexing: indexingFiles))
    }

    public func unwatch(_ directory: ItemPath) { enqueue(.unwatch(directory)) }

    public func barrier(_ token: UInt64) { enqueue(.barrier(token)) }

    public func drain() { enqueue(.drain) }

    public func fileWritten(_ identity: ItemIdentity) {
        enqueue(.fileWritten(FileIdentity(device: identity.device, inode: identity.inode)))
    }

    public func changedSince(_ since: Int64, itemChangeTime: Int64?, path: ItemPath, presenter: PresenterID) {
        enqueue(.changedSince(since, itemChangeTime, path, presenter))
    }

    public func stop() {
        let (file, running) = control.withLock { control -> (FileDescriptor?, Bool) in
            let wasStopping = control.stopping
            control.stopping = true
            let file = control.wakeFile
            control.wakeFile = nil
            return (file, !wasStopping && control.thread != nil)
        }
        if let file {
            if running {
                _ = try? file.writeAll(toAbsoluteOffset: 0, [1])
                stopped.wait()
            }
            try? file.close()
            try? FileManager.default.removeItem(atPath: wakePath)
        }
    }

    func enqueue(_ command: Command) {
        let (file, ended) = control.withLock { control -> (FileDescriptor?, Ended?) in
            guard !control.stopping else { return (nil, nil) }
            if let ended = control.ended { return (nil, ended) }
            control.commands.append(command)
            guard !control.wakePending else { return (nil, nil) }
            control.wakePending = true
            return (control.wakeFile, nil)
        }
        if let ended {
            ended.answer { [command] }
            return
        }
        _ = try? file?.writeAll(toAbsoluteOffset: 0, [1])
    }

    /// The watcher thread's end other than by ``stop()`` (an inotify read failed, a renewal could not start
    /// libinotifytools again, as `reason` says), after `batch` and the changes still held: nothing is watched any more,
    /// and the last report says so (each directory still watched let go, and told as a failed watch,
    /// `FileSystemEvent.watchFailed`: the presenters and live queries that relied on it are told), and that nothing
    /// more will be read (`drainedAt` `.max`: no write's echo is to be waited for, and a queued drain is answered),
    /// with the barriers passed and those of the commands still queued; from then on ``Ended`` answers for the thread.
    /// `lost`: directories already let go without a report (a renewal that could not start again), told the same way.
    private func end(after batch: [FileSystemEvent], because reason: String, lost: [ItemPath] = []) {
        let reason = "filecoordd's file watcher stopped: \(reason)"
        var batch = batch
        tellSettled(into: &batch, everything: true)  // Held changes are told: nothing will tell them later.
        let stillWatched = lost + byDescriptor.sorted { $0.key < $1.key }.map(\.value)
        removed += stillWatched
        (byDescriptor, byPath, linked) = ([:], [:], LinkedFileWatches())
        updateWatchCounts()
        var last = WatcherReport(
            events: batch + stillWatched.sorted().map { .watchFailed($0, reason: reason) },
            status: status,
            unwatched: removed
        )
        last.drainedAt = .max
        last.barriers = barriers
        let ended = Ended(status: status, reason: reason, deliver: deliver)
        ended.answer(after: last) {
            control.withLock { control -> [Command] in
                control.ended = ended
                defer { control.commands = [] }
                return control.commands
            }
        }
    }

    // MARK: The watcher thread

    /// Starts libinotifytools and watches the wake file: by its path at the start, by the descriptor the other
    /// threads write (`/proc/self/fd/N`) at a renewal, so that a wake file deleted meanwhile is still the one watched.
    func setUp(renewing: Bool = false) -> WatcherError? {
        guard inotifytools_initialize() != 0 else {
            return WatcherError("inotify is not available: errno \(inotifytools_error())")
        }
        var path = wakePath
        if renewing, let descriptor = control.withLock({ $0.wakeFile?.rawValue }) {
            path = "/proc/self/fd/\(descriptor)"
        }
        guard inotifytools_watch_file(path, Int32(IN_MODIFY)) != 0 else {
            return WatcherError("cannot watch the wake file \(path): errno \(inotifytools_error())")
        }
        wakeWatch = inotifytools_wd_from_filename(path)
        return nil
    }

    private func run() {
        drainedBeforeBatch = ChangeTimes.now  // Every watch is added after this.
        while true {
            guard let first = inotifytools_next_events(-1, 1) else {
                let error = inotifytools_error()
                if error == EINTR || error == 0 { continue }
                logger.error("the file watcher stopped: reading inotify failed with errno \(error)")
                end(after: [], because: "reading inotify failed with errno \(error)")
                return
            }
            var batch: [FileSystemEvent] = []
            var wake = false
            (batchReadAt, readOther) = (.now, false)
            read(first, into: &batch, wake: &wake)
            // Taken before each look at the queue: the last one is before the look that found it empty.
            var drainedAt = ChangeTimes.now
            while true {
                guard let next = inotifytools_next_events(0, 1) else {
                    // Empty (no error), or interrupted by a signal's handler (EINTR): then looked at again, so that
                    // `drainedAt` is always from a look that found the queue empty. Another error is the blocking
                    // read's to report, next.
                    guard inotifytools_error() == EINTR else { break }
                    drainedAt = ChangeTimes.now
                    continue
                }
                read(next, into: &batch, wake: &wake)
                drainedAt = ChangeTimes.now
            }
            finishReading(&batch)
            if wake, !runCommands(into: &batch) { return }
            if renewalDue {
                if let failure = renew(into: &batch) {
                    end(after: batch, because: failure.reason, lost: failure.lost)
                    return
                }
                // Commands queued while the wake file's watch was away: their wake-up went to the old instance.
                if !runCommands(into: &batch) { return }
            }
            retryWaitingForRoom(into: &batch)
            echoes.endBatch()
            armSettling()
            // A batch of held changes alone says nothing yet (a write storm in a watched folder would cost the loop a
            // pass per read otherwise).
            let silent = !wake && !readOther && batch.isEmpty && added.isEmpty && removed.isEmpty && barriers.isEmpty
            drainedBeforeBatch = drainedAt
            if silent { continue }
            var report = WatcherReport(
                events: batch,
                status: status,
                watched: added,
                unwatched: removed,
                observed: ObservedStates.read(for: batch)
            )
            // After the last lstat: every state above was read before this moment.
            report.readAt = ChangeTimes.now
            // A held change was made after `settling.drainedBefore` and is not told yet.
            report.drainedAt = min(drainedAt, settling.drainedBefore ?? .max)
            report.barriers = barriers
            deliver(report)
            added = []
            removed = []
            barriers = []
        }
    }

    /// Carries out the queued commands; `false` when the watcher is stopping.
    private func runCommands(into batch: inout [FileSystemEvent]) -> Bool {
        let (queued, stop) = control.withLock { control -> ([Command], Bool) in
            defer {
                control.commands = []
                control.wakePending = false
            }
            return (control.commands, control.stopping)
        }
        if stop { return false }
        for command in queued {
            switch command {
            case .watch(let directory, let indexing):
                // Asked again for a directory it wants: it was created after its watch failed.
                let again = !wanted.insert(directory).inserted
                if byPath[directory] == nil || watchesAnother(directory) {
                    if again { status.rescans += 1 }
                    add(directory, scan: again, indexing: indexing, into: &batch)
                } else if indexing, !indexed.contains(directory) {
                    // Watched for a live query only so far; now for the arbiter too: its files are indexed now.
                    indexWatched(directory)
                }
            case .unwatch(let directory):
                wanted.remove(directory)
                waitingForRoom[directory] = nil
                toldFailed.remove(directory)
                dropWatch(of: directory)
            case .fileWritten(let identity):
                reportWrite(of: identity, into: &batch)
            case .barrier(let token):
                // The watches queued before it were added above (or failed, and said so in the batch).
                barriers.append(token)
            case .drain:
                break  // The report that follows says how far the queue was read.
            case .settle:
                settleArmed = false
                tellSettled(into: &batch)
            case .changedSince(let since, let itemChangeTime, let path, let presenter):
                // The presenter's watches were queued before this: they are in place (or failed, and said so).
                reportChanges(
                    since: since,
                    itemChangeTime: itemChangeTime,
                    at: path,
                    presenter: presenter,
                    into: &batch
                )
            }
        }
        updateWatchCounts()
        return true
    }

    func updateWatchCounts() {
        status.watches = byDescriptor.count + linked.count
        status.linkedFileWatches = linked.count
    }
}
