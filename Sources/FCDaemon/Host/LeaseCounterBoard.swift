import FCCore
import FCSystem
import Foundation

/// The lease counters of clients that cannot answer a recall (issue 42; docs/PROTOCOL.md section 10.1): the C
/// preload library has no thread, so instead of `LeaseRecalled` and `LeaseReturned` it keeps, for each lease, a count
/// of the claims it runs in it, in a word of a file this daemon creates and both map shared.
///
/// A word is `recalled (bit 63) | generation (bits 32-62) | count (bits 0-31)`. The client starts a claim in a lease
/// by adding 1 and, if the word's upper half is not the lease's generation (recalled, or the counter handed to another
/// lease), takes the 1 back and asks the daemon instead; it ends one by taking 1 back, and sends `LeaseCounterIdle`
/// when that leaves a recalled word at 0. The daemon recalls by setting bit 63: both sides write, then read, with
/// sequentially consistent atomics, so either the client sees the recall before its claim starts, or the daemon sees
/// the claim counted. A count of 0 at the recall returns the lease at once; otherwise it is returned when the client
/// says its count reached 0, or when the client's longest hold has passed (``recall(_:of:)``), as a claim of its is
/// ended past its hold (docs/SEMANTICS.md §2 rule 8).
///
/// The client is trusted no further than its user: a word that does not carry its lease's generation is taken to
/// count claims, so the lease holds until the longest hold.
///
/// - Important: Not thread-safe: the host's event loop.
final class LeaseCounterBoard {
    /// The counters per client file (4 KiB): more than the 256 leases a client may hold at once.
    static let wordsPerFile = 512
    static let recalledBit: UInt64 = 1 << 63

    /// Where a lease's counter is, as `LeaseGranted` tells the client.
    struct Placement: Equatable {
        var file: String
        var slot: Int
        var generation: UInt32
    }

    /// What to do with the leases of a client whose connection closed.
    enum Closing: Equatable {
        /// Not a client with counters: the host's usual rule.
        case notCounting
        /// Nothing runs in its leases (or its process is gone): they go with the connection.
        case release
        /// Claims may still run in them: kept, holding back what conflicts, for at most this long.
        case keep(Duration)
    }

    private final class Holder {
        let pid: Int32
        let maximumHold: Duration
        var file: SharedWordFile?
        var nextGeneration: UInt32 = 0
        var nextUnused = 0
        /// Slots given back, with the word each must still hold to be handed out again (recalled, count 0).
        var freed: [(slot: Int, expected: UInt64)] = []
        var leases: [LeaseID: (slot: Int, generation: UInt32)] = [:]
        /// Recalled leases whose counter was above 0, with the end of their longest hold.
        var recalled: [LeaseID: ContinuousClock.Instant] = [:]

        init(pid: Int32, maximumHold: Duration) {
            self.pid = pid
            self.maximumHold = maximumHold
        }
    }

    /// The longest hold of each counting client when the daemon stopped (``shutDown()``): the next daemon holds what
    /// such a client's leases held no longer than that (it never declares).
    private(set) var handedOnHolds: [ClientID: Duration] = [:]
    /// The folder of the counter files: `lease-counters` beside the daemon's socket, private to the user; made
    /// canonical once created (the library maps only a file in its canonical spelling of the socket's folder).
    private(set) var directory: String
    private var holders: [ClientID: Holder] = [:]
    private var prepared = false

    init(socketPath: String) {
        directory = (socketPath as NSString).deletingLastPathComponent + "/lease-counters"
    }

    /// Whether `word` says that nothing runs in the lease of `generation`: its generation, a count of 0, recalled or
    /// not. The one test of a word's idleness (recall, `LeaseCounterIdle`, close, shutdown).
    static func isIdle(_ word: UInt64, generation: UInt32) -> Bool {
        word & ~recalledBit == UInt64(generation) << 32
    }

    /// Whether `client` keeps lease counters: no hashing while no client keeps them (the hot path of every other
    /// client's effects asks).
    func counts(_ client: ClientID) -> Bool { !holders.isEmpty && holders[client] != nil }

    /// A client said at `Hello` that it keeps counters, and may hold a recalled lease `maximumHold` at most.
    func register(_ client: ClientID, pid: Int32, maximumHold: Duration) {
        holders[client] = Holder(pid: pid, maximumHold: maximumHold)
    }

    /// The longest hold of `client`'s recalled leases (zero for a client without counters).
    func maximumHold(of client: ClientID) -> Duration { holders[client]?.maximumHold ?? .zero }

    /// A counter for a new lease of `client`, or `nil` when none can be had (the file cannot be made, every counter
    /// is in use): the host then takes the lease back at once. O(counters given back and not yet free again).
    func place(_ lease: LeaseID, of client: ClientID) -> Placement? {
        guard let holder = holders[client], let file = file(of: holder, client: client) else { return nil }
        holder.nextGeneration = holder.nextGeneration % 0x7FFF_FFFF + 1
        let generation = holder.nextGeneration
        let word = UInt64(generation) << 32
        var slot: Int?
        for (index, freed) in holder.freed.enumerated()
        where file.compareExchange(freed.slot, expected: freed.expected, desired: word) {
            slot = freed.slot
            holder.freed.remove(at: index)
            break
        }
        if slot == nil, holder.nextUnused < file.count {
            slot = holder.nextUnused
            holder.nextUnused += 1
            file.store(slot!, word)
        }
        guard let slot else { return nil }
        holder.leases[lease] = (slot, generation)
        return Placement(file: file.path, slot: slot, generation: generation)
    }

    /// Recalls `lease`: `true` when no claim runs in it, so it is returned now; otherwise the client returns it when
    /// its last claim there ends (``idle(_:of:)``), or the host does at ``holdEnds(of:)``.
    func recall(_ lease: LeaseID, of client: ClientID) -> Bool {
        guard let holder = holders[client], let (slot, generation) = holder.leases[lease], let file = holder.file else {
            return true
        }
        if Self.isIdle(file.fetchOr(slot, Self.recalledBit), generation: generation) {
            free(lease, of: holder)
            return true
        }
        holder.recalled[lease] = .now + holder.maximumHold
        return false
    }

    /// The client's `LeaseCounterIdle`: the lease whose counter `slot` is, if it is recalled and its counter now says
    /// nothing runs (it is then free); `nil` otherwise (stale, repeated, or a count above 0 again).
    func idle(_ slot: UInt32, of client: ClientID) -> LeaseID? {
        guard let holder = holders[client], let file = holder.file else { return nil }
        guard let (lease, placement) = holder.leases.first(where: { $0.value.slot == Int(slot) }),
            holder.recalled[lease] != nil,
            Self.isIdle(file.load(placement.slot), generation: placement.generation)
        else { return nil }
        free(lease, of: holder)
        return lease
    }

    /// The recalled leases whose longest hold has passed at `now`: the host returns them for their client (the
    /// claims still counted go on without holding anyone back, as a claim past its hold does). They are freed here.
    func holdsEnded(at now: ContinuousClock.Instant = .now) -> [(LeaseID, ClientID)] {
        var ended: [(LeaseID, ClientID)] = []
        for (client, holder) in holders {
            for (lease, end) in holder.recalled where end <= now {
                free(lease, of: holder)
                ended.append((lease, client))
            }
        }
        return ended.sorted { $0.0 < $1.0 }
    }

    /// The earliest end of a longest hold, if a recalled lease waits for one.
    var nextHoldEnd: ContinuousClock.Instant? {
        holders.values.flatMap { $0.recalled.values }.min()
    }

    /// The lease is over for the arbiter some other way (returned by the host): its counter is free again once its
    /// count is 0.
    func forget(_ lease: LeaseID, of client: ClientID) {
        guard let holder = holders[client], holder.leases[lease] != nil else { return }
        free(lease, of: holder)
    }

    /// `client`'s connection closed: every counter is marked recalled (a client that reads its counters again
    /// decides nothing more in process), the file is unlinked, and what the host should do with the leases is
    /// returned: kept for the longest hold while a count is above 0 and the process runs, released otherwise.
    func closed(_ client: ClientID) -> Closing {
        guard let holder = holders.removeValue(forKey: client) else { return .notCounting }
        var running = false
        if let file = holder.file {
            for (slot, generation) in holder.leases.values {
                if !Self.isIdle(file.fetchOr(slot, Self.recalledBit), generation: generation) { running = true }
            }
            file.remove()
        }
        return running && ProcessLiveness.isRunning(holder.pid) ? .keep(holder.maximumHold) : .release
    }

    /// The daemon stops: every counter is marked recalled, so that no client decides a claim in process against
    /// a daemon that is gone, and the files are unlinked (each client keeps its mapping). Returns the leases in which
    /// nothing runs, which the host returns before it hands on what is held (the others are held for their clients
    /// by the next daemon, as any holder's).
    func shutDown() -> [(LeaseID, ClientID)] {
        var idle: [(LeaseID, ClientID)] = []
        handedOnHolds = holders.mapValues(\.maximumHold)
        for (client, holder) in holders {
            guard let file = holder.file else { continue }
            // Every word marked recalled, each lease's as it was read.
            let before = (0..<file.count).map { file.fetchOr($0, Self.recalledBit) }
            for (lease, placement) in holder.leases
            where Self.isIdle(before[placement.slot], generation: placement.generation) {
                idle.append((lease, client))
            }
            file.remove()
        }
        holders = [:]
        return idle.sorted { $0.0 < $1.0 }
    }

    private func free(_ lease: LeaseID, of holder: Holder) {
        guard let (slot, generation) = holder.leases.removeValue(forKey: lease) else { return }
        holder.recalled[lease] = nil
        holder.freed.append((slot, Self.recalledBit | UInt64(generation) << 32))
        // A counter freed without a recall (forget) is marked recalled now, so the client stops deciding there.
        _ = holder.file?.fetchOr(slot, Self.recalledBit)
    }

    private func file(of holder: Holder, client: ClientID) -> SharedWordFile? {
        if let file = holder.file { return file }
        if !prepared {
            // Files left by an earlier daemon of this socket (one that crashed): only one daemon runs per socket.
            try? FileSystemCalls.makeDirectory(directory, permissions: 0o700)
            try? FileSystemCalls.forEachEntry(ofDirectory: directory) { name in
                if name != "." && name != ".." { try? FileSystemCalls.removeFile(directory + "/" + name) }
                return true
            }
            directory = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
            prepared = true
        }
        holder.file = try? SharedWordFile.create(
            at: "\(directory)/\(client.rawValue)-\(holder.pid)",
            words: Self.wordsPerFile
        )
        return holder.file
    }
}
