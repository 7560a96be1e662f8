import FCCore
import FCSystem
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
        func add(_ more: [QueryService.Output]) { lock.withLock { outputs += more } }
        var all: [QueryService.Output] { lock.withLock { outputs } }
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

    /// Waits until the service's queue has run what was asked before.
    private func settle() { service.queue.sync {} }

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
}
