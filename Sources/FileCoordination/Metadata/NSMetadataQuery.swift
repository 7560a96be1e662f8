import FCCore
import FCProtocol
import FCToolkit
public import Foundation
import Logging

/// A live query of folder trees, with Apple's Swift signatures (issue 44; docs/SEMANTICS.md §18): the items under
/// ``searchScopes`` that match ``predicate``, gathered, then kept current as any process changes them, coordinated or
/// not.
///
/// filecoordd gathers and watches each tree once for every query of every process (its inotify watcher); the query
/// filters the items with its predicate in this process. The notifications (`.NSMetadataQueryDidStartGathering`,
/// `…GatheringProgress`, `…DidFinishGathering`, `…DidUpdate`) are posted to `NotificationCenter.default` with the
/// query as their object, on ``operationQueue`` when it is set, else on the main queue (swift-corelibs-foundation
/// has no run loop to tie them to the thread that called ``start()``, as Apple does). Updates are batched: one
/// `…DidUpdate` per ``notificationBatchingInterval`` at most.
///
/// Scopes: folder URLs or paths, and `NSMetadataQueryUserHomeScope` (the home folder). The ubiquitous scopes, the
/// local computer and the network are refused: ``start()`` returns `false` and logs why. ``searchItems`` narrows the
/// results to those items (and what is inside the folders among them); ``valueListAttributes`` and
/// ``groupingAttributes`` give ``valueLists`` and ``groupedResults``, made from the results when read; the
/// ``delegate`` may replace result objects and attribute values. A query needs filecoordd: a process that coordinates
/// in process cannot start one.
///
/// - Important: Thread-safe: its properties may be read and set from any thread; changes to its results happen on
///   its own serial queue and show in ``results`` when their notification is posted.
// @unchecked: every mutable field is under `state`'s lock, or confined to `work`.
open class NSMetadataQuery: NSObject, @unchecked Sendable {
    private struct Settings {
        var predicate: NSPredicate?
        var searchScopes: [Any] = []
        var notificationBatchingInterval: TimeInterval = 1
        var operationQueue: OperationQueue?
        var sortDescriptors: [NSSortDescriptor] = []
        var started = false
        var gathering = false
        var stopped = false
        var updatesDisabled = 0
        /// From ``disableUpdates()`` until the flush the last ``enableUpdates()`` queued has run: changes pile up, so
        /// no frame is read on the connection's reading thread (its flush would tell them all there).
        var holdsChanges = false
        /// The results as of the last notification: a copy of the query's own, which shares its unchanged nodes.
        var results = RankedTree<NSMetadataItem>()
        /// ``results`` as an array, once a reader asked for it (`nil` again at each change).
        var resultArray: [NSMetadataItem]?
        /// The result set's index by path is made, so a change costs O(log n) (``MetadataQueryResults``): a frame of
        /// changes may be read on the connection's reading thread.
        var indexed = false
        var id: UInt64?
        var valueListAttributes: [String] = []
        var groupingAttributes: [String]?
        var searchItems: [Any]?
        var delegate = WeakDelegate()
    }

    private struct WeakDelegate {
        weak var value: (any NSMetadataQueryDelegate)?
    }

    private let state = Locked(Settings())
    /// Serial; a small frame of changes is read on the connection's reading thread when nothing waits here
    /// (``start()``), so that a change reaches the operation queue with one thread hop less (issue 44).
    private let work = IdleInlineQueue(label: "filecoord.metadata-query")
    /// Only on `work`.
    private var resultSet: MetadataQueryResults?
    /// Only on `work`: ``Settings/indexed`` as last set.
    private var toldIndexed = false
    /// Only on `work`: when the result count is told the daemon (for fcdump).
    private let countReports = ResultCountReports()
    private var batchScheduled = false
    /// The most changes of one frame read on the connection's reading thread, so that the other frames it reads
    /// wait little (each costs O(log n) among n results).
    static let changesReadOnReader = 16

    public override init() {
        super.init()
    }

    /// Which items match; `nil` matches every item.
    open var predicate: NSPredicate? {
        get { state.withLock { $0.predicate } }
        set { state.withLock { $0.predicate = newValue } }
    }

    /// The folders to search: `URL`s, paths, or `NSMetadataQueryUserHomeScope`.
    open var searchScopes: [Any] {
        get { state.withLock { $0.searchScopes } }
        set { state.withLock { $0.searchScopes = newValue } }
    }

    /// The results' order: descriptors made with `NSSortDescriptor(key:ascending:)` sort by that attribute (others
    /// are ignored); then by path. Read at ``start()``.
    open var sortDescriptors: [NSSortDescriptor] {
        get { state.withLock { $0.sortDescriptors } }
        set { state.withLock { $0.sortDescriptors = newValue } }
    }

    /// The shortest time between two `…DidUpdate` notifications, in seconds (1 by default).
    open var notificationBatchingInterval: TimeInterval {
        get { state.withLock { $0.notificationBatchingInterval } }
        set { state.withLock { $0.notificationBatchingInterval = max(0, newValue) } }
    }

    /// Where the notifications are posted; the main queue when `nil`.
    open var operationQueue: OperationQueue? {
        get { state.withLock { $0.operationQueue } }
        set { state.withLock { $0.operationQueue = newValue } }
    }

    /// Replaces result objects and attribute values as the results are read (not retained, as Apple's).
    open var delegate: (any NSMetadataQueryDelegate)? {
        get { state.withLock { $0.delegate.value } }
        set { state.withLock { $0.delegate.value = newValue } }
    }

    /// The attributes whose distinct values ``valueLists`` counts.
    open var valueListAttributes: [String] {
        get { state.withLock { $0.valueListAttributes } }
        set { state.withLock { $0.valueListAttributes = newValue } }
    }

    /// The attributes ``groupedResults`` groups by, outermost first; `nil` for no groups.
    open var groupingAttributes: [String]? {
        get { state.withLock { $0.groupingAttributes } }
        set { state.withLock { $0.groupingAttributes = newValue } }
    }

    /// The items to search (`URL`s, paths, `NSMetadataItem`s), within ``searchScopes``: the results are those items
    /// and what lies inside the folders among them. `nil` for all of the scopes. Read at ``start()``.
    open var searchItems: [Any]? {
        get { state.withLock { $0.searchItems } }
        set { state.withLock { $0.searchItems = newValue } }
    }

    /// ``start()`` succeeded.
    open var isStarted: Bool { state.withLock { $0.started } }
    /// Started, and the first gathering is not done.
    open var isGathering: Bool { state.withLock { $0.gathering } }
    /// ``stop()`` was called after a start.
    open var isStopped: Bool { state.withLock { $0.stopped } }

    /// The matching items, in path order, as of the last notification (or the delegate's replacements of them).
    open var results: [Any] { replaced((resultItems(), state.withLock { $0.delegate.value })) }
    /// How many items ``results`` holds.
    open var resultCount: Int { state.withLock { $0.results.count } }
    /// The item at `idx` of ``results`` (an `NSMetadataItem`, or the delegate's replacement): O(log n).
    open func result(at idx: Int) -> Any { replaced(state.withLock { ([$0.results[idx]], $0.delegate.value) })[0] }

    /// The results as an array: made once per change of them, when first asked for, and outside the lock (the
    /// connection's reading thread looks at the state, and should not wait while 100,000 results are copied).
    private func resultItems() -> [NSMetadataItem] {
        let (tree, made) = state.withLock { ($0.results, $0.resultArray) }
        if let made { return made }
        let items = Array(tree)
        state.withLock { if $0.results.isSameCopy(as: tree) { $0.resultArray = items } }
        return items
    }

    /// Calls `block` with each of ``results`` and its index, until it sets its last argument to `true`.
    open func enumerateResults(_ block: (Any, Int, UnsafeMutablePointer<ObjCBool>) -> Void) {
        enumerateResults(options: [], using: block)
    }

    /// Calls `block` with each of ``results`` and its index (last first with `.reverse`; one at a time, also with
    /// `.concurrent`), until it sets its last argument to `true`.
    open func enumerateResults(
        options opts: NSEnumerationOptions = [],
        using block: (Any, Int, UnsafeMutablePointer<ObjCBool>) -> Void
    ) {
        let all = results
        var stop = ObjCBool(false)
        let indices = opts.contains(.reverse) ? Array(all.indices.reversed()) : Array(all.indices)
        for index in indices {
            block(all[index], index, &stop)
            if stop.boolValue { return }
        }
    }

    /// Each of ``valueListAttributes`` with its distinct values among ``results`` and how many have each.
    open var valueLists: [String: [NSMetadataQueryAttributeValueTuple]] {
        let items = resultItems()
        let (attributes, delegate) = state.withLock { ($0.valueListAttributes, $0.delegate.value) }
        return MetadataQueryGroups.valueLists(of: items, attributes: attributes) { item, attribute in
            shown(item, attribute, delegate)
        }
    }

    /// ``results`` grouped by ``groupingAttributes`` (empty without them).
    open var groupedResults: [NSMetadataQueryResultGroup] {
        let items = resultItems()
        let (attributes, delegate) = state.withLock { ($0.groupingAttributes, $0.delegate.value) }
        return MetadataQueryGroups.groups(
            of: items,
            by: (attributes ?? [])[...],
            value: { item, attribute in shown(item, attribute, delegate) },
            results: { replaced(($0, delegate)) }
        )
    }

    /// `items` as ``results`` shows them: the delegate's replacements.
    private func replaced(_ items: ([NSMetadataItem], (any NSMetadataQueryDelegate)?)) -> [Any] {
        guard let delegate = items.1 else { return items.0 }
        return items.0.map { delegate.metadataQuery(self, replacementObjectForResultObject: $0) }
    }

    /// An attribute's value as the delegate shows it.
    private func shown(_ item: NSMetadataItem, _ attribute: String, _ delegate: (any NSMetadataQueryDelegate)?) -> Any?
    {
        guard let value = item.value(forAttribute: attribute) else { return nil }
        return delegate?.metadataQuery(self, replacementValueForAttribute: attribute, value: value) ?? value
    }

    /// The index of `result` (an item of ``results``, or one with the same path, compared byte for byte as the
    /// results tell paths apart), or `NSNotFound`.
    open func index(ofResult result: Any) -> Int {
        guard let item = result as? NSMetadataItem else { return NSNotFound }
        return resultItems().firstIndex { $0 === item || $0.pathBytes == item.pathBytes } ?? NSNotFound
    }

    /// The attribute `attrName` of the item at `idx` of ``results``.
    open func value(ofAttribute attrName: String, forResultAt idx: Int) -> Any? {
        let (item, delegate) = state.withLock { ($0.results[idx], $0.delegate.value) }
        return shown(item, attrName, delegate)
    }

    /// Holds the `…DidUpdate` notifications (and the changes of ``results``) until as many ``enableUpdates()``.
    open func disableUpdates() {
        state.withLock { state in
            state.updatesDisabled += 1
            state.holdsChanges = true
        }
    }

    /// Ends one ``disableUpdates()``; after the last, what happened meanwhile is told in one `…DidUpdate`.
    open func enableUpdates() {
        let resume = state.withLock { state -> Bool in
            state.updatesDisabled = max(0, state.updatesDisabled - 1)
            return state.updatesDisabled == 0
        }
        guard resume else { return }
        work.async {
            self.flushIfPending()
            self.state.withLock { if $0.updatesDisabled == 0 { $0.holdsChanges = false } }
        }
    }

    /// Starts gathering. `false` when the query was started before, a scope is refused, or no filecoordd can be
    /// reached (each logged).
    open func start() -> Bool {
        // Started here, once: a second start (from any thread) returns false.
        let (scopes, predicate, alreadyStarted, descriptors, searchItems) = state.withLock { state in
            defer { state.started = true }
            return (state.searchScopes, state.predicate, state.started, state.sortDescriptors, state.searchItems)
        }
        let items = searchItems.map(Self.searchPaths)
        let sortKeys = descriptors.compactMap { descriptor in
            descriptor.metadataKey.map { (key: $0, ascending: descriptor.ascending) }
        }
        guard !alreadyStarted else { return false }
        // A start that fails leaves the query as it was: it may be started again.
        func fail(_ message: String) -> Bool {
            FileCoordinationLogging.logger.error("NSMetadataQuery.start(): \(message)")
            state.withLock { $0.started = false }
            return false
        }
        let roots: [ItemPath]
        do {
            roots = try Self.roots(of: scopes)
        } catch {
            return fail(error.message)
        }
        guard roots.count <= MetadataQueryRegistry.maximumScopes else {
            return fail("more than \(MetadataQueryRegistry.maximumScopes) search scopes (the daemon takes no more)")
        }
        let client = CoordinationClient.shared
        guard case .success(let connected) = client.connection.transport(),
            let transport = connected as? DaemonTransport,
            transport.daemonRevision >= ProtocolVersion.queriesRevision
        else {
            return fail("live queries need filecoordd of this release, and none answers")
        }
        guard !client.queries.isFull else {
            return fail("this process has \(MetadataQueryRegistry.maximumQueries) live queries (stop unused ones)")
        }
        let id = client.newID()
        // Only this library's code evaluates no predicate, or one made from a format.
        let readsOnReader = predicate.map(FormatPredicates.contains) ?? true
        work.sync {
            resultSet = MetadataQueryResults(
                predicate: { item in
                    (items.map { Self.isWithin(item, $0) } ?? true) && (predicate?.evaluate(with: item) ?? true)
                },
                sortKeys: sortKeys
            )
        }
        state.withLock { state in
            state.gathering = true
            state.id = id
        }
        let entry = MetadataQueryRegistry.Entry(
            scopes: roots,
            receive: { [weak self] items, restarted in
                guard let query = self else { return }
                // On the reading thread, which reads every frame of the connection: only a few changes of a query
                // whose index by path is made (each change then costs O(log n)) are read here, and only when nothing
                // waits on `work`; anything else waits its turn there. Never the end of a gathering (a gathering
                // again after a new connection is compared with every result then), nor a query whose predicate
                // may run the app's code (a block that made a coordinated call would wait for this very thread).
                let small =
                    readsOnReader && !restarted && !items.gathered
                    && items.added.count + items.changed.count + items.removed.count <= Self.changesReadOnReader
                    && query.state.withLock { !$0.gathering && $0.indexed && !$0.holdsChanges }
                query.work.async(runningHereIfIdle: small) { query.receive(items, restarted: restarted) }
            }
        )
        // Not sent now (the connection was just lost): it stays registered and the next connection starts it.
        if !client.queries.start(id, entry: entry, current: { client.connection.current as? DaemonTransport }) {
            client.connection.startReconnecting()
        }
        post(.NSMetadataQueryDidStartGathering)
        return true
    }

    /// Stops the query: no more notifications; ``results`` stay as they are.
    open func stop() {
        let id = state.withLock { state -> UInt64? in
            guard state.started, !state.stopped else { return nil }
            state.stopped = true
            state.gathering = false
            return state.id
        }
        guard let id else { return }
        let client = CoordinationClient.shared
        client.queries.stop(id, on: client.connection.current as? DaemonTransport)
    }

    deinit {
        if let id = state.withLock({ $0.stopped ? nil : $0.id }) {
            let client = CoordinationClient.shared
            client.queries.stop(id, on: client.connection.current as? DaemonTransport)
        }
    }

    // MARK: On `work`

    private func receive(_ items: Filecoord_V1_QueryItems, restarted: Bool) {
        // Changed in place (`resultSet!`): a copy taken out and put back would copy its dictionaries at every frame
        // (100,000 items of a gathering arrive in 50 of them).
        guard !isStopped, resultSet != nil else { return }
        if restarted {
            resultSet!.restart()
            countReports.connectionChanged()
            resultCountChanged()
            return
        }
        let step = resultSet!.receive(items)
        if !toldIndexed, resultSet!.isIndexed {
            toldIndexed = true
            state.withLock { $0.indexed = true }
        }
        switch step {
        case .nothing:
            break
        case .gatheringProgress:
            post(.NSMetadataQueryGatheringProgress)
        case .finishedGathering:
            let gathered = resultSet!.results
            state.withLock { state in
                state.results = gathered
                state.resultArray = nil
                state.gathering = false
            }
            post(.NSMetadataQueryDidFinishGathering)
            resultCountChanged()
        case .changesPending:
            guard !batchScheduled else { return }
            batchScheduled = true
            let interval = notificationBatchingInterval
            let flush: @Sendable () -> Void = { [weak self] in
                self?.batchScheduled = false
                self?.flushIfPending()
            }
            // No interval: after what `work` holds already (frames read meanwhile join the batch), or now when it
            // holds nothing, without a timer (`asyncAfter` even with no delay goes through libdispatch's timers, and
            // a job queued behind this one would wake `work`'s thread: a thread hop more each, issue 44).
            if interval > 0 {
                work.asyncAfter(deadline: .now() + interval, flush)
            } else if work.hasWaitingJobs {
                work.async(flush)
            } else {
                batchScheduled = false
                flushIfPending()
            }
        }
    }

    /// Tells the pending changes in one `…DidUpdate`, unless updates are disabled.
    private func flushIfPending() {
        guard !isStopped, resultSet?.pending.isEmpty == false, state.withLock({ $0.updatesDisabled == 0 }) else {
            return
        }
        let (added, changed, removed) = resultSet!.applyPending()
        let now = resultSet!.results
        state.withLock { state in
            state.results = now
            state.resultArray = nil
        }
        resultCountChanged()
        post(
            .NSMetadataQueryDidUpdate,
            userInfo: [
                NSMetadataQueryUpdateAddedItemsKey: added,
                NSMetadataQueryUpdateChangedItemsKey: changed,
                NSMetadataQueryUpdateRemovedItemsKey: removed,
            ]
        )
    }

    /// The results may have changed: their count is told the daemon (for fcdump) by a job of its own on `work`, at
    /// most once per ``ResultCountReports/interval``, never on the connection's reading thread (this may run there).
    private func resultCountChanged() {
        guard let count = resultSet?.results.count, let wait = countReports.changed(count) else { return }
        work.asyncAfter(deadline: .now() + wait.dispatchInterval) { [weak self] in
            guard let self, let count = resultSet?.results.count, countReports.due(count), !isStopped,
                let id = state.withLock({ $0.id })
            else { return }
            // Not told (no connection now, an older daemon): a new connection's gathering tells it.
            let client = CoordinationClient.shared
            if client.queries.reportResults(id, count: count, on: client.connection.current as? DaemonTransport) {
                countReports.told(count)
            }
        }
    }

    private func post(_ name: NSNotification.Name, userInfo: [String: Any]? = nil) {
        let notification = UncheckedNotification(name: name, object: self, userInfo: userInfo)
        let queue = operationQueue
        let send: @Sendable () -> Void = { NotificationCenter.default.post(notification.value) }
        if let queue { queue.addOperation(send) } else { DispatchQueue.main.async(execute: send) }
    }
}
