import FCSystem
import FileCoordination
import Foundation
@preconcurrency import Glibc
import Synchronization

// The other processes of the end-to-end benchmarks. A benchmark's setup re-runs this executable with
// `FC_E2E_ROLE` set (``HelperProcess``); `benchmarks` then calls ``HelperRole/run(_:)`` before registering anything,
// and the process plays its part until its standard input closes. Being the same release build, the helpers cost
// what the benchmark process costs.
//
//   echo       connects to FC_E2E_SOCKET and echoes 32-byte messages (the bare three-party round trip's responder)
//   presenter  presents FC_E2E_PATH and relinquishes to every writer at once; prints `ready`, then answers the line
//              `count` with how many times it relinquished
//   claimer    a client of the daemon: prints `ready` after one coordinated read of FC_E2E_PATH, then for each byte
//              read makes FC_E2E_CLAIMS coordinated reads of it and writes `d` (or `e` if one failed) followed by
//              the CPU time the process used meanwhile (nanoseconds, a little-endian UInt64); with
//              FC_E2E_CLAIM=write its claims are coordinated writes (the README's profile drives writes with it)
//   daemon     runs FCDaemon on FC_E2E_SOCKET (ClientHotPathBenchmarks.swift): the client's benchmarks count the
//              client's own allocations
//   inotify    watches FC_E2E_PATH's folder with raw inotify (no daemon) and writes `c` for every IN_CLOSE_WRITE of
//              FC_E2E_PATH: the bare delivery the watcher benchmark compares with (issue 13)
//   inotifyCreate  watches the folder FC_E2E_PATH with raw inotify and writes `c` for every IN_CREATE in it
//              (QueryDeliveryBenchmarks.swift, issue 44)
//   queryCreates  an NSMetadataQuery of the folder FC_E2E_PATH (batching interval 0): prints `ready` once gathered,
//              then writes `c` for every item an update adds (QueryDeliveryBenchmarks.swift, issue 44)
//   watched    presents FC_E2E_PATH (presentedItemDidChange only) and writes `c` for every presentedItemDidChange,
//              from the presenter's queue (issue 13)
//   holder     a client with leases (FILECOORD_LEASES=1): takes a lease on each folder it is sent a file of
//              (LeaseBenchmarks.swift, issue 23)
//   clusterHost  a daemon that joins an etcd cluster as one host sharing a folder, and a client of it: writes
//              there on command (ClusterBenchmarks.swift, issue 40)
enum HelperRole {
    /// Plays `role`, then exits.
    static func run(_ role: String) -> Never {
        let environment = ProcessInfo.processInfo.environment
        let path = environment["FC_E2E_PATH"] ?? ""
        switch role {
        case "echo":
            guard let fd = try? BareSocket.connect(to: environment["FC_E2E_SOCKET"] ?? "") else {
                fail("cannot connect")
            }
            BareSocket.echo(fd)
        case "presenter":
            present(URL(fileURLWithPath: path))
        case "claimer":
            claim(
                URL(fileURLWithPath: path),
                claims: Int(environment["FC_E2E_CLAIMS"] ?? "") ?? 1,
                writing: environment["FC_E2E_CLAIM"] == "write"
            )
        case "inotify":
            watchWithInotify(path)
        case "inotifyCreate":
            watchWithInotify(folder: path, mask: UInt32(IN_CREATE)) { _ in true }
        case "queryCreates":
            queryCreates(path)
        case "watched":
            presentForChanges(URL(fileURLWithPath: path))
        case "daemon":
            serveDaemon(
                socketPath: environment["FC_E2E_SOCKET"] ?? "",
                grantsLeases: environment["FC_E2E_NO_LEASES"] != "1"
            )
        case "holder":
            holdLeases()
        case "clusterHost":
            serveClusterHost()
        default:
            fail("unknown role \(role)")
        }
        exit(0)
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("fc-e2e helper \(ProcessIdentity.processID): \(message)\n".utf8))
        exit(1)
    }

    static func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { BareSocket.writeAll(1, $0.baseAddress!, $0.count) }
    }

    private static func present(_ url: URL) {
        let presenter = RelinquishingPresenter(url: url)
        NSFileCoordinator.addFilePresenter(presenter)
        say("ready")
        while let line = readLine() {
            if line == "count" { say("\(presenter.relinquished)") }
        }
        NSFileCoordinator.removeFilePresenter(presenter)
    }

    private static func claim(_ url: URL, claims: Int, writing: Bool) {
        func read() -> NSError? { coordinatedCall(url, writing: writing) }
        if let error = read() { fail("coordinated read failed: \(error)") }
        say("ready")
        var command: UInt8 = 0
        while BareSocket.readExactly(0, &command, 1) {
            var reply = UInt8(ascii: "d")
            let cpuBefore = cpuNanoseconds(CLOCK_PROCESS_CPUTIME_ID)
            for _ in 0..<claims {
                if let error = read() {
                    FileHandle.standardError.write(Data("fc-e2e claimer \(ProcessIdentity.processID): \(error)\n".utf8))
                    reply = UInt8(ascii: "e")
                }
            }
            var cpu = (cpuNanoseconds(CLOCK_PROCESS_CPUTIME_ID) - cpuBefore).littleEndian
            guard BareSocket.writeAll(1, &reply, 1), BareSocket.writeAll(1, &cpu, 8) else { return }
        }
    }
}

extension HelperRole {
    /// Raw inotify on the file's folder: one `c` per `IN_CLOSE_WRITE` of the file, until standard input closes.
    fileprivate static func watchWithInotify(_ path: String) {
        let name = (path as NSString).lastPathComponent
        watchWithInotify(folder: (path as NSString).deletingLastPathComponent, mask: UInt32(IN_CLOSE_WRITE)) {
            $0 == name
        }
    }

    /// Raw inotify on `folder` for the events of `mask`: one `c` per event whose name `matches`, until standard
    /// input closes (the watcher's baseline, and the live query's: QueryDeliveryBenchmarks.swift).
    static func watchWithInotify(folder: String, mask: UInt32, matches: (String) -> Bool) {
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0, inotify_add_watch(fd, folder, mask) >= 0 else { fail("inotify: \(errnoText())") }
        startThread("stdin") {
            while readLine() != nil {}
            exit(0)
        }
        say("ready")
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 65_536, alignment: 8)
        while true {
            let count = read(fd, buffer, 65_536)
            guard count > 0 else { fail("inotify read: \(errnoText())") }
            var offset = 0
            while offset < count {
                let event = (buffer + offset).assumingMemoryBound(to: inotify_event.self)
                let header = MemoryLayout<inotify_event>.size
                let length = Int(event.pointee.len)
                let eventName = String(cString: (buffer + offset + header).assumingMemoryBound(to: CChar.self))
                if length > 0, matches(eventName) {
                    var reply = UInt8(ascii: "c")
                    guard BareSocket.writeAll(1, &reply, 1) else { exit(0) }
                }
                offset += header + length
            }
        }
    }

    /// A presenter of the file that hears only `presentedItemDidChange`: one `c` per notification.
    fileprivate static func presentForChanges(_ url: URL) {
        let presenter = ChangePresenter(url: url)
        NSFileCoordinator.addFilePresenter(presenter)
        say("ready")
        while readLine() != nil {}
        NSFileCoordinator.removeFilePresenter(presenter)
    }
}

/// A presenter that hears only `presentedItemDidChange()`, and writes `c` to standard output on its queue each time.
final class ChangePresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let presentedItemURL: URL?
    let presentedItemOperationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()

    init(url: URL) {
        presentedItemURL = url
    }

    var presentedItemCallbacks: FilePresenterCallbacks { [.presentedItemDidChange] }

    func presentedItemDidChange() {
        var reply = UInt8(ascii: "c")
        _ = BareSocket.writeAll(1, &reply, 1)
    }
}

/// A presenter that asks for nothing but `relinquishPresentedItem(toWriter:)`, and relinquishes at once with no
/// reacquirer: one request and one answer per coordinated write, the minimum a presenter that must relinquish costs.
final class RelinquishingPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let presentedItemURL: URL?
    let presentedItemOperationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()
    private let count = Mutex(0)

    init(url: URL) {
        presentedItemURL = url
    }

    var presentedItemCallbacks: FilePresenterCallbacks { [.relinquishToWriter] }

    var relinquished: Int { count.withLock { $0 } }

    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        count.withLock { $0 += 1 }
        writer(nil)
    }
}
