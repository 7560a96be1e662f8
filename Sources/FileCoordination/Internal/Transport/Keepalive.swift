import FCToolkit
import Foundation
import Synchronization

/// How long a waiting call lets the daemon stay silent before it asks, and how long it waits for the answer (issue
/// 28; docs/ARCHITECTURE.md §8.1, "A busy daemon or a hung one").
struct KeepalivePolicy: Sendable, Equatable {
    /// How long a `Ping` may stay unanswered before the calls waiting on the connection fail:
    /// `FILECOORD_KEEPALIVE_TIMEOUT` seconds, default 10.
    var timeout: Duration

    /// How long a call waits, with nothing heard from the daemon for as long, before a `Ping` goes: 5 s, or half the
    /// timeout when that is less.
    var interval: Duration { min(.seconds(5), timeout / 2) }

    /// How often a waiting thread looks: a quarter of the interval, at most 1 s.
    var checkEvery: Duration { min(.seconds(1), interval / 4) }

    static let standard = KeepalivePolicy(timeout: .seconds(10))

    /// The policy `environment` asks for (`FILECOORD_KEEPALIVE_TIMEOUT`, in seconds; unset, invalid or not
    /// positive: 10).
    static func fromEnvironment(_ environment: [String: String]) -> KeepalivePolicy {
        guard let seconds = environment["FILECOORD_KEEPALIVE_TIMEOUT"].flatMap(Double.init), seconds > 0,
            seconds < 1e9
        else { return .standard }
        return KeepalivePolicy(timeout: .milliseconds(Int64(seconds * 1000)))
    }
}

/// One connection's keepalive: how much it has received, and the `Ping` it waits an answer for. The reader role's
/// holder counts what it receives (``heard()``, one relaxed atomic add); the threads that wait for the daemon ask
/// ``check(waitingSince:)`` every ``KeepalivePolicy/checkEvery``, which says whether to send a `Ping` or to give up.
///
/// - Important: Thread-safe.
final class KeepaliveClock: Sendable {
    let policy: KeepalivePolicy
    /// Whether the daemon answers `Ping` (its `HelloReply.revision` is 2 or more); an older daemon is never asked.
    let enabled: Bool
    private let clock = ContinuousClock()
    private let received = Atomic<UInt64>(0)

    private struct State {
        /// ``received`` when it was last seen to change, and when.
        var lastCount: UInt64 = 0
        var lastChange: ContinuousClock.Instant
        /// The `Ping` waiting for an answer: when it went.
        var pingSentAt: ContinuousClock.Instant?
        var nonce: UInt64 = 0
    }
    private let state: Locked<State>

    init(policy: KeepalivePolicy, enabled: Bool) {
        self.policy = policy
        self.enabled = enabled
        self.state = Locked(State(lastChange: ContinuousClock.now))
    }

    var now: ContinuousClock.Instant { clock.now }

    /// Something arrived from the daemon.
    func heard() {
        received.add(1, ordering: .relaxed)
    }

    /// What a thread waiting since `waitingSince` should do now.
    enum Verdict: Equatable {
        /// Keep waiting.
        case wait
        /// Send a `Ping` with this nonce, then keep waiting.
        case ping(UInt64)
        /// Nothing came for `silence`, and a `Ping` went unanswered for the timeout: the daemon stopped answering.
        case silent(Duration)
    }

    func check(waitingSince: ContinuousClock.Instant) -> Verdict {
        guard enabled else { return .wait }
        let now = clock.now
        let count = received.load(ordering: .relaxed)
        return state.withLock { state in
            if count != state.lastCount {
                state.lastCount = count
                state.lastChange = now
                state.pingSentAt = nil
            }
            // One Ping at a time, whoever sent it: a daemon silent for its whole timeout fails every waiting call
            // (also one that began waiting meanwhile: the daemon has been silent for longer than that call).
            if let sent = state.pingSentAt {
                guard now - sent >= policy.timeout else { return .wait }
                // Given up: a call made after this waits its own interval and timeout again.
                state.pingSentAt = nil
                return .silent(now - state.lastChange)
            }
            guard now - waitingSince >= policy.interval, now - state.lastChange >= policy.interval else {
                return .wait
            }
            state.pingSentAt = now
            state.nonce &+= 1
            return .ping(state.nonce)
        }
    }
}
