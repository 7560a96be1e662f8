// fcdump: shows what a running filecoordd is doing, in the spirit of Apple's filecoordinationd dump: the tree of
// items being presented or coordinated, the clients, the wait-for graph and the recent deadlock reports.
// Read-only: it asks the daemon for its state (`DumpRequest`) and never starts a daemon.

import ArgumentParser
import FCDumpModel
import FCProtocol
import FCSystem
import Foundation

@main
struct FCDump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcdump",
        abstract: "Show the state of a running filecoordd (read-only; never starts one).",
        discussion: """
            MODE is one of:
              tree       the items being presented or coordinated, with presenters, granted and waiting claims (default)
              clients    the connected clients with their presenters and claims
              deadlocks  the recent deadlock reports and the deadlock counters
              graph      the wait-for graph in Graphviz DOT (same as --graph)
              watcher    the inotify watches against their limits, the watched directories and the watcher's counters
              leases     the leases held (holder, subtree, state, age, recalls) and the lease counters
              cluster    this host in its cluster: session, shared folders, host leases, whom claims wait for
              progress   per item, the file progress published about it and the processes subscribed at it
              queries    the folder trees live queries watch: their queries, items and watched folders
            --json prints the whole state as JSON (schema: docs/FCDUMP-SCHEMA.md). Exit status 1 when no daemon \
            answers.
            """
    )

    /// What to show.
    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case tree, clients, deadlocks, graph, watcher, leases, cluster, progress, queries
    }

    @Argument(help: "tree, clients, deadlocks, graph, watcher, leases, cluster, progress or queries.")
    var mode: Mode = .tree

    @Option(help: "The daemon's socket (default: FILECOORDD_SOCKET, else the per-user socket).")
    var socket: String?

    @Flag(help: "Print the state as JSON (docs/FCDUMP-SCHEMA.md).")
    var json = false

    @Flag(help: "Print the wait-for graph in Graphviz DOT.")
    var graph = false

    @Option(help: "Show only this item and what is below it.")
    var path: String?

    @Flag(help: "Refresh every --interval seconds until interrupted.")
    var watch = false

    @Option(help: "Seconds between refreshes with --watch (fractions allowed; at most 3600).")
    var interval: Double = 2

    @Option(help: "Seconds to wait for the daemon's answer (whole seconds, 1 to 3600).")
    var timeout: Int = 5

    mutating func validate() throws {
        guard (1...3_600).contains(timeout) else { throw ValidationError("--timeout must be in 1...3600") }
        guard interval > 0, interval <= 3_600 else { throw ValidationError("--interval must be in (0, 3600]") }
        if let path, !path.hasPrefix("/") { throw ValidationError("--path must be absolute") }
    }

    func run() throws {
        let socketPath =
            socket
            ?? DaemonAddress.socketPath(environment: ProcessInfo.processInfo.environment, uid: ProcessIdentity.userID)
        let colour = Terminal.isTerminal(STDOUT_FILENO) && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        guard watch else {
            print(try render(socketPath: socketPath, colour: colour), terminator: "")
            return
        }
        // A parent may have left these blocked (a test runner, a service manager): unblocked, ^C, kill and a
        // closed terminal stop the watch as they would stop any command.
        try Signals.unblockInThisThread([SIGINT, SIGTERM, SIGHUP])
        let pause = Duration.milliseconds(Int64(interval * 1000))
        while true {
            let text: String
            do {
                text = try render(socketPath: socketPath, colour: colour)
            } catch {
                text = "fcdump: \(error)\n"
            }
            let clear = colour ? "\u{1B}[H\u{1B}[2J" : ""
            FileHandle.standardOutput.write(Data((clear + text + "(every \(interval)s; ^C to stop)\n").utf8))
            sleepThread(for: pause)
        }
    }

    private func render(socketPath: String, colour: Bool) throws -> String {
        let bytes: [UInt8]
        do {
            bytes = try fetchDump(socketPath: socketPath, timeoutSeconds: timeout)
        } catch {
            throw FailedDump(message: error.description)
        }
        var dump: DaemonDump
        do {
            dump = try DaemonDump(json: bytes)
        } catch {
            throw FailedDump(message: "the daemon's dump could not be read (\(error)); is fcdump as new as filecoordd?")
        }
        guard dump.schemaVersion == DaemonDump.currentSchemaVersion else {
            throw FailedDump(
                message: "the daemon's dump has schema version \(dump.schemaVersion); this fcdump reads "
                    + "\(DaemonDump.currentSchemaVersion)"
            )
        }
        if let path { dump = dump.restricted(to: path) }
        // Nothing the daemon sent reaches the terminal unescaped (TerminalEscaping.swift).
        if json {
            return String(decoding: try dump.jsonBytes(pretty: true), as: UTF8.self).escapingControlsInJSON + "\n"
        }
        let renderer = Renderer(dump: dump.escapedForTerminal(), colour: colour)
        if graph { return renderer.dot() }
        switch mode {
        case .tree: return renderer.tree()
        case .clients: return renderer.clients()
        case .deadlocks: return renderer.deadlocks()
        case .graph: return renderer.dot()
        case .watcher: return renderer.watcher()
        case .leases: return renderer.leases()
        case .cluster: return renderer.cluster()
        case .progress: return renderer.progress()
        case .queries: return renderer.queries()
        }
    }
}

/// A failure reported as `Error: <message>` and exit status 1.
struct FailedDump: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
