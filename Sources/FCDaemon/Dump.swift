// The daemon's side of `fcdump`: the state as a ``DaemonDump`` (FCDumpModel), encoded as JSON with sorted keys for
// `DumpReply`. Reading the state changes nothing in the arbiter.

import FCCore
import FCDumpModel
import FCSystem
import Foundation
import Logging
import NIOCore

extension ArbiterHost {
    /// The state for a `DumpRequest` (`fcdump`; the schema is docs/FCDUMP-SCHEMA.md), copied now (``captureDumpState()``); encode it off the loop with
    /// ``DumpState/json(logger:)``.
    func dumpState() -> DumpState {
        loop.preconditionInEventLoop()
        let start = ContinuousClock.now
        let state = captureDumpState()
        // Every other client waits while the state is copied: say how long, for whoever runs fcdump --watch.
        logger.debug(
            "dump state copied",
            metadata: [
                "dump.presenters": "\(state.snapshot.presenters.count)",
                "dump.claims": "\(state.snapshot.claims.count)",
                "dump.milliseconds": "\((ContinuousClock.now - start) / .milliseconds(1))",
            ]
        )
        return state
    }

    /// Copies what a dump needs, on the event loop: values only, no formatting and no encoding, so that other
    /// clients wait as little as possible (``DumpState/json(logger:)`` does the rest on another thread).
    func captureDumpState() -> DumpState {
        let arbiter = router.arbiter
        let snapshot = arbiter.snapshot()
        let now = router.currentTime()
        var blockers: [ClaimID: [ClaimID]] = [:]
        var ages: [ClaimID: Double] = [:]
        var handlerWaits: [ClaimID: Double] = [:]
        for claim in snapshot.claims {
            let id = claim.request.id
            if claim.phase == .waiting { blockers[id] = arbiter.blockers(of: id, limit: Arbiter.dumpedEdgesPerNode) }
            ages[id] = claim.arrivedAt.map { (now - $0).secondsValue } ?? 0
            if let returned = claim.batchReturnedAt { handlerWaits[id] = (now - returned).secondsValue }
        }
        return DumpState(
            daemonPID: ProcessIdentity.processID,
            snapshot: snapshot,
            blockers: blockers,
            ages: ages,
            handlerWaits: handlerWaits,
            waitFor: arbiter.waitForEdges().map { DaemonDump.Edge(from: $0.from, to: $0.to, label: $0.label) },
            statistics: arbiter.statistics,
            deadlocks: arbiter.recentDeadlockReports,
            clients: router.clients,
            clientArguments: connections.arguments,
            timedOutClaims: connections.timedOutClaims,
            portalNames: portalClients.spellings.values.reduce(into: [:]) { names, spellings in
                for (host, portal) in spellings.names { names[host, default: []].insert(portal) }
            },
            watcher: dumpWatcher(),
            leases: arbiter.leaseSnapshots().map { lease in
                DaemonDump.Lease(
                    id: lease.id.rawValue,
                    claim: lease.id.claim.rawValue,
                    client: lease.client.rawValue,
                    subtree: lease.subtree.escapedDescription,
                    state: "\(lease.state)",
                    ageSeconds: ((lease.grantedAt.map { (now - $0).secondsValue } ?? 0) * 1000).rounded() / 1000,
                    recalledSecondsAgo: lease.recalledAt.map { ((now - $0).secondsValue * 1000).rounded() / 1000 },
                    recalls: lease.recalls
                )
            },
            leasing: DaemonDump.Leasing(
                enabled: arbiter.configuration.leases != nil,
                granted: arbiter.statistics.leasesGranted,
                recalls: arbiter.statistics.leaseRecalls,
                recallTimeouts: arbiter.statistics.leaseRecallTimeouts
            ),
            cluster: cluster?.dump(),
            progress: progress.dumpItems(),
            queries: (queries?.summaries ?? []).map {
                var tree = DaemonDump.QueryTree(
                    root: $0.root.escapedDescription,
                    queries: $0.queries.map(\.client.rawValue),
                    items: $0.items,
                    directories: $0.directories,
                    gathered: $0.gathered
                )
                tree.unwatched = $0.unwatched
                tree.live = $0.queries.map { key in
                    DaemonDump.LiveQuery(
                        client: key.client.rawValue,
                        query: key.local,
                        results: liveQueries[key.client]?[key.local]?.resultCount.map { Int(clamping: $0) }
                    )
                }
                return tree
            }
        )
    }
}

/// A copy of the daemon's state for one dump, taken on the event loop (``ArbiterHost/captureDumpState()``) and
/// turned into JSON anywhere.
///
/// - Important: A value: `Sendable`, usable from any thread.
struct DumpState: Sendable {
    var daemonPID: Int32
    var snapshot: ArbiterSnapshot
    /// For each waiting claim, the claims that keep it from starting.
    var blockers: [ClaimID: [ClaimID]]
    /// Seconds since each live claim reached the daemon.
    var ages: [ClaimID: Double]
    /// Seconds since the batch block of each granted preparation waiting for its completion handler returned.
    var handlerWaits: [ClaimID: Double] = [:]
    var waitFor: [DaemonDump.Edge]
    var statistics: ArbiterStatistics
    var deadlocks: [String]
    var clients: [ClientInfo]
    var clientArguments: [ClientID: [String]]
    var timedOutClaims: [ClientID: Int]
    /// The document-portal paths clients spelled for host paths (issue 26): other names of those items.
    var portalNames: [ItemPath: Set<ItemPath>] = [:]
    var watcher: DaemonDump.Watcher?
    var leases: [DaemonDump.Lease] = []
    var leasing: DaemonDump.Leasing?
    var cluster: DaemonDump.Cluster?
    var progress: [DaemonDump.ProgressItem] = []
    var queries: [DaemonDump.QueryTree] = []

    /// The dump as JSON (docs/FCDUMP-SCHEMA.md). Costs O(state); for 10,000 presenters a few hundred milliseconds
    /// in a debug build, which is why it runs off the event loop.
    func json(logger: Logger) -> [UInt8] {
        let presenters = snapshot.presenters.values.sorted { $0.id < $1.id }
        // A lease's claim is shown as the lease (`leases`), not as a claim of its holder.
        let live = snapshot.claims.filter { !$0.request.id.isLease && !$0.request.id.isHostGate }
        let claims = live.map { claim -> DaemonDump.Claim in
            let request = claim.request
            return DaemonDump.Claim(
                id: request.id.rawValue,
                client: request.client.rawValue,
                phase: "\(claim.phase)",
                purpose: request.purpose.rawValue,
                filePresenter: request.filePresenter?.rawValue,
                fromPresenterQueue: request.fromPresenterQueue?.rawValue,
                // The empty set is the reacquirer a relinquish handed back.
                fromCallback: request.fromPresenterQueue == nil
                    ? nil : request.fromCallback.map { $0.names.first ?? "reacquirer" },
                isPreparation: request.isPreparation,
                ageSeconds: ((ages[request.id] ?? 0) * 1000).rounded() / 1000,
                items: zip(claim.paths, claim.accesses).map { path, access in
                    DaemonDump.Item(
                        path: path.escapedDescription,
                        kind: access.isWrite ? "write" : "read",
                        options: access.optionNames
                    )
                },
                blockedBy: (blockers[request.id] ?? []).map(\.rawValue),
                awaiting: claim.awaiting.sorted { $0.key < $1.key }.map {
                    DaemonDump.Awaiting(request: $0.key.rawValue, presenter: $0.value.rawValue)
                },
                waitingForHandlerSeconds: handlerWaits[request.id].map { ($0 * 1000).rounded() / 1000 }
            )
        }
        let presentersByClient = Dictionary(grouping: presenters.map { ($0.client, $0.id.rawValue) }, by: \.0)
        let claimsByClient = Dictionary(
            grouping: live.map { ($0.request.client, $0.request.id.rawValue) },
            by: \.0
        )
        let clients = self.clients.map { info in
            DaemonDump.Client(
                id: info.id.rawValue,
                pid: info.pid,
                name: info.name,
                presenters: presentersByClient[info.id]?.map(\.1) ?? [],
                claims: claimsByClient[info.id]?.map(\.1) ?? [],
                arguments: clientArguments[info.id] ?? [],
                timedOutClaims: timedOutClaims[info.id] ?? 0
            )
        }

        // Each file's names in use (issue 26): presenters' and claim items' paths, by the identity they carry.
        var names: [ItemIdentity: Set<ItemPath>] = [:]
        for presenter in presenters {
            if let identity = presenter.identity, let path = presenter.path {
                names[identity, default: []].insert(path)
            }
        }
        for claim in snapshot.claims {
            for (path, item) in zip(claim.paths, claim.request.items) {
                if let identity = item.identity { names[identity, default: []].insert(path) }
            }
        }
        let root = TreeBuilder()
        for presenter in presenters {
            guard let path = presenter.path else { continue }
            root.node(at: path).presenters.append(presenter.id.rawValue)
        }
        for claim in live {
            for path in Set(claim.paths).sorted() { root.node(at: path).claims.append(claim.request.id.rawValue) }
        }

        var dump = DaemonDump(
            daemonPID: daemonPID,
            clients: clients,
            presenters: presenters.map { registration in
                DaemonDump.Presenter(
                    id: registration.id.rawValue,
                    client: registration.client.rawValue,
                    path: registration.path.map(\.escapedDescription),
                    callbacks: registration.callbacks.names,
                    isPackage: registration.isPackage,
                    serialQueue: registration.serialQueue,
                    otherNames: registration.path.map { path in
                        let byIdentity = registration.identity.map { names[$0, default: []] } ?? []
                        return byIdentity.union(portalNames[path, default: []]).subtracting([path]).sorted()
                            .map(\.escapedDescription)
                    } ?? []
                )
            },
            claims: claims,
            tree: root.node(name: "/", path: "/"),
            waitFor: waitFor,
            statistics: DaemonDump.Statistics(
                claimsRequested: statistics.claimsRequested,
                claimsGranted: statistics.claimsGranted,
                claimsFailed: statistics.claimsFailed,
                messagesSent: statistics.messagesSent,
                presenterTimeouts: statistics.presenterTimeouts,
                deadlocksBroken: statistics.deadlocksBroken,
                longWaits: statistics.longWaits,
                holdsEnded: statistics.holdsEnded
            ),
            deadlocks: deadlocks,
            nodeCount: snapshot.nodeCount,
            watcher: watcher
        )
        dump.leases = leases
        dump.leasing = leasing
        dump.cluster = cluster
        dump.progress = progress
        dump.queries = queries
        do {
            return try dump.jsonBytes()
        } catch {
            logger.error("could not encode the dump: \(error)")
            return Array("{\"schemaVersion\":\(DaemonDump.currentSchemaVersion),\"error\":\"encoding failed\"}".utf8)
        }
    }
}

/// The item tree of the dump, built from the paths that have presenters or claims.
private final class TreeBuilder {
    var presenters: [UInt64] = []
    var claims: [UInt64] = []
    var children: [[UInt8]: TreeBuilder] = [:]

    func node(at path: ItemPath) -> TreeBuilder {
        var node = self
        for component in path.components {
            if let child = node.children[component] {
                node = child
            } else {
                let child = TreeBuilder()
                node.children[component] = child
                node = child
            }
        }
        return node
    }

    func node(name: String, path: String) -> DaemonDump.Node {
        let parent = path == "/" ? "" : path
        return DaemonDump.Node(
            name: name,
            path: path,
            presenters: presenters,
            claims: claims,
            children: children.map { (ItemPath.escaped($0.key), $0.value) }.sorted { $0.0 < $1.0 }
                .map { $0.1.node(name: $0.0, path: parent + "/" + $0.0) }
        )
    }
}

extension Access {
    /// The option names, as in ``description``.
    fileprivate var optionNames: [String] {
        let text = description
        guard let open = text.firstIndex(of: "("), text.hasSuffix(")") else { return [] }
        return text[text.index(after: open)..<text.index(before: text.endIndex)].split(separator: ",").map(String.init)
    }
}

extension Duration {
    /// The duration in seconds.
    fileprivate var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
