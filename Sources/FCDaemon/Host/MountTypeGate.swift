import FCCore
import NIOCore

/// The clients' events held while the file-system types of new `fuseblk` mounts are read off the loop
/// (``ClientNameFolding``: the mount table and a boot sector each). A device slow to answer holds the events for at
/// most ``timeout``, never the loop, which goes on with timers, connections that end, and dumps. Every event of every
/// client waits, in arrival order: one client's events must not overtake each other, and any client's claim may need
/// the new table (a lease of a folding client is keyed by it).
///
/// - Important: Confined to ``loop``, but the reads, which run where ``reads`` puts them; not `Sendable`.
final class MountTypeGate {
    typealias Mount = ClientNameFolding.FUSEMount

    let loop: any EventLoop
    /// How long the events wait for a read; past it, the mounts not told are given up (``read(_:answered:)``).
    let timeout: TimeAmount
    /// Where a read runs: each on its own, so that a hung device holds up no other (tests give a closure of theirs).
    private let reads: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let readType: @Sendable (Mount) -> String?
    /// The events held, in order, until ``release()``.
    private(set) var heldBack: [(ClientID, ArbiterEvent)] = []
    /// Whether events are held: from ``hold(_:from:)`` to ``release()``.
    private(set) var isHolding = false
    /// One ``timeout`` per hold, whatever reads it chains (mounts made while it lasts): its timer, and whether it
    /// fired (a read started after gives up at once).
    private var holdTimer: Scheduled<Void>?
    private var timeIsUp = false
    private var current: Round?

    /// The reads of one ``read(_:answered:)``.
    private final class Round {
        var told: [(Mount, String?)] = []
        var waiting: Set<Mount>
        let answered: ([(Mount, String?)], [Mount]) -> Void

        init(waiting: Set<Mount>, answered: @escaping ([(Mount, String?)], [Mount]) -> Void) {
            self.waiting = waiting
            self.answered = answered
        }
    }

    init(
        loop: any EventLoop,
        timeout: TimeAmount,
        reads: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        readType: @escaping @Sendable (Mount) -> String? = ClientNameFolding.readType(of:)
    ) {
        self.loop = loop
        self.timeout = timeout
        self.reads = reads
        self.readType = readType
    }

    /// Holds `event` behind those held, if events are held: `false` when none is.
    func holdsBack(_ event: ArbiterEvent, from client: ClientID) -> Bool {
        guard isHolding else { return false }
        heldBack.append((client, event))
        return true
    }

    /// Starts holding events, `event` first (the one that found mounts to read).
    func hold(_ event: ArbiterEvent, from client: ClientID) {
        if !isHolding {
            let bound = NIOLoopBound(self, eventLoop: loop)
            holdTimer = loop.scheduleTask(in: timeout) { bound.value.timeUp() }
        }
        isHolding = true
        heldBack.append((client, event))
    }

    private func timeUp() {
        timeIsUp = true
        if let round = current { finish(round) }
    }

    /// Reads the types of `mounts`, then runs `answered` on the loop with the types told (`nil`: could not be told),
    /// once every read answered or the hold's ``timeout`` passed (counted from its start, across the reads it chains):
    /// then with the mounts whose read did not answer, whose answers are dropped when they come.
    func read(_ mounts: [Mount], answered: @escaping (_ told: [(Mount, String?)], _ unanswered: [Mount]) -> Void) {
        loop.preconditionInEventLoop()
        let round = Round(waiting: Set(mounts), answered: answered)
        current = round
        guard !timeIsUp else {
            finish(round)  // Past the hold's time: given up at once.
            return
        }
        let bound = NIOLoopBound(self, eventLoop: loop)
        let roundBound = NIOLoopBound(round, eventLoop: loop)
        let (loop, readType) = (loop, readType)
        for mount in Set(mounts) {
            reads {
                let type = readType(mount)
                loop.execute {
                    let (gate, round) = (bound.value, roundBound.value)
                    guard gate.current === round, round.waiting.remove(mount) != nil else { return }
                    round.told.append((mount, type))
                    if round.waiting.isEmpty { gate.finish(round) }
                }
            }
        }
    }

    private func finish(_ round: Round) {
        guard current === round else { return }
        current = nil
        round.answered(round.told, round.waiting.sorted { ($0.mountPoint, $0.id) < ($1.mountPoint, $1.id) })
    }

    /// Ends the hold: the events held, in order.
    func release() -> [(ClientID, ArbiterEvent)] {
        isHolding = false
        holdTimer?.cancel()
        holdTimer = nil
        timeIsUp = false
        defer { heldBack = [] }
        return heldBack
    }
}
