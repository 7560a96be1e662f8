import FCCore
import FCSystem
import Foundation

/// What a daemon that stops cleanly hands on to the next one about the clients that held claims or leases when it
/// stopped (docs/PROTOCOL.md "A daemon that restarts"): written as JSON to the marker beside the socket
/// (``DaemonService/heldMarker(forSocket:)``). Each such process may still run accessors, and even decide claims in
/// a lease, until it reads the end of its connection, reconnects and declares them; the next daemon holds what it
/// held, in its name, until it has declared everything (`Ping.held_declared`) or exited.
struct HandedOnHolders: Codable, Equatable {
    /// One process and what it held: the items of its granted claims and the subtrees of its leases.
    struct Holder: Codable, Equatable {
        var pid: Int32
        /// ``FCSystem/ProcessLiveness/startTime(of:)`` when the daemon stopped: with the pid, the process for good.
        var startTime: UInt64
        var name: String
        /// The items of its granted claims, and its leases' subtrees.
        var items: [Item]
        /// The longest of its claims' ``FCCore/ClaimRequest/maximumHold``, in milliseconds, when every thing it held
        /// had one (the preload library's claims, whose holders never declare again): the stand-in ends likewise.
        var maximumHoldMilliseconds: Int64?
    }

    /// One item held: its path's bytes, and its access.
    struct Item: Codable, Equatable {
        var path: Data
        var write: Bool
        /// The reading or writing options' bits (Apple's values).
        var options: UInt

        init(path: ItemPath, access: Access) {
            self.path = Data(path.bytes)
            switch access {
            case .read(let options): (write, self.options) = (false, options.rawValue)
            case .write(let options): (write, self.options) = (true, options.rawValue)
            }
        }

        /// A lease's subtree: its holder may write anywhere in it, so it is held as a write that covers the subtree.
        init(leaseSubtree path: ItemPath) { self.init(path: path, access: .write(.forMoving)) }

        var claimItem: ClaimItem? {
            guard let path = try? ItemPath(absolute: Array(self.path)) else { return nil }
            let access: Access =
                write ? .write(WritingOptions(rawValue: options)) : .read(ReadingOptions(rawValue: options))
            return ClaimItem(path: path, access: access)
        }
    }

    var holders: [Holder]
    /// `true` when the stopped daemon was itself in the timed grace after a crash: clients it had not heard from yet
    /// are in no list, so the next daemon runs that grace too.
    var inGrace: Bool

    /// What the arbiter shows now: every client with a granted claim or a lease, but the stand-ins of other hosts
    /// (`skipped`); `closed` names the processes of connections the daemon closed whose leases it keeps. Processes
    /// that cannot be named for good (gone already) are left out: they hold nothing any more. `leaseHolds`: the
    /// longest hold of each client that keeps lease counters (it never declares, so its leases are bounded by it).
    init(
        snapshot: ArbiterSnapshot,
        leases: [LeaseSnapshot],
        skipping skipped: Set<ClientID>,
        closed: [ClientID: (pid: Int32, startTime: UInt64)],
        inGrace: Bool,
        leaseHolds: [ClientID: Duration] = [:]
    ) {
        self.inGrace = inGrace
        var byClient: [ClientID: Holder] = [:]
        func holder(_ client: ClientID) -> Holder? {
            if let known = byClient[client] { return known }
            if let process = closed[client] {
                return Holder(pid: process.pid, startTime: process.startTime, name: "", items: [])
            }
            guard !skipped.contains(client), let info = snapshot.clients[client], info.pid > 0,
                let start = ProcessLiveness.startTime(of: info.pid)
            else { return nil }
            return Holder(pid: info.pid, startTime: start, name: info.name, items: [])
        }
        // A lease's own claim and a host gate are the arbiter's: the leases are taken below.
        var unbounded: Set<ClientID> = []
        for claim in snapshot.claims where claim.phase == .granted && !claim.request.id.isReserved {
            guard var entry = holder(claim.request.client) else { continue }
            for (path, access) in zip(claim.paths, claim.accesses) {
                entry.items.append(Item(path: path, access: access))
            }
            if let hold = claim.request.maximumHold {
                let milliseconds = hold.components.seconds * 1000 + hold.components.attoseconds / 1_000_000_000_000_000
                entry.maximumHoldMilliseconds = max(entry.maximumHoldMilliseconds ?? 0, milliseconds)
            } else {
                unbounded.insert(claim.request.client)
            }
            byClient[claim.request.client] = entry
        }
        for lease in leases {
            guard var entry = holder(lease.client) else { continue }
            entry.items.append(Item(leaseSubtree: lease.subtree))
            if let hold = leaseHolds[lease.client] {
                // A client that keeps lease counters never declares: its leases are held no longer than its hold.
                let milliseconds = hold.components.seconds * 1000 + hold.components.attoseconds / 1_000_000_000_000_000
                entry.maximumHoldMilliseconds = max(entry.maximumHoldMilliseconds ?? 0, milliseconds)
            } else {
                unbounded.insert(lease.client)
            }
            byClient[lease.client] = entry
        }
        for client in unbounded { byClient[client]?.maximumHoldMilliseconds = nil }
        holders = byClient.keys.sorted().compactMap { byClient[$0] }
    }

    init(holders: [Holder], inGrace: Bool = false) {
        self.holders = holders
        self.inGrace = inGrace
    }

    /// The marker's contents.
    func encoded() throws -> [UInt8] { Array(try JSONEncoder().encode(self)) }

    /// A marker's contents; `nil` for an empty marker (a daemon of an earlier release: only the timed grace then).
    static func decode(_ bytes: [UInt8]) throws -> HandedOnHolders? {
        guard !bytes.isEmpty else { return nil }
        return try JSONDecoder().decode(HandedOnHolders.self, from: Data(bytes))
    }

    /// The claim that holds, in a stand-in client's name, what `holder` held.
    static func claim(for holder: Holder, id: ClaimID, client: ClientID) -> ClaimRequest? {
        let items = holder.items.compactMap(\.claimItem)
        guard !items.isEmpty else { return nil }
        var request = ClaimRequest(
            id: id,
            client: client,
            coordinator: CoordinatorID(rawValue: id.rawValue),
            // Its own purpose (rule 4 exempts claims of one purpose from each other): one no other claim shares.
            purpose: PurposeID(
                rawValue: "filecoordd stand-in \(client.rawValue) for pid \(holder.pid)@\(holder.startTime)"
            ),
            items: items
        )
        request.isHeld = true
        request.maximumHold = holder.maximumHoldMilliseconds.map { .milliseconds($0) }
        return request
    }
}

/// The processes the daemon holds something for since their connection ended, until each has declared what it
/// still holds (`Ping.held_declared` on a new connection) or exited: never for a time alone, so that a holder slower
/// than any grace (a stopped process, a loaded machine) is never overtaken (docs/SEMANTICS.md §13.5).
///
/// - Important: Everything runs on the arbiter's event loop (``ArbiterHost``'s); not `Sendable`.
final class HeldHandover {
    /// What is kept for one process.
    struct Kept {
        var startTime: UInt64
        /// Stand-in clients whose held claims hold what a stopped daemon's client held.
        var standIns: [ClientID] = []
        /// Clients whose connection the daemon closed itself, whose leases are kept.
        var closedClients: [ClientID] = []
    }

    /// By process id.
    private(set) var kept: [Int32: Kept] = [:]

    var isEmpty: Bool { kept.isEmpty }
    /// Whether a stand-in for a stopped daemon's holder is still kept.
    var holdsStandIns: Bool { kept.values.contains { !$0.standIns.isEmpty } }

    /// Keeps `standIn` until process `pid` (started at `startTime`) declares or exits.
    func keep(standIn: ClientID, for pid: Int32, startTime: UInt64) {
        kept[pid, default: Kept(startTime: startTime)].standIns.append(standIn)
    }

    /// Keeps the leases of `client`, whose connection the daemon closed, until process `pid` declares or exits.
    func keep(leasesOf client: ClientID, for pid: Int32, startTime: UInt64) {
        kept[pid, default: Kept(startTime: startTime)].closedClients.append(client)
    }

    /// The processes of the closed connections whose leases are kept, by client.
    var closedProcesses: [ClientID: (pid: Int32, startTime: UInt64)] {
        var processes: [ClientID: (pid: Int32, startTime: UInt64)] = [:]
        for (pid, entry) in kept {
            for client in entry.closedClients { processes[client] = (pid, entry.startTime) }
        }
        return processes
    }

    /// Process `pid` declared what it holds: what was kept for it.
    func declared(by pid: Int32) -> Kept? { kept.removeValue(forKey: pid) }

    /// What was kept for processes that have exited since.
    func exited() -> [(pid: Int32, kept: Kept)] {
        let gone = kept.filter { !ProcessLiveness.isAlive($0.key, startedAt: $0.value.startTime) }
        for pid in gone.keys { kept[pid] = nil }
        return gone.map { ($0.key, $0.value) }
    }
}
