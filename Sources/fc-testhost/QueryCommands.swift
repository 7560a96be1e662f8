import FileCoordination
import Foundation
import Synchronization

// fc-testhost's live query commands (issue 44); see the command list in main.swift.
//
//   query NAME FOLDER [INTERVAL-MS] [FORMAT...]
//                            starts an NSMetadataQuery of FOLDER (batching INTERVAL-MS, default 200), with the
//                            predicate FORMAT (the rest of the line) if given; prints `query NAME started` (or
//                            `query NAME refused`), `query NAME gathered COUNT` and, per update,
//                            `query NAME update added=P,... changed=P,... removed=P,...` (paths relative to FOLDER, in
//                            order, `-` for none)
//   query-block NAME FOLDER  the same, with a block predicate that keeps every item and counts the calls made on the
//                            library's listener thread (`fc.listener`; batching interval 0)
//   query-threads NAME       prints `query NAME block calls N on the reader M` (a query-block's predicate)
//   query-stop NAME          stops it
//   query-count NAME         prints `query NAME count COUNT`
//   query-keep NAME          keeps the query's result items as they are now; prints `query NAME kept COUNT`
//   query-index NAME         prints `query NAME index I,J,...`: `index(ofResult:)` of each kept item, in the kept
//                            order (`-` for NSNotFound); a kept item replaced since by a change is a different object

/// The queries this host runs, by the names the test gave.
final class QueryCommands: Sendable {
    static let shared = QueryCommands()

    // NSMetadataQuery and the observers are only touched under the lock.
    private struct State: @unchecked Sendable {
        var queries: [String: NSMetadataQuery] = [:]
        var observers: [any NSObjectProtocol] = []
        /// A query-block's predicate calls, and those made on the library's reading thread, by query name.
        var blockCalls: [String: (all: Int, onReader: Int)] = [:]
        /// The result items `query-keep` kept, by query name.
        var kept: [String: [Any]] = [:]
    }
    private let state = Mutex(State())
    private let queue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()

    func run(_ command: String, _ arguments: [String]) {
        guard let name = arguments.first else { return say("error \(command) needs a name") }
        switch command {
        case "query" where arguments.count >= 2, "query-block" where arguments.count == 2:
            let folder = arguments[1]
            var rest = Array(arguments.dropFirst(2))
            var interval = command == "query-block" ? 0 : 0.2
            if let first = rest.first, let milliseconds = Double(first) {
                interval = milliseconds / 1000
                rest.removeFirst()
            }
            let query = NSMetadataQuery()
            query.searchScopes = [URL(fileURLWithPath: folder)]
            if !rest.isEmpty { query.predicate = NSPredicate(format: rest.joined(separator: " "), argumentArray: nil) }
            if command == "query-block" {
                query.predicate = NSPredicate { [self] _, _ in
                    // The name the library gives its reading thread, as the kernel keeps it; a name that cannot be
                    // read counts as one on the reader (the test then fails instead of passing unseen).
                    let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
                    let onReader = comm.map { $0.trimmingCharacters(in: .newlines) == "fc.listener" } ?? true
                    state.withLock { state in
                        let calls = state.blockCalls[name, default: (0, 0)]
                        state.blockCalls[name] = (calls.all + 1, calls.onReader + (onReader ? 1 : 0))
                    }
                    return true
                }
            }
            query.notificationBatchingInterval = interval
            query.operationQueue = queue
            let prefix = folder.hasSuffix("/") ? folder : folder + "/"
            @Sendable func relative(_ items: Any?) -> String {
                let paths = ((items as? [NSMetadataItem]) ?? []).compactMap {
                    ($0.value(forAttribute: NSMetadataItemPathKey) as? String).map {
                        $0.hasPrefix(prefix) ? String($0.dropFirst(prefix.count)) : $0
                    }
                }
                return paths.isEmpty ? "-" : paths.sorted().joined(separator: ",")
            }
            let center = NotificationCenter.default
            let finished = center.addObserver(forName: .NSMetadataQueryDidFinishGathering, object: query, queue: nil) {
                _ in say("query \(name) gathered \(query.resultCount)")
            }
            let updated = center.addObserver(forName: .NSMetadataQueryDidUpdate, object: query, queue: nil) {
                note in
                let info = note.userInfo ?? [:]
                say(
                    "query \(name) update added=\(relative(info[NSMetadataQueryUpdateAddedItemsKey])) "
                        + "changed=\(relative(info[NSMetadataQueryUpdateChangedItemsKey])) "
                        + "removed=\(relative(info[NSMetadataQueryUpdateRemovedItemsKey]))"
                )
            }
            state.withLock { state in
                state.queries[name] = query
                state.observers += [finished, updated]
            }
            say(query.start() ? "query \(name) started" : "query \(name) refused")
        case "query-stop":
            guard let query = state.withLock({ $0.queries[name] }) else { return say("error no query \(name)") }
            query.stop()
            say("query \(name) stopped")
        case "query-threads":
            let calls = state.withLock { $0.blockCalls[name, default: (0, 0)] }
            say("query \(name) block calls \(calls.all) on the reader \(calls.onReader)")
        case "query-count":
            guard let query = state.withLock({ $0.queries[name] }) else { return say("error no query \(name)") }
            say("query \(name) count \(query.resultCount)")
        case "query-keep":
            guard let query = state.withLock({ $0.queries[name] }) else { return say("error no query \(name)") }
            let items = query.results
            state.withLock { $0.kept[name] = items }
            say("query \(name) kept \(items.count)")
        case "query-index":
            guard let query = state.withLock({ $0.queries[name] }) else { return say("error no query \(name)") }
            let kept = state.withLock { $0.kept[name] ?? [] }
            let indices = kept.map { item -> String in
                let index = query.index(ofResult: item)
                return index == NSNotFound ? "-" : String(index)
            }
            say("query \(name) index \(indices.joined(separator: ","))")
        default:
            say("error unknown command: \(command) \(arguments.joined(separator: " "))")
        }
    }
}
