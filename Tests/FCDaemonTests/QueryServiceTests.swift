import FCCore
import FCSystem
import FCToolkit
import Foundation
import Logging
import Testing

@testable import FCDaemon

/// The query service's watches, counted as the host counts them (issue 44, review of the first cut): every folder a
/// tree asks to watch is let go once, whatever order its listings, events and rescans come in.
@Suite struct QueryServiceTests {
    /// The service on a real folder, with what it asked recorded.
    private final class Recorder: @unchecked Sendable {
        let lock = NSLock()
        var outputs: [QueryService.Output] = []
        /// The thread each `add` came from.
        var threads: [pthread_t] = []
        func add(_ more: [QueryService.Output]) {
            lock.withLock {
                outputs += more
                threads.append(pthread_self())
            }
        }
        var all: [QueryService.Output] { lock.withLock { outputs } }
        /// Whether the last `add` came from `thread`.
        func lastCame(from thread: pthread_t) -> Bool {
            lock.withLock { threads.last.map { pthread_equal($0, thread) != 0 } ?? false }
        }
    }

    private let root: String
    private let recorder = Recorder()
    private let service: QueryService

    init() throws {
        root = NSTemporaryDirectory() + "fc-query-service-\(UUID().uuidString)"
        for folder in ["a", "a/b", "c"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        #expect(FileManager.default.createFile(atPath: root + "/a/b/f.txt", contents: Data("x".utf8)))
        let recorder = self.recorder
        service = QueryService(logger: Logger(label: "test")) { recorder.add($0) }
    }

    private func path(_ relative: String = "") -> ItemPath {
        try! ItemPath(absolute: relative.isEmpty ? root : root + "/" + relative)
    }

    /// Waits until the service's queue has run what was asked before, and is idle: the job that held it for `sync`
    /// ends a moment after `sync` returns, and a batch asked before that would not be read on the caller's thread.
    private func settle() {
        service.queue.sync {}
        let deadline = ContinuousClock.now + .seconds(10)
        while !service.queue.isIdle, ContinuousClock.now < deadline { sched_yield() }
    }

    /// The barriers asked and not yet passed.
    private func barriers(after seen: Int) -> [UInt64] {
        recorder.all.dropFirst(seen).compactMap { if case .barrier(let token) = $0 { token } else { nil } }
    }

    /// Passes every barrier as it is asked, until none is left.
    private func passBarriers(from start: Int = 0) {
        var seen = start
        while true {
            settle()
            let tokens = barriers(after: seen)
            seen = recorder.all.count
            guard !tokens.isEmpty else { return }
            service.barriersPassed(tokens)
        }
    }

    /// How many watches each folder holds, as the host counts `watch` and `unwatch` (a `rewatch` is not counted).
    private var counts: [ItemPath: Int] {
        var counts: [ItemPath: Int] = [:]
        for output in recorder.all {
            switch output {
            case .watch(let folder): counts[folder, default: 0] += 1
            case .unwatch(let folder): counts[folder, default: 0] -= 1
            default: break
            }
        }
        return counts.filter { $0.value != 0 }
    }

    @Test func aTreeStoppedAndStartedAgainBeforeItsListingsLeavesNoWatch() {
        let first = QueryService.QueryKey(client: ClientID(1), local: 1)
        let second = QueryService.QueryKey(client: ClientID(1), local: 2)
        service.start(first, scopes: [path()])
        settle()
        let stale = barriers(after: 0)
        service.stop(first)
        service.start(second, scopes: [path()])
        settle()
        // The first tree's listing arrives after a tree of the same root was made: before, it was read into the new
        // tree, whose folders were then asked to be watched twice and let go once.
        service.barriersPassed(stale)
        passBarriers()
        #expect(counts[path("a")] == 1, "\(counts)")
        service.stop(second)
        settle()
        #expect(counts.isEmpty, "watches left after every query stopped: \(counts)")
    }

    /// What a rescan of the tree at the root finds removed, read on a thread as nobody (``onThreadAsNobody(_:)``), with
    /// the service's queue idle (it runs on the queue, whose threads are not the test's to change).
    private func rescanAsNobody() throws -> Set<ItemPath>? {
        let (service, root) = (self.service, path())
        return try onThreadAsNobody {
            guard let tree = service.trees[root] else { return nil }
            var delta = QueryTree.Delta()
            _ = service.rescan(tree, into: &delta)
            return delta.removed
        }
    }

    /// An item that cannot be read (`EACCES`: its folder lost its search permission) is kept as it was: before, an
    /// event for it took it for gone, and it left every query's results until it changed again.
    @Test func anItemThatCannotBeReadIsKeptNotTakenForGone() throws {
        try FileManager.default.createDirectory(atPath: root + "/a/b/x/y", withIntermediateDirectories: true)
        let key = QueryService.QueryKey(client: ClientID(1), local: 1)
        service.start(key, scopes: [path()])
        passBarriers()
        settle()
        let folder = root + "/a/b"
        try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: folder)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder) }
        // The tests run as root, which reads a folder of mode 0 whatever its mode: the event is read on a thread of
        // its own whose file system uid is nobody's (setfsuid acts on the calling thread only), where the service
        // reads a small batch when its queue is idle.
        let before = recorder.all.count
        let service = self.service
        let recorder = self.recorder
        let event = FileSystemEvent.changed(path("a/b/f.txt"))
        let (onReader, denied) = try onThreadAsNobody {
            var buffer = stat()
            let denied = lstat(folder + "/f.txt", &buffer) != 0 && errno == EACCES
            service.fileSystemChanged([event])
            return (recorder.lastCame(from: pthread_self()), denied)
        }
        try #require(denied, "the thread's lstat was not refused: the test cannot see the defect")
        try #require(onReader, "the batch was not read on the thread without root's rights")
        let removed = recorder.all.dropFirst(before).flatMap { output -> [ItemPath] in
            if case .items(_, _, _, let removed, _, _) = output { removed } else { [] }
        }
        #expect(removed.isEmpty, "an item that could not be read was told as removed: \(removed)")
        // A rescan (after an overflow) keeps what a folder that cannot be listed holds.
        settle()
        let rescanned = try rescanAsNobody()
        #expect(rescanned == [], "a rescan took what a folder it could not list holds for gone: \(rescanned)")
        // Listed but not searchable (mode r--, `chmod a-x`): every entry's fstatat fails; kept, and x's subtree too.
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: folder)
        let listedOnly = try rescanAsNobody()
        #expect(listedOnly == [], "a rescan took what a listed folder it cannot search holds for gone: \(listedOnly)")
        service.stop(key)
        settle()
    }

    @Test func aFewEventsAreReadOnTheWatchersThreadWhenTheQueueIsIdle() throws {
        let key = QueryService.QueryKey(client: ClientID(1), local: 1)
        service.start(key, scopes: [path()])
        passBarriers()
        settle()
        // Idle: the create is read before fileSystemChanged returns, on this (the watcher's) thread: no thread hop
        // between the watcher and the frame's way to the loop (issue 44).
        #expect(FileManager.default.createFile(atPath: root + "/new.txt", contents: Data("n".utf8)))
        var before = recorder.all.count
        service.fileSystemChanged([.created(path("new.txt"), isDirectory: false)])
        let told = recorder.all.dropFirst(before).flatMap { output -> [ItemPath] in
            if case .items(_, let added, _, _, _, _) = output { added.map(\.0) } else { [] }
        }
        #expect(told == [path("new.txt")])
        #expect(recorder.lastCame(from: pthread_self()))
        // A deletion is not read here (it may take a folder's whole subtree out): it goes to the queue's thread.
        try FileManager.default.removeItem(atPath: root + "/new.txt")
        before = recorder.all.count
        service.fileSystemChanged([.deleted(path("new.txt"))])
        settle()
        #expect(recorder.all.count > before)
        #expect(!recorder.lastCame(from: pthread_self()))
        // Busy (a job holds the queue): the batch waits its turn, and is read once the job ends.
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        service.queue.async {
            started.signal()
            release.wait()
        }
        started.wait()
        #expect(FileManager.default.createFile(atPath: root + "/later.txt", contents: Data("l".utf8)))
        before = recorder.all.count
        service.fileSystemChanged([.created(path("later.txt"), isDirectory: false)])
        #expect(recorder.all.count == before)
        release.signal()
        settle()
        #expect(recorder.all.count > before)
        service.stop(key)
        settle()
    }

    /// What each query was told of folders not watched since output `start`: (query, folder).
    private func unwatchedTold(after start: Int) -> [(QueryService.QueryKey, ItemPath)] {
        recorder.all.dropFirst(start).compactMap { output in
            guard case .watchUnavailable(let key, let folder, let reason) = output else { return nil }
            #expect(reason == "the cap")
            return (key, folder)
        }
    }

    /// A folder of a tree whose watch failed (a cap, the kernel's limit, the watcher stopped): before, the queries
    /// were not told, and went on as if live while deaf to changes there.
    @Test func aFolderThatCannotBeWatchedIsToldToEachQueryOnce() throws {
        let first = QueryService.QueryKey(client: ClientID(1), local: 1)
        let second = QueryService.QueryKey(client: ClientID(2), local: 1)
        service.start(first, scopes: [path()])
        passBarriers()
        var start = recorder.all.count
        service.fileSystemChanged([
            .watchFailed(path("c"), reason: "the cap"), .watchFailed(path("a"), reason: "the cap"),
        ])
        // A folder of no tree, and one failing again, tell nothing.
        service.fileSystemChanged([.watchFailed(try ItemPath(absolute: "/elsewhere"), reason: "the cap")])
        service.fileSystemChanged([.watchFailed(path("c"), reason: "the cap")])
        settle()
        var told = unwatchedTold(after: start)
        #expect(told.map(\.0) == [first] && told.map(\.1) == [path("c")], "\(told)")
        #expect(service.summaries.map(\.unwatched) == [2])
        // A query that joins is told at once (the first folder by path).
        start = recorder.all.count
        service.start(second, scopes: [path()])
        settle()
        told = unwatchedTold(after: start)
        #expect(told.map(\.0) == [second] && told.map(\.1) == [path("a")], "\(told)")
        // Watched later (after an overflow the watcher tries every wanted folder again, and the cap had room): live
        // again, and what was made in them while unwatched (no event came) is read and told. Before, fcdump went on
        // counting them, and what changed meanwhile was never told.
        #expect(FileManager.default.createFile(atPath: root + "/c/unseen", contents: Data("u".utf8)))
        start = recorder.all.count
        service.watchesAdded([path("a")])
        settle()
        #expect(service.summaries.map(\.unwatched) == [1])
        #expect(!recorder.all.dropFirst(start).contains { if case .watchAvailable = $0 { true } else { false } })
        service.watchesAdded([path("c")])
        settle()
        #expect(service.summaries.map(\.unwatched) == [0])
        let caughtUp = recorder.all.dropFirst(start).flatMap { output -> [ItemPath] in
            if case .items(_, let added, _, _, _, _) = output { added.map(\.0) } else { [] }
        }
        #expect(caughtUp == [path("c/unseen"), path("c/unseen")], "told to each query: \(caughtUp)")
        // And each query is told that the tree is watched again, after what it caught up (no message said so before:
        // a query's log kept the warning as the last word).
        let since = Array(recorder.all.dropFirst(start))
        let available = since.indices.compactMap { index -> (Int, QueryService.QueryKey)? in
            guard case .watchAvailable(let key, let root) = since[index] else { return nil }
            #expect(root == path())
            return (index, key)
        }
        #expect(available.map(\.1) == [first, second], "\(since)")
        let lastItems = since.lastIndex { if case .items = $0 { true } else { false } } ?? .max
        #expect(available.allSatisfy { $0.0 > lastItems }, "\(since)")
        // Both folders go: none is left unwatched, and a new failure is told again, to both queries.
        try FileManager.default.removeItem(atPath: root + "/a")
        try FileManager.default.removeItem(atPath: root + "/c")
        service.fileSystemChanged([.deleted(path("a")), .deleted(path("c"))])
        settle()
        #expect(service.summaries.map(\.unwatched) == [0])
        try FileManager.default.createDirectory(atPath: root + "/c", withIntermediateDirectories: false)
        start = recorder.all.count
        service.fileSystemChanged([.created(path("c"), isDirectory: true)])
        passBarriers(from: start)
        service.fileSystemChanged([.watchFailed(path("c"), reason: "the cap")])
        settle()
        told = unwatchedTold(after: start)
        #expect(told.map(\.0) == [first, second] && told.allSatisfy { $0.1 == path("c") }, "\(told)")
        service.stop(first)
        service.stop(second)
        settle()
        #expect(counts.isEmpty, "watches left after the queries stopped: \(counts)")
    }

    @Test func aFileReplacedByAFolderInOneBatchIsWatchedAndListed() throws {
        #expect(FileManager.default.createFile(atPath: root + "/e", contents: Data("file".utf8)))
        let key = QueryService.QueryKey(client: ClientID(1), local: 1)
        service.start(key, scopes: [path()])
        passBarriers()
        // e becomes a folder holding g, in one batch: before, e was known (as a file), so the folder was never
        // watched nor listed, and g never told.
        try FileManager.default.removeItem(atPath: root + "/e")
        try FileManager.default.createDirectory(atPath: root + "/e", withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: root + "/e/g", contents: Data("g".utf8)))
        let before = recorder.all.count
        service.fileSystemChanged([.deleted(path("e")), .created(path("e"), isDirectory: true)])
        passBarriers(from: before)
        #expect(counts[path("e")] == 1, "\(counts)")
        let told = recorder.all.dropFirst(before).flatMap { output -> [ItemPath] in
            if case .items(_, let added, _, _, _, _) = output { added.map(\.0) } else { [] }
        }
        #expect(told.contains(path("e/g")), "\(told)")
        // And an overflow now (a rescan) asks for no second watch of e.
        service.fileSystemChanged([.overflow])
        passBarriers(from: recorder.all.count)
        service.stop(key)
        settle()
        #expect(counts.isEmpty, "watches left after the query stopped: \(counts)")
    }

    @Test func aFolderDeletedAndMadeAgainInOneBatchKeepsItsWatch() throws {
        let key = QueryService.QueryKey(client: ClientID(1), local: 1)
        service.start(key, scopes: [path()])
        passBarriers()
        #expect(counts[path("c")] == 1, "\(counts)")
        // c is deleted and made again, with g in it, before the service reads the batch of both events: the kernel
        // dropped the old c's watch, so the new c is let go and watched anew, and listed. Before, the deletion was
        // read as a change of c (the service reads what is there when it reads the batch): c was neither watched
        // nor listed again, g was never told, nor anything made in c later.
        try FileManager.default.removeItem(atPath: root + "/c")
        try FileManager.default.createDirectory(atPath: root + "/c", withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: root + "/c/g", contents: Data("g".utf8)))
        let before = recorder.all.count
        service.fileSystemChanged([.deleted(path("c")), .created(path("c"), isDirectory: true)])
        passBarriers(from: before)
        #expect(counts[path("c")] == 1, "\(counts)")
        let told = recorder.all.dropFirst(before).flatMap { output -> [ItemPath] in
            if case .items(_, let added, _, _, _, _) = output { added.map(\.0) } else { [] }
        }
        #expect(told.contains(path("c/g")), "\(told)")
        let forC = recorder.all.dropFirst(before).compactMap { output -> String? in
            switch output {
            case .watch(let folder) where folder == path("c"): "watch"
            case .rewatch(let folder) where folder == path("c"): "rewatch"
            case .unwatch(let folder) where folder == path("c"): "unwatch"
            default: nil
            }
        }
        #expect(forC == ["unwatch", "watch"])
        // Twice in one batch (made, deleted and made again before the batch is read): still one watch, let go with
        // the query. Before, c was asked for twice and let go once.
        let again = recorder.all.count
        service.fileSystemChanged([
            .deleted(path("c")), .created(path("c"), isDirectory: true),
            .deleted(path("c")), .created(path("c"), isDirectory: true),
        ])
        passBarriers(from: again)
        #expect(counts[path("c")] == 1, "\(counts)")
        service.stop(key)
        settle()
        #expect(counts.isEmpty, "watches left after the query stopped: \(counts)")
    }

    @Test func anOverflowDuringTheGatheringIsReadAgainBeforeTheHandover() throws {
        let key = QueryService.QueryKey(client: ClientID(1), local: 1)
        service.start(key, scopes: [path()])
        settle()
        // The root is listed; a file is made in a folder already listed and its event is lost in an overflow.
        let first = barriers(after: 0)
        service.barriersPassed(first)
        settle()
        #expect(FileManager.default.createFile(atPath: root + "/lost.txt", contents: Data("y".utf8)))
        service.fileSystemChanged([.overflow])
        passBarriers()
        let handedOver = recorder.all.flatMap { output -> [ItemPath] in
            if case .items(_, let added, _, _, _, _) = output { added.map(\.0) } else { [] }
        }
        // Before, an overflow during the gathering was not read again: lost.txt was missing until it changed.
        #expect(handedOver.contains(path("lost.txt")), "\(handedOver)")
        service.stop(key)
        settle()
        #expect(counts.isEmpty, "\(counts)")
    }

    /// What the `.items` outputs to `key` say, applied in order as the client applies them (what is added, then
    /// what is removed), and how many of them said the gathering ended.
    private func applied(to key: QueryService.QueryKey) -> (items: Set<ItemPath>, ends: Int) {
        var items: Set<ItemPath> = []
        var ends = 0
        for case .items(key, let added, let changed, let removed, let gathered, _) in recorder.all {
            items.formUnion((added + changed).map(\.0))
            items.subtract(removed)
            if gathered { ends += 1 }
        }
        return (items, ends)
    }

    @Test func aGatheringSendsWhatItReadsAsItGoesWithTheChangesMeanwhile() throws {
        // A piece's worth of files at the root, and some more.
        let files = QueryService.itemsPerMessage + 50
        for index in 0..<files {
            #expect(FileManager.default.createFile(atPath: root + "/r\(index)", contents: nil))
        }
        let first = QueryService.QueryKey(client: ClientID(1), local: 1)
        let second = QueryService.QueryKey(client: ClientID(2), local: 1)
        service.start(first, scopes: [path()])
        settle()
        service.barriersPassed(barriers(after: 0))
        settle()
        // The root is listed, its folders not yet: a full piece of what it holds is sent already (before, nothing
        // went out until the whole tree was read); the rest waits for the next piece.
        let early = applied(to: first)
        #expect(early.items.count == QueryService.itemsPerMessage && early.ends == 0)
        // A query that joins now gets what the tree holds so far (the first query the rest of its piece), then the
        // pieces that follow.
        service.start(second, scopes: [path()])
        settle()
        let atRoot = Set((0..<files).map { path("r\($0)") } + [path("a"), path("c")])
        #expect(applied(to: first) == (atRoot, 0))
        #expect(applied(to: second) == (atRoot, 0))
        // c goes while the tree is gathered: its queries had it, so its removal is sent too.
        try FileManager.default.removeItem(atPath: root + "/c")
        service.fileSystemChanged([.deleted(path("c"))])
        passBarriers()
        let tree = atRoot.subtracting([path("c")]).union([path("a/b"), path("a/b/f.txt")])
        #expect(applied(to: first) == (tree, 1))
        #expect(applied(to: second) == (tree, 1))
        // The end of the gathering is each query's last frame.
        let last = recorder.all.last { if case .items(first, _, _, _, _, _) = $0 { true } else { false } }
        guard case .items(_, _, _, _, true, _)? = last else {
            Issue.record("the gathering's end was not the last frame: \(String(describing: last))")
            return
        }
        service.stop(first)
        service.stop(second)
        settle()
        #expect(counts.isEmpty, "\(counts)")
    }

    @Test func aLevelOfManyFoldersIsListedInGroupsAndEndsOnceAfterTheLast() throws {
        // 20 folders more at the root: with a, c and the 8 folders per barrier, three listings of the level.
        for index in 0..<20 {
            try FileManager.default.createDirectory(atPath: root + "/m\(index)", withIntermediateDirectories: false)
            #expect(FileManager.default.createFile(atPath: root + "/m\(index)/f", contents: Data("z".utf8)))
        }
        let key = QueryService.QueryKey(client: ClientID(1), local: 1)
        service.start(key, scopes: [path()])
        settle()
        service.barriersPassed(barriers(after: 0))
        settle()
        // The root's listing asked for its 22 folders' watches in three groups, each with its barrier.
        let groups = barriers(after: 0).count
        #expect(groups == 1 + 3, "\(groups) barriers")
        // Passed one at a time, last first: the gathering ends only with the last listing, once.
        var seen = recorder.all.count
        var pending = Array(barriers(after: 1).reversed())
        while let token = pending.first {
            pending.removeFirst()
            #expect(applied(to: key).ends == 0, "the gathering ended with listings left")
            service.barriersPassed([token])
            settle()
            pending += barriers(after: seen)
            seen = recorder.all.count
        }
        #expect(applied(to: key).ends == 1)
        #expect(applied(to: key).items.count == 2 + 1 + 20 * 2 + 1)
        service.stop(key)
        settle()
        #expect(counts.isEmpty, "\(counts)")
    }

    @Test func aFolderDeletedBeforeItsListingLeavesNoNode() throws {
        let key = QueryService.QueryKey(client: ClientID(1), local: 1)
        service.start(key, scopes: [path()])
        settle()
        service.barriersPassed(barriers(after: 0))
        settle()
        // c is deleted, and its event read, before the barrier of its watch passes: its listing finds it gone.
        let seen = recorder.all.count
        try FileManager.default.removeItem(atPath: root + "/c")
        service.fileSystemChanged([.deleted(path("c"))])
        settle()
        service.barriersPassed(barriers(after: 1))
        passBarriers(from: seen)
        // The root, a and a/b; before, c's listing made its node again, empty, for as long as the tree lived.
        #expect(service.folderNodes(of: path()) == 3)
        #expect(applied(to: key) == ([path("a"), path("a/b"), path("a/b/f.txt")], 1))
        service.stop(key)
        settle()
        #expect(counts.isEmpty, "\(counts)")
    }
}

/// Runs `body` on a thread of its own whose file system uid is nobody's (65534): its file access is checked as an
/// ordinary user's, root's capabilities for files dropped (the kernel does so when the file system uid leaves 0), on
/// that thread only. The uid is set back before the thread ends.
private func onThreadAsNobody<T: Sendable>(_ body: @escaping @Sendable () -> T) throws -> T {
    let result = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        _ = setFileSystemUserID(65_534)
        result.withLock { $0 = body() }
        _ = setFileSystemUserID(0)
        done.signal()
    }
    thread.start()
    guard done.wait(timeout: .now() + 30) == .success, let value = result.withLock({ $0 }) else {
        throw CocoaError(.featureUnsupported)
    }
    return value
}

/// glibc's `setfsuid(2)`, which its Swift module does not export (`<sys/fsuid.h>`): acts on the calling thread only.
@_silgen_name("setfsuid")
private func setFileSystemUserID(_ uid: UInt32) -> Int32
