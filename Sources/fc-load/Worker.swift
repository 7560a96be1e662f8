import FCSystem
import FCTestSupport
import FCToolkit
import FileCoordination
import Foundation

/// One client process of the load: coordinated reads, writes, moves and deletes on a few shared items, with a
/// presenter that relinquishes, saves and sometimes refuses, and the proof of mutual exclusion made inside each
/// accessor. Prints one result line (`result` JSON) at the end.
///
/// A quarter of the operations go to items in a folder of this process's own (`own-<pid>`), where no presenter is:
/// with leases on (the default; not with `FILECOORD_LEASES=0`) the daemon leases it to this process, and one operation in twenty goes to
/// another process's own folder, which recalls that process's lease (issue 23).
///
/// Exclusion is proved with the file system, which every process sees: inside its accessor a writer creates
/// `<item>.w.<pid>.<n>` and a reader `<item>.r.<pid>.<n>`; a writer that finds another live process's marker of
/// either kind, or a reader that finds a live writer's, at the start or at the end of its accessor, is a violation:
/// counted, printed, and the run fails. Markers of processes killed inside an accessor are ignored and removed.
///
/// - Important: Runs its operations on `threads` threads of its own; the counters are under a lock.
// @unchecked: `counts`, `waits`, `violations` and `markers` are read and written only under `lock`.
final class Worker: @unchecked Sendable {
    struct Options {
        var folder: URL
        var items: Int
        var duration: Double
        var threads: Int
        var seed: UInt64
    }

    private let options: Options
    private let lock = Locked(())
    private var counts: [String: Int] = [:]
    private var waits: [Double] = []
    private var violations: [String] = []
    private var markers = 0

    init(options: Options) {
        self.options = options
    }

    private func count(_ what: String) { lock.withLock { counts[what, default: 0] += 1 } }

    private func violation(_ what: String) {
        lock.withLock { violations.append(what) }
        FileHandle.standardError.write(Data("VIOLATION \(what)\n".utf8))
    }

    func item(_ index: Int) -> URL { options.folder.appendingPathComponent("item\(index).txt") }

    /// This process's own folder, and the items in it.
    private var ownFolder: URL {
        options.folder.appendingPathComponent("own-\(ProcessIdentity.processID)", isDirectory: true)
    }
    private static let ownItems = 3

    /// An item in this process's own folder (`own` true) or in another's, when there is another.
    private func ownItem(_ random: inout SplitMix64, own: Bool) -> URL? {
        var folder = ownFolder
        if !own {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: options.folder.path)) ?? []
            let others = names.filter { $0.hasPrefix("own-") && $0 != folder.lastPathComponent }.sorted()
            guard !others.isEmpty else { return nil }
            folder = options.folder.appendingPathComponent(others[Int(random.next() % UInt64(others.count))])
        }
        return folder.appendingPathComponent("item\(random.next() % UInt64(Self.ownItems)).txt")
    }

    /// Runs until the duration is over, then prints the result line.
    func run() {
        try? FileManager.default.createDirectory(at: ownFolder, withIntermediateDirectories: true)
        for index in 0..<Self.ownItems {
            try? Data("own".utf8).write(to: ownFolder.appendingPathComponent("item\(index).txt"))
        }
        let presenter = LoadPresenter(url: item(Int(options.seed % UInt64(options.items))), worker: self)
        NSFileCoordinator.addFilePresenter(presenter)
        let deadline = Date(timeIntervalSinceNow: options.duration)
        let group = DispatchGroup()
        for thread in 0..<options.threads {
            group.enter()
            Thread { [self] in
                var random = SplitMix64(seed: options.seed &* 31 &+ UInt64(thread))
                while Date() < deadline { step(&random) }
                group.leave()
            }
            .start()
        }
        group.wait()
        NSFileCoordinator.removeFilePresenter(presenter)
        let (counts, waits, violations) = lock.withLock { (self.counts, self.waits, self.violations) }
        let result: [String: Any] = [
            "pid": ProcessIdentity.processID, "counts": counts, "waits": waits,
            "violations": violations,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: result)) ?? Data("{}".utf8)
        FileHandle.standardOutput.write(Data("result ".utf8) + data + Data("\n".utf8))
    }

    private func step(_ random: inout SplitMix64) {
        let shared = item(Int(random.next() % UInt64(options.items)))
        let target: URL
        switch random.next() % 20 {
        case 0..<5: target = ownItem(&random, own: true) ?? shared
        case 5: target = ownItem(&random, own: false) ?? shared
        default: target = shared
        }
        let coordinator = NSFileCoordinator()
        coordinator.timeout = .seconds(30)
        var error: NSError?
        let start = Date()
        var granted = false
        let kind = random.next() % 10
        switch kind {
        case 0..<5:
            coordinator.coordinate(readingItemAt: target, options: [], error: &error) { url in
                granted = true
                self.record(wait: start)
                self.insideRead(url)
            }
            count(granted ? "read" : "read failed")
        case 5..<8:
            coordinator.coordinate(writingItemAt: target, options: [], error: &error) { url in
                granted = true
                self.record(wait: start)
                self.insideWrite(url) { try? Data("written by \(ProcessIdentity.processID)".utf8).write(to: url) }
            }
            count(granted ? "write" : "write failed")
        case 8:
            let other = item(Int(random.next() % UInt64(options.items)))
            guard other != target else { return }
            coordinator.coordinate(
                writingItemAt: target,
                options: .forMoving,
                writingItemAt: other,
                options: .forReplacing,
                error: &error
            ) { from, to in
                granted = true
                self.record(wait: start)
                self.insideWrite(from) {
                    self.insideWrite(to) {
                        // Swap contents rather than move, so that every item keeps existing for the others.
                        let a = try? Data(contentsOf: from)
                        let b = try? Data(contentsOf: to)
                        try? b?.write(to: from)
                        try? a?.write(to: to)
                    }
                }
            }
            count(granted ? "move" : "move failed")
        default:
            coordinator.coordinate(writingItemAt: target, options: .forDeleting, error: &error) { url in
                granted = true
                self.record(wait: start)
                self.insideWrite(url) {
                    try? FileManager.default.removeItem(at: url)
                    try? Data("recreated".utf8).write(to: url)
                }
            }
            count(granted ? "delete" : "delete failed")
        }
        if let error { count("error \(error.domain) \(error.code)") }
    }

    private func record(wait start: Date) {
        let seconds = Date().timeIntervalSince(start)
        lock.withLock { waits.append(seconds) }
    }

    /// The markers of live processes inside `url` as writers (`.w.`) or readers (`.r.`), other than `mine`. Markers
    /// of processes that died inside (kill -9 during an accessor) are removed: a dead process holds nothing.
    private func liveMarkers(of url: URL, kind: String, except mine: String) -> [String] {
        let prefix = url.lastPathComponent + ".\(kind)."
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)) ?? []
        var live: [String] = []
        for name in names where name.hasPrefix(prefix) && name != mine {
            let pid = Int32(name.dropFirst(prefix.count).split(separator: ".").first ?? "") ?? 0
            if pid > 0 && Self.isAlive(pid) {
                live.append(name)
            } else {
                try? FileSystemCalls.removeFile(url.deletingLastPathComponent().appendingPathComponent(name).path)
            }
        }
        return live
    }

    /// `true` while `pid` runs (or is stopped): not gone, not a zombie that its parent has not reaped yet, and not
    /// exiting (a killed client holds nothing: the daemon released its claims when its connection closed).
    ///
    /// Exiting counts as dead: the kernel closes a dying process's descriptors (so the daemon sees its connection
    /// end and grants the next claim) before the process becomes a zombie, and on a loaded machine the gap between
    /// the two spans another client's whole read (a soak run of 2026-12-03, seed 365149973, reported a killed
    /// writer's marker as live to a reader that entered and left after its claim had been released). `PF_EXITING`
    /// (`0x4` in the flags, field 9 of `/proc/PID/stat`) is set when the process starts to exit, before that close.
    static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 6, let flags = UInt64(fields[6]) else { return false }
        let exiting: UInt64 = 0x4
        return fields[0] != "Z" && fields[0] != "X" && flags & exiting == 0
    }

    private func markerName(_ url: URL, _ kind: String) -> String {
        let serial = lock.withLock { () -> Int in
            markers += 1
            return markers
        }
        return url.lastPathComponent + ".\(kind).\(ProcessIdentity.processID).\(serial)"
    }

    /// The proof of exclusion for a write: no other writer, no reader, at its start and at its end.
    func insideWrite(_ url: URL, _ body: () -> Void) {
        let mine = markerName(url, "w")
        let path = url.deletingLastPathComponent().appendingPathComponent(mine).path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        check(url, mine, when: "entered")
        body()
        check(url, mine, when: "left")
        try? FileSystemCalls.removeFile(path)
    }

    private func check(_ url: URL, _ mine: String, when: String) {
        let writers = liveMarkers(of: url, kind: "w", except: mine)
        if !writers.isEmpty { violation("a writer \(when) \(url.lastPathComponent) with other writers \(writers)") }
        let readers = liveMarkers(of: url, kind: "r", except: mine)
        if !readers.isEmpty { violation("a writer \(when) \(url.lastPathComponent) with readers \(readers)") }
    }

    /// The proof of exclusion for a read: no writer at its start and at its end.
    func insideRead(_ url: URL) {
        let mine = markerName(url, "r")
        let path = url.deletingLastPathComponent().appendingPathComponent(mine).path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let before = liveMarkers(of: url, kind: "w", except: mine)
        if !before.isEmpty { violation("a reader entered \(url.lastPathComponent) with writers \(before)") }
        _ = try? Data(contentsOf: url)
        let after = liveMarkers(of: url, kind: "w", except: mine)
        if !after.isEmpty { violation("a reader left \(url.lastPathComponent) with writers \(after)") }
        try? FileSystemCalls.removeFile(path)
    }

    func presenterCallback(_ name: String) { count("presenter \(name)") }
}

/// The worker's presenter: relinquishes (with a reacquirer), saves, refuses one save in fifty.
// @unchecked: an NSObject subclass; `saves` is read and written only under `lock`, the rest is `let`.
final class LoadPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let presentedItemURL: URL?
    let presentedItemOperationQueue: OperationQueue
    private let worker: Worker
    private let lock = Locked(())
    private var saves = 0

    init(url: URL, worker: Worker) {
        presentedItemURL = url
        presentedItemOperationQueue = OperationQueue()
        presentedItemOperationQueue.maxConcurrentOperationCount = 1
        self.worker = worker
    }

    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        worker.presenterCallback("relinquishToReader")
        reader { self.worker.presenterCallback("reacquire") }
    }

    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        worker.presenterCallback("relinquishToWriter")
        writer { self.worker.presenterCallback("reacquire") }
    }

    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        let refuse = lock.withLock { () -> Bool in
            saves += 1
            return saves % 50 == 0
        }
        worker.presenterCallback(refuse ? "save refused" : "save")
        completionHandler(refuse ? CocoaError(.fileWriteUnknown) : nil)
    }

    func presentedItemDidChange() { worker.presenterCallback("didChange") }
}
