// Nothing a daemon sends reaches the terminal as it is: names, paths, purposes, command lines and reports may hold
// control characters (an escape sequence in a file name can retitle a terminal, move its cursor or hide text), so
// fcdump shows each as an escape (`\u{1B}`) in the tree, the lists and the graph, and as a JSON `\u` escape in
// `--json` (whose values stay exact).

import FCDumpModel

extension Unicode.Scalar {
    /// Whether a terminal may act on this character rather than show it: C0 and C1 controls, DEL, and the
    /// bidirectional overrides and isolates (which reorder what follows them on the line).
    var isTerminalControl: Bool {
        switch value {
        case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}

extension String {
    /// The string with every terminal control character written as `\u{XX}`.
    var escapedForTerminal: String {
        guard unicodeScalars.contains(where: \.isTerminalControl) else { return self }
        var out = ""
        for scalar in unicodeScalars {
            if scalar.isTerminalControl {
                out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// JSON text with the control characters JSON allows raw in strings (DEL, C1, the bidirectional controls)
    /// written as `\uXXXX` escapes: the same JSON values, none of them acted on by a terminal. (C0 controls are
    /// escaped by the encoder already; outside strings, JSON text holds none of these.)
    var escapingControlsInJSON: String {
        // C0 controls (the JSON text's own newlines among them) are left to the encoder.
        func escapes(_ scalar: Unicode.Scalar) -> Bool { scalar.value >= 0x7F && scalar.isTerminalControl }
        guard unicodeScalars.contains(where: escapes) else { return self }
        var out = ""
        for scalar in unicodeScalars {
            if escapes(scalar) {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension DaemonDump {
    /// The dump with every string the daemon sent escaped for a terminal (``Swift/String/escapedForTerminal``).
    func escapedForTerminal() -> DaemonDump {
        var dump = self
        for index in dump.clients.indices {
            dump.clients[index].name = dump.clients[index].name.escapedForTerminal
            dump.clients[index].arguments = dump.clients[index].arguments.map(\.escapedForTerminal)
        }
        for index in dump.presenters.indices {
            dump.presenters[index].path = dump.presenters[index].path?.escapedForTerminal
            dump.presenters[index].callbacks = dump.presenters[index].callbacks.map(\.escapedForTerminal)
        }
        for index in dump.claims.indices {
            var claim = dump.claims[index]
            claim.phase = claim.phase.escapedForTerminal
            claim.purpose = claim.purpose.escapedForTerminal
            claim.fromCallback = claim.fromCallback?.escapedForTerminal
            for item in claim.items.indices {
                claim.items[item].path = claim.items[item].path.escapedForTerminal
                claim.items[item].kind = claim.items[item].kind.escapedForTerminal
                claim.items[item].options = claim.items[item].options.map(\.escapedForTerminal)
            }
            dump.claims[index] = claim
        }
        dump.tree = dump.tree.escapedForTerminal()
        for index in dump.waitFor.indices {
            dump.waitFor[index].from = dump.waitFor[index].from.escapedForTerminal
            dump.waitFor[index].to = dump.waitFor[index].to.escapedForTerminal
            dump.waitFor[index].label = dump.waitFor[index].label.escapedForTerminal
        }
        dump.deadlocks = dump.deadlocks.map(\.escapedForTerminal)
        if var cluster = dump.cluster {
            cluster.host = cluster.host.escapedForTerminal
            cluster.endpoints = cluster.endpoints.map(\.escapedForTerminal)
            cluster.session = cluster.session.escapedForTerminal
            cluster.lastError = cluster.lastError?.escapedForTerminal
            cluster.mailAddress = cluster.mailAddress?.escapedForTerminal
            for index in cluster.folders.indices {
                cluster.folders[index].path = cluster.folders[index].path.escapedForTerminal
                cluster.folders[index].name = cluster.folders[index].name.escapedForTerminal
                cluster.folders[index].state = cluster.folders[index].state.escapedForTerminal
                cluster.folders[index].firstHost = cluster.folders[index].firstHost?.escapedForTerminal
            }
            dump.cluster = cluster
        }
        for index in dump.leases.indices {
            dump.leases[index].subtree = dump.leases[index].subtree.escapedForTerminal
            dump.leases[index].state = dump.leases[index].state.escapedForTerminal
        }
        if var watcher = dump.watcher {
            watcher.backend = watcher.backend?.escapedForTerminal
            watcher.directories = watcher.directories?.map { directory in
                var directory = directory
                directory.path = directory.path.escapedForTerminal
                directory.failure = directory.failure?.escapedForTerminal
                return directory
            }
            dump.watcher = watcher
        }
        return dump
    }
}

extension DaemonDump.Node {
    /// The node and everything below it with names and paths escaped for a terminal.
    fileprivate func escapedForTerminal() -> DaemonDump.Node {
        var node = self
        node.name = name.escapedForTerminal
        node.path = path.escapedForTerminal
        node.children = children.map { $0.escapedForTerminal() }
        return node
    }
}
