import FCCore
import NIOCore

// The mail's series, kept per session, made bounded (stop 68; docs/ARCHITECTURE.md §15.1). The mail numbers its
// batches in a series per pair of sessions: the next number this host reads from each sender's session, per session
// of its own (`PresenterExchange.expected`, `early`), and the last number it sent each receiving session
// (`sequences`). Nothing said when a series ends, so until stop 68 every session of another host that ever mailed
// this host, and every session of this process, stayed in these tables for the daemon's life (a host fenced every
// few seconds by a flaky link added one at every host, each time).
//
// A series goes when its other session is known gone: every two times to live, this host asks etcd how long each
// session it keeps a series for has left (`LeaseTimeToLive`), and forgets the series of those etcd says ended. A
// series is never forgotten for a session that may be alive: a receiver still reading would drop what this host sent
// it under numbers counted from 1 again, and a sender's next batch would wait a second for numbers it sent before.
// This process's own sessions are kept to the last ``PresenterExchange/maximumOwnLeases``.
//
// - Important: Every method runs on the adapter's loop, as ClusterHost's.

extension ClusterHost {
    /// How long between two checks of the mail's sessions: twice a session's time to live.
    var mailSweepInterval: Duration { configuration.policy.sessionTTL * 2 }

    /// A session of this process opened: mail for it is for this process's presenters. The oldest beyond
    /// ``PresenterExchange/maximumOwnLeases`` is let go, with its series.
    func ownLeaseOpened(_ lease: String) {
        guard !exchange.ownLeases.contains(lease) else { return }
        exchange.ownLeases.append(lease)
        while exchange.ownLeases.count > PresenterExchange.maximumOwnLeases {
            let old = exchange.ownLeases.removeFirst()
            forgetSeries { $0.hasPrefix("\(old)/") }
        }
    }

    /// Schedules the next check of the mail's sessions, unless one is scheduled or running, or no series is kept.
    func scheduleMailSweep() {
        guard !exchange.mailSweepScheduled, !stopped,
            !(exchange.sequences.isEmpty && exchange.expected.isEmpty && exchange.early.isEmpty)
        else { return }
        exchange.mailSweepScheduled = true
        exchange.mailSweepTask = loop.assumeIsolated().scheduleTask(in: TimeAmount(mailSweepInterval)) {
            [weak self] in
            self?.sweepMailSeries()
        }
    }

    /// The other hosts' sessions (`<host, hex>/<lease, hex>`) the mail keeps a series for, either way.
    var sessionsInMail: Set<String> {
        var sessions = Set(exchange.sequences.keys)
        for series in exchange.expected.keys { sessions.insert(Self.sender(ofSeries: series)) }
        for series in exchange.early.keys { sessions.insert(Self.sender(ofSeries: series)) }
        return sessions
    }

    /// The sending session of a series `<own lease>/<sender host, hex>/<sender lease, hex>`.
    static func sender(ofSeries series: String) -> String {
        guard let slash = series.firstIndex(of: "/") else { return series }
        return String(series[series.index(after: slash)...])
    }

    /// Asks etcd for the time left to each session the mail keeps a series for, and forgets the series of those
    /// that ended. A session whose lease cannot be asked about now (etcd unreachable) is asked again next time.
    func sweepMailSeries() {
        let sessions = sessionsInMail
        guard !stopped, !sessions.isEmpty else {
            exchange.mailSweepScheduled = false
            return
        }
        let (etcd, bound) = (self.etcd, self.bound)
        Task {
            var ended: [String] = []
            for session in sessions {
                guard let text = session.split(separator: "/").last, let lease = Int64(text, radix: 16) else {
                    ended.append(session)  // Not a session's name: no batch of it can be read in order either.
                    continue
                }
                if let left = try? await etcd.leaseTimeToLive(lease), left < 0 { ended.append(session) }
            }
            let gone = ended
            bound.execute { host in
                for session in gone { host.mailSessionEnded(session) }
                host.exchange.mailSweepScheduled = false
                host.scheduleMailSweep()
            }
        }
    }

    /// `session` (another host's) is gone from etcd: its series this host reads are forgotten, and, once nothing waits
    /// to go to it, the series this host sends it and the mail left for it in etcd (nobody will read it).
    func mailSessionEnded(_ session: String) {
        forgetSeries { Self.sender(ofSeries: $0) == session }
        guard exchange.sequences[session] != nil, exchange.outbox[session] == nil, exchange.inFlight[session] == nil
        else { return }
        exchange.sequences[session] = nil
        let (etcd, prefix) = (self.etcd, "\(configuration.keyPrefix)mail/\(session)/\(hostHex)/")
        Task { _ = try? await etcd.delete(prefix: prefix) }
    }

    /// Forgets the series this host reads whose name `matches`: their next number and the batches kept ahead of a
    /// missing one (a gap's timer finds nothing left, and leaves nothing).
    func forgetSeries(where matches: (String) -> Bool) {
        for series in exchange.expected.keys where matches(series) { exchange.expected[series] = nil }
        for series in exchange.early.keys where matches(series) { exchange.early[series] = nil }
    }
}
