// fc-load: the load, soak and fault suite (issue 11). N client processes (this executable again, in the worker
// role) coordinate reads, writes, moves and deletes on a few shared items through one filecoordd, with presenters
// that relinquish, save and refuse, while faults are injected: kill -9 of clients and of the daemon, SIGSTOP and
// SIGCONT of clients, idle connections and garbage frames. Mutual exclusion is proved inside the accessors
// (Worker.swift). It prints throughput, wait percentiles, errors, deadlocks broken and the daemon's memory and
// descriptors, and exits 1 on any violation, hang or leak (a claim or presenter left in the daemon's dump once every
// client is gone), or when the daemon's memory is not back within 20% of its start.
//
//   fc-load [--clients 8] [--items 12] [--duration 30] [--kill-clients-every 2] [--kill-daemon 2]
//           [--stop-clients] [--idle-connections 50] [--garbage 20] [--slow-consumer] [--seed N]
//           [--cluster-endpoints URL,...]   two hosts (daemons) sharing the items' folder through etcd (issue 40)

import FCDumpModel
import Foundation

/// The command line: `--name value` pairs and flags.
struct Arguments {
    var values: [String: String] = [:]
    var flags: Set<String> = []

    init(_ words: [String]) {
        var index = 0
        while index < words.count {
            let word = words[index]
            if word.hasPrefix("--"), index + 1 < words.count, !words[index + 1].hasPrefix("--") {
                values[String(word.dropFirst(2))] = words[index + 1]
                index += 2
            } else {
                flags.insert(String(word.dropFirst(2)))
                index += 1
            }
        }
    }

    func double(_ name: String, _ fallback: Double) -> Double { values[name].flatMap(Double.init) ?? fallback }
    func int(_ name: String, _ fallback: Int) -> Int { values[name].flatMap(Int.init) ?? fallback }
}

let arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
let seed = UInt64(arguments.int("seed", Int(UInt32.random(in: 1...UInt32.max))))

if arguments.flags.contains("worker") {
    let options = Worker.Options(
        folder: URL(fileURLWithPath: arguments.values["folder"] ?? "/tmp"),
        items: arguments.int("items", 12),
        duration: arguments.double("duration", 30),
        threads: arguments.int("threads", 2),
        seed: seed
    )
    Worker(options: options).run()
    exit(0)
}

let driver = Driver(
    clients: arguments.int("clients", 8),
    items: arguments.int("items", 12),
    duration: arguments.double("duration", 30),
    threads: arguments.int("threads", 2),
    killClientsEvery: arguments.double("kill-clients-every", 0),
    daemonKills: arguments.int("kill-daemon", 0),
    stopClients: arguments.flags.contains("stop-clients"),
    idleConnections: arguments.int("idle-connections", 0),
    garbageConnections: arguments.int("garbage", 0),
    slowConsumer: arguments.flags.contains("slow-consumer"),
    seed: seed,
    clusterEndpoints: arguments.values["cluster-endpoints"]
)
exit(driver.run() ? 0 : 1)
