// The human forms of a dump: the item tree, the clients, the deadlock reports and the DOT graph.

import FCDumpModel
import Foundation

extension DaemonDump {
    /// The dump with only the items at or below `prefix`, the claims and presenters on them, and the graph's edges
    /// between what is left.
    func restricted(to prefix: String) -> DaemonDump {
        let prefix = prefix.count > 1 && prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
        func inside(_ path: String) -> Bool {
            prefix == "/" || path == prefix || path.hasPrefix(prefix + "/")
        }
        func prune(_ node: Node) -> Node? {
            if inside(node.path) { return node }
            guard node.path == "/" || prefix.hasPrefix(node.path + "/") else { return nil }
            var kept = node
            kept.presenters = []
            kept.claims = []
            kept.children = node.children.compactMap(prune)
            return kept
        }
        var copy = self
        copy.tree = prune(tree) ?? Node(name: "/", path: "/", presenters: [], claims: [], children: [])
        copy.claims = claims.filter { $0.items.contains { inside($0.path) } }
        copy.presenters = presenters.filter { $0.path.map(inside) ?? false }
        // A lease above the prefix covers it too.
        copy.progress = progress.filter { inside($0.path) }
        copy.queries = queries.filter { inside($0.root) }
        copy.leases = leases.filter { inside($0.subtree) || prefix.hasPrefix($0.subtree + "/") || $0.subtree == "/" }
        let names = Set(copy.claims.map { "claim#\($0.id)" } + copy.presenters.map { "presenter#\($0.id)" })
        copy.waitFor = waitFor.filter { names.contains($0.from) || names.contains($0.to) }
        return copy
    }
}

/// Renders a dump for people; colours only when asked (a terminal).
struct Renderer {
    let dump: DaemonDump
    let colour: Bool
    private let claims: [UInt64: DaemonDump.Claim]
    private let presenters: [UInt64: DaemonDump.Presenter]
    private let clientsByID: [UInt64: DaemonDump.Client]
    /// Presenter ids by (client, serial queue), for "queue shared with".
    private let presentersByQueue: [QueueKey: [UInt64]]

    private struct QueueKey: Hashable {
        var client: UInt64
        var queue: UInt64
    }

    init(dump: DaemonDump, colour: Bool) {
        self.dump = dump
        self.colour = colour
        claims = Dictionary(dump.claims.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        presenters = Dictionary(dump.presenters.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        clientsByID = Dictionary(dump.clients.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var byQueue: [QueueKey: [UInt64]] = [:]
        for presenter in dump.presenters {
            guard let queue = presenter.serialQueue else { continue }
            byQueue[QueueKey(client: presenter.client, queue: queue), default: []].append(presenter.id)
        }
        presentersByQueue = byQueue
    }

    /// "; queue shared with presenter#3, presenter#9" when other presenters of its client run on its serial queue
    /// (a call that blocks that queue blocks them all), else "".
    /// "    also named /e/b.txt, /view/a.txt" under a presenter whose file has other names in use (issue 26).
    private func otherNames(_ presenter: DaemonDump.Presenter, indent: String) -> String {
        guard !presenter.otherNames.isEmpty else { return "" }
        let shown = presenter.otherNames.prefix(8).joined(separator: ", ")
        let more = presenter.otherNames.count > 8 ? " and \(presenter.otherNames.count - 8) more" : ""
        return indent + "    also named \(shown)\(more)\n"
    }

    private func queueSharing(_ presenter: DaemonDump.Presenter) -> String {
        guard let queue = presenter.serialQueue else { return "" }
        let others = (presentersByQueue[QueueKey(client: presenter.client, queue: queue)] ?? []).filter {
            $0 != presenter.id
        }
        guard !others.isEmpty else { return "" }
        // A queue shared by thousands (the main queue of a big app) is summed up, not listed.
        let named = others.prefix(8).map { "presenter#\($0)" }.joined(separator: ", ")
        return "; queue shared with " + named + (others.count > 8 ? " and \(others.count - 8) more" : "")
    }

    private func paint(_ text: String, _ code: String) -> String {
        colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    private func client(_ id: UInt64) -> String {
        guard let client = clientsByID[id] else { return "client#\(id) (gone)" }
        // Pid 0: the stand-in of another host's presenters (issue 41), named `host NAME`.
        if client.pid == 0 { return "\(client.name) (another host, client#\(id))" }
        return "\(client.name) (pid \(client.pid), client#\(id))"
    }

    private static func age(_ seconds: Double) -> String {
        seconds < 60
            ? "\((seconds * 10).rounded() / 10)s" : "\(Int(seconds) / 60)m\(Int(seconds) % 60)s"
    }

    private func summary() -> String {
        let waiting = dump.claims.filter { $0.phase != "granted" }.count
        return paint("filecoordd", "1") + " pid \(dump.daemonPID): \(dump.clients.count) clients, "
            + "\(dump.presenters.count) presenters, \(dump.claims.count) claims (\(waiting) not granted), "
            + "\(dump.nodeCount) access nodes\n"
    }

    private func counters() -> String {
        let s = dump.statistics
        return "statistics: \(s.claimsRequested) claims requested, \(s.claimsGranted) granted, \(s.claimsFailed) "
            + "failed; \(s.messagesSent) presenter messages, \(s.presenterTimeouts) presenter timeouts; "
            + "\(s.deadlocksBroken) deadlocks broken, \(s.longWaits) long waits"
            + (s.holdsEnded.map { "; \($0) claims ended past their longest hold" } ?? "") + "\n" + leaseCounters()
    }

    private func leaseCounters() -> String {
        guard let leasing = dump.leasing else { return "" }
        guard leasing.enabled else { return "leases: off (filecoordd --no-leases)\n" }
        return "leases: \(dump.leases.count) held, \(leasing.granted) granted, \(leasing.recalls) recalled, "
            + "\(leasing.recallTimeouts) recalls not answered in time\n"
    }

    private func describe(_ lease: DaemonDump.Lease) -> String {
        let recalled = lease.recalledSecondsAgo.map { ", recalled \(Self.age($0)) ago" } ?? ""
        let warns = lease.state == "recall unanswered" || lease.state == "holder disconnected"
        let state = warns ? paint(lease.state, "31") : lease.state
        return "lease#\(lease.id) \(lease.subtree) \(state), age \(Self.age(lease.ageSeconds))\(recalled), "
            + "\(lease.recalls) recalls"
    }

    // MARK: cluster

    /// This host in its cluster (issue 40): the session, then one line per shared folder with its host lease, its
    /// gate, the claims waiting there and the host they wait for.
    func cluster() -> String {
        var out = summary() + "\n"
        guard let cluster = dump.cluster else { return out + "no cluster: this daemon shares no folder\n" }
        let session = cluster.session.hasPrefix("unavailable") ? paint(cluster.session, "31") : cluster.session
        let lease = cluster.sessionLease.map { ", lease \($0), ttl \(cluster.ttlSeconds ?? 0) s" } ?? ""
        out += "host \(cluster.host), session \(session)\(lease)\n"
        out += "etcd: \(cluster.endpoints.joined(separator: ", "))\n"
        if let error = cluster.lastError { out += "last error: \(error)\n" }
        if let direct = cluster.lettersDirect, let etcd = cluster.lettersThroughEtcd {
            let mail = cluster.mailAddress.map { "mailbox \($0)" } ?? "no mailbox (letters come through etcd)"
            out += "\(mail); letters sent: \(direct) directly, \(etcd) through etcd\n"
            if let read = cluster.mailSeriesRead, let sent = cluster.mailSeriesSent {
                out += "mail series kept: \(read) read, \(sent) sent\n"
            }
        }
        out += "\n"
        for folder in cluster.folders {
            let named = folder.name == folder.path ? "" : " (\(folder.name))"
            var line = "\(folder.path)\(named): \(folder.state), gate \(folder.gate)"
            if folder.waitingClaims > 0 {
                let whom = folder.firstHost.map { " for host \($0)" } ?? ""
                line += ", \(folder.waitingClaims) claims waiting\(whom)"
            }
            if folder.otherHostWaiting { line += ", another host waits" }
            out += line + "\n"
        }
        return out
    }

    // MARK: progress

    /// Per item: the progresses published about it and the clients subscribed at it (issue 44).
    func progress() -> String {
        var out = summary() + "\n"
        guard !dump.progress.isEmpty else { return out + "no file progress published or subscribed to\n" }
        for item in dump.progress {
            out += paint(item.path, "1") + "\n"
            for publisher in item.publishers {
                let percent = Int((publisher.fractionCompleted * 100).rounded(.down))
                var line =
                    "    \(paint("published", "36")) progress#\(publisher.id) by \(client(publisher.client)): "
                    + "\(publisher.completedUnitCount) of \(publisher.totalUnitCount) (\(percent)%)"
                let operation = publisher.fileOperationKind.replacingOccurrences(
                    of: "NSProgressFileOperationKind",
                    with: ""
                )
                if !operation.isEmpty { line += ", \(operation.lowercased())" }
                if publisher.paused { line += ", paused" }
                if publisher.cancelled { line += ", cancelled" }
                out += line + "\n"
            }
            for subscriber in item.subscribers {
                out += "    \(paint("subscribed", "33")) by \(client(subscriber))\n"
            }
        }
        return out
    }

    // MARK: queries

    /// Per folder tree that live queries watch: its queries, items and watched folders (issue 44).
    func queries() -> String {
        var out = summary() + "\n"
        guard !dump.queries.isEmpty else { return out + "no live queries\n" }
        for tree in dump.queries {
            out += paint(tree.root, "1") + "\n"
            out +=
                "    \(tree.items) items, \(tree.directories) folders watched"
                + (tree.unwatched.map { $0 > 0 ? " (\($0) could not be: changes in them are not told)" : "" } ?? "")
                + (tree.gathered ? "" : ", gathering") + "\n"
            guard let live = tree.live else {
                // A daemon before the result counts.
                for client in tree.queries { out += "    \(paint("query", "36")) of \(self.client(client))\n" }
                continue
            }
            for query in live {
                let results = query.results.map { "\($0) result" + ($0 == 1 ? "" : "s") } ?? "results not told yet"
                out += "    \(paint("query \(query.query)", "36")) of \(self.client(query.client)): \(results)\n"
            }
        }
        return out
    }

    // MARK: leases

    /// One line per lease: holder, subtree, state, age, recalls; then the counters.
    func leases() -> String {
        var out = summary() + "\n"
        if dump.leases.isEmpty {
            out += "no leases held\n"
        } else {
            for lease in dump.leases {
                out += describe(lease) + " held by \(client(lease.client))\n"
            }
        }
        return out + "\n" + leaseCounters()
    }

    // MARK: tree

    /// The item tree: for each node its presenters, granted claims and waiting claims (with what blocks each),
    /// then its children; chains of empty folders are folded into one line.
    func tree() -> String {
        var out = summary()
        let top = dump.tree
        if top.presenters.isEmpty && top.claims.isEmpty && top.children.isEmpty {
            out += "\nnothing is presented or coordinated\n"
        } else {
            out += "\n"
            renderNode(top, shownAs: "/", indent: "", into: &out)
        }
        out += "\n" + counters()
        return out
    }

    private func renderNode(_ node: DaemonDump.Node, shownAs label: String, indent: String, into out: inout String) {
        // Fold an empty node with one child into its child's line: /tmp/x/doc.txt rather than four lines.
        if node.presenters.isEmpty && node.claims.isEmpty && node.children.count == 1 {
            let child = node.children[0]
            let joined = label == "/" ? "/" + child.name : (label.hasSuffix("/") ? label : label + "/") + child.name
            renderNode(child, shownAs: joined, indent: indent, into: &out)
            return
        }
        out += indent + paint(label, "1") + "\n"
        let inner = indent + "    "
        for id in node.presenters {
            guard let presenter = presenters[id] else { continue }
            let callbacks =
                presenter.callbacks.count == 16
                ? "all callbacks"
                : "callbacks: " + (presenter.callbacks.isEmpty ? "none" : presenter.callbacks.joined(separator: ","))
            out +=
                inner + paint("presenter", "36") + " presenter#\(id) of \(client(presenter.client))"
                + (presenter.isPackage ? " package" : "") + "; \(callbacks)\(queueSharing(presenter))\n"
                + otherNames(presenter, indent: inner)
        }
        let here = node.claims.compactMap { claims[$0] }
        for claim in here where claim.phase == "granted" {
            out += inner + paint("granted", "32") + " " + describe(claim, at: node.path) + "\n"
        }
        for claim in here where claim.phase != "granted" {
            out += inner + paint(claim.phase, "33") + " " + describe(claim, at: node.path) + "\n"
            for blocker in claim.blockedBy {
                let holder = claims[blocker].map { "\($0.phase) \(describeBrief($0))" } ?? "claim#\(blocker)"
                out += inner + "    blocked by " + holder + "\n"
            }
            for awaiting in claim.awaiting {
                let owner = presenters[awaiting.presenter].map { " of \(client($0.client))" } ?? ""
                out += inner + "    awaits presenter#\(awaiting.presenter)\(owner) (request#\(awaiting.request))\n"
            }
        }
        for child in node.children {
            renderNode(child, shownAs: child.name, indent: inner, into: &out)
        }
    }

    private func access(_ item: DaemonDump.Item) -> String {
        item.options.isEmpty ? item.kind : "\(item.kind)(\(item.options.joined(separator: ",")))"
    }

    private func describe(_ claim: DaemonDump.Claim, at path: String) -> String {
        let mine = claim.items.filter { $0.path == path }.map(access).joined(separator: "+")
        let others = claim.items.filter { $0.path != path }.map { "\(access($0)) \($0.path)" }
        var text =
            "claim#\(claim.id) \(mine) by \(client(claim.client)), age \(Self.age(claim.ageSeconds)), "
            + "purpose \(claim.purpose)"
        if claim.isPreparation { text += ", preparation" }
        if let waiting = claim.waitingForHandlerSeconds {
            text += ", batch returned, waiting for its completion handler for \(Self.age(waiting))"
        }
        if let presenter = claim.filePresenter { text += ", with presenter#\(presenter)" }
        if let presenter = claim.fromPresenterQueue {
            text +=
                claim.fromCallback.map { ", in presenter#\(presenter)'s \($0)" }
                ?? ", from presenter#\(presenter)'s queue"
        }
        if !others.isEmpty { text += "; also " + others.joined(separator: ", ") }
        return text
    }

    private func describeBrief(_ claim: DaemonDump.Claim) -> String {
        let items = claim.items.map { "\(access($0)) \($0.path)" }.joined(separator: ", ")
        return "claim#\(claim.id) (\(items)) of \(client(claim.client)), age \(Self.age(claim.ageSeconds))"
    }

    // MARK: clients

    /// An argument as a shell would need it: as it is when it is plain, else in single quotes.
    static func shellQuoted(_ argument: String) -> String {
        let plain =
            !argument.isEmpty
            && argument.unicodeScalars.allSatisfy {
                ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
                    || "-_./=:,+@%".unicodeScalars.contains($0)
            }
        return plain ? argument : "'" + argument.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// One block per client: pid, name, presenters and claims.
    func clients() -> String {
        var out = summary() + "\n"
        for client in dump.clients {
            out +=
                paint("client#\(client.id)", "1")
                + (client.pid == 0
                    ? " \(client.name), another host's presenters: " : " \(client.name) pid \(client.pid): ")
                + "\(client.presenters.count) presenters, \(client.claims.count) claims"
                + (client.timedOutClaims > 0 ? ", \(client.timedOutClaims) timed out" : "")
                + (client.name.hasPrefix("preload:") ? " (through libfilecoord-preload)" : "") + "\n"
            if !client.arguments.isEmpty {
                out += "    command: \(client.arguments.map(Self.shellQuoted).joined(separator: " "))\n"
            }
            for id in client.presenters {
                let path = presenters[id]?.path ?? "(no item yet)"
                out += "    presenter#\(id) \(path)\n"
            }
            for id in client.claims {
                guard let claim = claims[id] else { continue }
                let items = claim.items.map { "\(access($0)) \($0.path)" }.joined(separator: ", ")
                out += "    claim#\(id) \(claim.phase) \(items), age \(Self.age(claim.ageSeconds))\n"
            }
            for lease in dump.leases where lease.client == client.id {
                out += "    \(describe(lease))\n"
            }
        }
        return out
    }

    // MARK: deadlocks

    /// The recent deadlock reports, oldest first, and the counters.
    func deadlocks() -> String {
        var out =
            "deadlocks broken: \(dump.statistics.deadlocksBroken); long waits (not deadlocks): "
            + "\(dump.statistics.longWaits)\n"
        if dump.deadlocks.isEmpty {
            out += "no recent deadlock reports\n"
        } else {
            for (index, report) in dump.deadlocks.enumerated() {
                out += "\n" + paint("report \(index + 1) of \(dump.deadlocks.count)", "1") + "\n" + report + "\n"
            }
        }
        return out
    }

    // MARK: graph

    /// The wait-for graph in Graphviz DOT: an edge from each waiter to what it waits for.
    func dot() -> String {
        func quoted(_ text: String) -> String {
            "\""
                + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n") + "\""
        }
        var names = Set<String>()
        for edge in dump.waitFor {
            names.insert(edge.from)
            names.insert(edge.to)
        }
        var out = "digraph waitfor {\n    rankdir=LR;\n    node [fontname=\"monospace\"];\n"
        for name in names.sorted() {
            var label = name
            var shape = "box"
            if name.hasPrefix("claim#"), let id = UInt64(name.dropFirst(6)), let claim = claims[id] {
                let items = claim.items.map { "\(access($0)) \($0.path)" }.joined(separator: "\n")
                label = "\(name) \(claim.phase)\n\(items)\n\(client(claim.client))"
            } else if name.hasPrefix("presenter#"), let id = UInt64(name.dropFirst(10)), let presenter = presenters[id]
            {
                shape = "ellipse"
                label = "\(name)\n\(presenter.path ?? "(no item)")\n\(client(presenter.client))"
            }
            out += "    \(quoted(name)) [shape=\(shape), label=\(quoted(label))];\n"
        }
        for edge in dump.waitFor {
            out += "    \(quoted(edge.from)) -> \(quoted(edge.to)) [tooltip=\(quoted(edge.label))];\n"
        }
        return out + "}\n"
    }
}
