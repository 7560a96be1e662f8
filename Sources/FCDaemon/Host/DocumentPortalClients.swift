import FCCore
import NIOCore

/// Each client's state with the document portal (issue 26; ``DocumentPortalMapping``): the portal paths it spelled,
/// for the way back, and its events that wait, in order, for the portal's answer about a document the first one
/// names. The portal is asked on ``lookups``' thread and its answer comes back on the loop: the loop never waits
/// for the portal.
///
/// - Important: Everything runs on the arbiter's event loop, ``loop``, but the questions given to
///   ``ask(for:_:then:resume:)``, which run on ``lookups``' thread; not `Sendable`.
final class DocumentPortalClients {
    let loop: any EventLoop
    /// Where the portal is asked: a serial queue of the daemon's own (tests: a closure of theirs).
    let lookups: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// The portal paths each client spelled, for the way back (ArbiterHost+DocumentPortal.swift).
    private(set) var spellings: [ClientID: DocumentPortalSpellings] = [:]
    /// Each client's events that wait, in order, for the portal's answer.
    private var waits: [ClientID: [ArbiterEvent]] = [:]

    init(loop: any EventLoop, lookups: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.loop = loop
        self.lookups = lookups
    }

    /// Remembers that `client` spelled `host` as `portal`.
    func remember(host: ItemPath, portal: ItemPath, for client: ClientID) {
        spellings[client, default: DocumentPortalSpellings()].remember(host: host, portal: portal)
    }

    /// Queues `event` behind `client`'s events that wait for the portal, if any wait: `false` when none does.
    func queueIfWaiting(_ event: ArbiterEvent, from client: ClientID) -> Bool {
        guard waits[client] != nil else { return false }
        waits[client]?.append(event)
        return true
    }

    /// Whether `client`'s events wait for the portal.
    func isWaiting(_ client: ClientID) -> Bool { waits[client] != nil }

    /// Makes `client`'s events wait, `events` first, until the answer of ``ask(for:_:then:resume:)``.
    func startWaiting(_ client: ClientID, with events: [ArbiterEvent]) {
        waits[client] = events
    }

    /// Runs `question` on ``lookups``' thread, then `answered` with its answer on the loop, then, unless `client` was
    /// forgotten meanwhile (``forget(_:)``), `resume` with its waiting events, in order (which no longer wait).
    func ask<Answer: Sendable>(
        for client: ClientID,
        _ question: @escaping @Sendable () -> Answer,
        then answered: @escaping (Answer) -> Void,
        resume: @escaping ([ArbiterEvent]) -> Void
    ) {
        let loop = self.loop
        let bound = NIOLoopBound((self, answered, resume), eventLoop: loop)
        lookups {
            let answer = question()
            loop.execute {
                let (state, answered, resume) = bound.value
                answered(answer)
                guard let events = state.waits.removeValue(forKey: client) else { return }  // Client gone.
                resume(events)
            }
        }
    }

    /// Forgets a client that disconnected: its spellings, and its waiting events.
    func forget(_ client: ClientID) {
        spellings[client] = nil
        waits[client] = nil
    }
}
