public import FCCore
import FCDaemon
import Foundation
import Logging
import NIOCore

// Presenters across hosts, part two (issue 41; docs/ARCHITECTURE.md §15.1): the mail between daemons. The arbiter's
// messages for another host's presenter (a stand-in of this arbiter) go to that host as letters; it hands each to its
// presenter as if its own arbiter had sent it (``SessionRouter/relay(_:)``), and sends the presenter's answer back,
// which this arbiter takes as the stand-in's. A put per batch of letters, under
// `<prefix>mail/<receiver host, hex>/<receiver lease, hex>/<sender host, hex>/<sender lease, hex>.<put>` with the
// sender's session; one put in flight per receiver, so letters arrive in order; each host watches its own prefix and
// deletes what it read.
//
// - Important: Every method runs on the adapter's loop, as ClusterHost's.

extension ClusterHost {
    var mailPrefix: String { "\(configuration.keyPrefix)mail/\(hostHex)/" }

    // MARK: Sending

    /// The arbiter's effects for the stand-in of another host's session: its messages go there as letters.
    public func deliver(_ effects: [ArbiterEffect], toRemote client: ClientID) {
        guard let receiver = exchange.sessionOfClient[client] else { return }
        for effect in effects {
            guard case .message(let message) = effect else { continue }
            guard let letter = MailItem(message, presenter: message.presenter.rawValue, paths: sharedPaths) else {
                // A move out of every shared folder: the other host cannot name the new place.
                logger.info(
                    "cluster: a message for another host's presenter names a path outside the shared folders; not sent",
                    metadata: ["message": "\(message)"]
                )
                continue
            }
            post(letter, to: receiver, send: false)
        }
        sendMail(to: receiver)  // The letters of one pass of the arbiter in as few puts as may be.
    }

    func post(_ letter: MailItem, to receiver: String, send: Bool = true) {
        guard exchange.outbox[receiver, default: []].count < PresenterExchange.maximumOutbox else {
            noteError("more than \(PresenterExchange.maximumOutbox) letters wait for \(receiver): one dropped")
            return
        }
        exchange.outbox[receiver, default: []].append(letter)
        if send { sendMail(to: receiver) }
    }

    /// Puts the next batches of letters for `receiver` (`<host, hex>/<lease, hex>`), up to
    /// ``PresenterExchange/putsInFlight`` at once: each key carries its number in this sender's series for the
    /// receiver, and the receiver reads them in that order whatever order etcd applies them in (``mailArrived(_:_:)``).
    /// A put that fails is not retried (it may have been applied: a letter twice is worse than a letter lost, which
    /// the other host takes as a presenter that did not answer, and the asking arbiter as the same after its
    /// timeout); the receiver waits a second for a missing number, then goes on without it.
    func sendMail(to receiver: String) {
        if sendDirect(to: receiver) { return }
        while exchange.inFlight[receiver, default: 0] < PresenterExchange.putsInFlight,
            exchange.outbox[receiver]?.isEmpty == false
        {
            guard sendBatch(to: receiver) else { return }
        }
    }

    /// Puts one batch; `false` when it cannot (stopped, no session).
    private func sendBatch(to receiver: String) -> Bool {
        guard !stopped, let session, let letters = exchange.outbox[receiver], !letters.isEmpty else { return false }
        let batch = Array(letters.prefix(PresenterExchange.lettersPerPut))
        exchange.outbox[receiver]?.removeFirst(batch.count)
        if exchange.outbox[receiver]?.isEmpty == true { exchange.outbox[receiver] = nil }
        guard let toLease = receiver.split(separator: "/").last,
            let value = try? JSONEncoder().encode(MailBatch(toLease: String(toLease), items: batch))
        else { return true }
        let number = exchange.sequences[receiver, default: 0] + 1
        exchange.sequences[receiver] = number
        scheduleMailSweep()
        let key =
            "\(configuration.keyPrefix)mail/\(receiver)/\(hostHex)/\(String(session.lease, radix: 16))."
            + Self.sequence(number)
        exchange.inFlight[receiver, default: 0] += 1
        exchange.lettersThroughEtcd += batch.count
        let (etcd, bound) = (self.etcd, self.bound)
        Task {
            var failure: String?
            do { _ = try await etcd.put(key: key, value: Array(value), lease: session.lease) } catch {
                failure = "\(error)"
            }
            let failed = failure
            bound.execute { host in
                let failure = failed
                host.exchange.inFlight[receiver, default: 1] -= 1
                if host.exchange.inFlight[receiver] == 0 { host.exchange.inFlight[receiver] = nil }
                if let failure { host.noteError("letters to \(receiver) lost: \(failure)") }
                host.sendMail(to: receiver)
            }
        }
        return true
    }

    /// A put's number in a key: 16 hexadecimal digits, so that the keys of one sender's session sort in the order
    /// they were put (the receiver deletes what it read as one range).
    static func sequence(_ number: Int) -> String {
        let digits = String(number, radix: 16)
        return String(repeating: "0", count: max(0, 16 - digits.count)) + digits
    }

    // MARK: Receiving

    /// Deletes the letters read, one range per sender's session and one delete in flight for each: every key of
    /// that session up to the last one read (its keys sort in put order). Off the letters' path: a delete is an etcd
    /// write, and one per letter doubled the writes of a claim that asks a presenter on another host.
    func markRead(_ key: String) {
        guard let dot = key.lastIndex(of: ".") else { return }
        let prefix = String(key[...dot])
        if let known = exchange.readUpTo[prefix], known >= key { return }
        exchange.readUpTo[prefix] = key
        deleteRead(prefix)
    }

    func deleteRead(_ prefix: String) {
        guard !exchange.deletingRead.contains(prefix), !stopped, let last = exchange.readUpTo[prefix] else { return }
        exchange.deletingRead.insert(prefix)
        let (etcd, bound) = (self.etcd, self.bound)
        Task {
            let failed: Bool
            do {
                _ = try await etcd.delete(from: prefix, to: last + "\u{0}")
                failed = false
            } catch { failed = true }
            bound.execute { host in
                host.exchange.deletingRead.remove(prefix)
                if !failed && host.exchange.readUpTo[prefix] == last {
                    host.exchange.readUpTo[prefix] = nil  // Caught up: nothing kept for this sender.
                } else if failed {
                    host.loop.assumeIsolated().scheduleTask(in: .milliseconds(500)) { [weak host] in
                        host?.deleteRead(prefix)
                    }
                } else {
                    host.deleteRead(prefix)
                }
            }
        }
    }

    /// Lists this host's mail, then watches it (``followPrefix(_:_:into:listed:watched:from:tries:)``).
    func watchMail() {
        followPrefix(
            mailPrefix,
            "this host's mail",
            into: \.mailWatch,
            listed: { host, kvs in for kv in kvs { host.mailArrived(kv.key, kv.value) } },
            watched: { host, event in if event.type == .put { host.mailArrived(event.key, event.value) } }
        )
    }

    /// A batch of letters: deleted from etcd, then each handed on in order. Letters for an earlier session of this
    /// host are for presenters it no longer has: the messages among them that wait for an answer are answered at
    /// once, as a presenter that went away answers.
    func mailArrived(_ key: String, _ value: [UInt8]) {
        markRead(key)
        // <receiver lease, hex>/<sender host, hex>/<sender lease, hex>.<number>
        let parts = key.dropFirst(mailPrefix.count).split(separator: "/")
        guard parts.count == 3, let dot = parts[2].firstIndex(of: "."),
            let number = Int(parts[2][parts[2].index(after: dot)...], radix: 16),
            let batch = try? JSONDecoder().decode(MailBatch.self, from: Data(value))
        else {
            noteError("a letter from another host cannot be read, dropped: \(key)")
            return
        }
        batchArrived(batch, number: number, for: String(parts[0]), from: "\(parts[1])/\(parts[2][..<dot])")
    }

    /// A batch of letters numbered `number` in the series of `sender` (`<host, hex>/<lease, hex>`) for this host's
    /// session `toLease`, through etcd or directly (ClusterHost+PeerMail.swift): each letter handed on in order.
    func batchArrived(_ batch: MailBatch, number: Int, for toLease: String, from sender: String) {
        guard batch.items.count <= PresenterExchange.lettersPerPut else {
            noteError("a batch of \(batch.items.count) letters from another host, more than a put holds: dropped")
            return
        }
        guard (1..<Int(Int32.max)).contains(number) else {
            noteError("a batch of letters from \(sender) numbered \(number): dropped")
            return
        }
        guard exchange.ownLeases.contains(batch.toLease), toLease == batch.toLease else {
            // For an earlier session of this host: in any order, answered at once.
            read(batch, from: sender)
            return
        }
        // In the sender's order: a batch ahead of a missing one waits for it, a second at most.
        let series = "\(toLease)/\(sender)"
        let expected = exchange.expected[series] ?? 1
        guard number >= expected else { return }  // Given up on, then applied late: dropped.
        exchange.early[series, default: [:]][number] = batch
        if let waiting = exchange.early[series], waiting.count > PresenterExchange.maximumEarly,
            let first = waiting.keys.min()
        {
            noteError("letters \(expected)..<\(first) from \(sender) never came, \(waiting.count) behind them: skipped")
            exchange.expected[series] = first
        }
        readInOrder(series, from: sender)
        scheduleMailSweep()
    }

    /// Reads the batches of `series` that are next in order; if one is missing, waits a second for it, then skips.
    func readInOrder(_ series: String, from sender: String) {
        // A series forgotten (its sender's session ended: ClusterHost+MailSweep.swift) stays forgotten.
        guard exchange.early[series] != nil else { return }
        var expected = exchange.expected[series] ?? 1
        while let batch = exchange.early[series]?.removeValue(forKey: expected) {
            read(batch, from: sender)
            expected += 1
        }
        exchange.expected[series] = expected
        if exchange.early[series]?.isEmpty == true { exchange.early[series] = nil }
        guard exchange.early[series] != nil, !exchange.gapTimers.contains(series) else { return }
        exchange.gapTimers.insert(series)
        loop.assumeIsolated().scheduleTask(in: .seconds(1)) { [weak self] in
            guard let self else { return }
            self.exchange.gapTimers.remove(series)
            guard let waiting = self.exchange.early[series], let first = waiting.keys.min(),
                let missing = self.exchange.expected[series], first > missing
            else { return self.readInOrder(series, from: sender) }
            self.noteError("letters \(missing)..<\(first) from \(sender) never came: skipped")
            self.exchange.expected[series] = first
            self.readInOrder(series, from: sender)
        }
    }

    /// Hands each letter of a batch on, in order.
    func read(_ batch: MailBatch, from sender: String) {
        // Any session this process opened: its presenters are the same after a session was replaced (a fence, an
        // etcd blip); mail for a session of an earlier process of this host is for presenters it does not have.
        let ours = exchange.ownLeases.contains(batch.toLease)
        for letter in batch.items {
            if letter.reply != nil {
                // A reply for an earlier process's request would answer one of this process's that has its number.
                if ours { replyArrived(letter, from: sender) }
            } else if !ours {
                answerAtOnce(letter, to: sender)
            } else {
                messageArrived(letter, from: sender)
            }
        }
    }

    func replyArrived(_ letter: MailItem, from sender: String) {
        guard let client = exchange.remoteSessions[sender]?.client, let request = letter.request,
            let reply = letter.replyValue
        else { return }
        gates.remote(.presenterReplied(RequestID(request), reply), from: client)
    }

    func messageArrived(_ letter: MailItem, from sender: String) {
        guard let presenter = letter.presenter, var kind = letter.message(paths: sharedPaths) else {
            noteError("a message from another host names what this host does not share, dropped: \(letter)")
            answerAtOnce(letter, to: sender)
            return
        }
        if case .reacquire(let relinquish) = kind {
            guard let entry = exchange.reacquirers.removeValue(forKey: "\(sender)#\(relinquish.rawValue)") else {
                return
            }
            kind = .reacquire(relinquish: entry.relay)
        }
        if kind.needsReply && exchange.relayOrigin.count >= PresenterExchange.maximumOpenRelays {
            noteError("more than \(PresenterExchange.maximumOpenRelays) relayed requests wait: one answered at once")
            answerAtOnce(letter, to: sender)
            return
        }
        let message = PresenterMessage(
            presenter: PresenterID(presenter),
            client: ClientID(0),
            request: nil,
            claim: nil,
            kind: kind,
            movedFromName: letter.movedFromName.flatMap(SharedPaths.unhex)
        )
        let (delivered, relay) = gates.relay(message)
        if delivered && configuration.sharedScanInterval != nil { scanHeard(kind, for: PresenterID(presenter)) }
        guard let request = letter.request, kind.needsReply else { return }
        if delivered, let relay {
            let relinquish = kind == .relinquishToReader || kind == .relinquishToWriter
            exchange.relayOrigin[relay] = (sender, request, relinquish, presenter)
        } else {
            answerAtOnce(letter, to: sender)
        }
    }

    /// Answers a message that waits for a reply as a presenter that is gone does: relinquished without a reacquirer,
    /// or saved.
    func answerAtOnce(_ letter: MailItem, to sender: String) {
        guard letter.reply == nil, let request = letter.request else { return }
        let relinquish = letter.kind == "relinquishToReader" || letter.kind == "relinquishToWriter"
        let reply: PresenterReply = relinquish ? .relinquished(reacquirer: false) : .succeeded
        post(MailItem(reply: reply, to: request), to: sender)
    }

    /// This host's presenter answered a relayed message: the answer goes back to the host that asked.
    /// `nil`: the presenter went away without answering, and is answered for as a presenter that left.
    public func relayReplied(_ request: RequestID, _ reply: PresenterReply?) {
        guard let origin = exchange.relayOrigin.removeValue(forKey: request) else { return }
        let reply = reply ?? (origin.relinquish ? .relinquished(reacquirer: false) : .succeeded)
        if case .relinquished(reacquirer: true) = reply,
            exchange.reacquirers.count < PresenterExchange.maximumOpenRelays
        {
            exchange.reacquirers["\(origin.session)#\(origin.request)"] = (request, origin.presenter)
        }
        post(MailItem(reply: reply, to: origin.request), to: origin.session)
    }

    /// The reacquirers kept for claims of another host's session that has no key left in any shared folder: its
    /// claims there have all ended (a host holds a folder's key while a claim of it runs there), so the reacquire
    /// letters that did not come never will (its daemon died, or a letter was lost). They run now, a moment after the
    /// key went (2 s, for letters still on their way), as a local claimer's reacquirers run when its process dies.
    func sweepReacquirers() {
        guard !exchange.reacquirers.isEmpty, !exchange.sweepScheduled else { return }
        exchange.sweepScheduled = true
        loop.assumeIsolated().scheduleTask(in: .seconds(2)) { [weak self] in
            guard let self else { return }
            self.exchange.sweepScheduled = false
            // Not before every folder's keys are known: a session not seen yet is not a session gone.
            guard self.views.values.allSatisfy({ $0.known != nil }) else { return }
            let live = Set(
                self.views.values.flatMap { $0.known ?? [] }.compactMap { key -> String? in
                    // <prefix>folders/<folder>/<host>/<lease>.<put>: the session is `<host>/<lease>`.
                    let parts = key.name.split(separator: "/")
                    guard parts.count >= 2, let dot = parts[parts.count - 1].firstIndex(of: ".") else { return nil }
                    return "\(parts[parts.count - 2])/\(parts[parts.count - 1][..<dot])"
                }
            )
            for (name, entry) in self.exchange.reacquirers {
                guard let hash = name.firstIndex(of: "#"), !live.contains(String(name[..<hash])) else { continue }
                self.exchange.reacquirers[name] = nil
                let message = PresenterMessage(
                    presenter: PresenterID(entry.presenter),
                    client: ClientID(0),
                    request: nil,
                    claim: nil,
                    kind: .reacquire(relinquish: entry.relay)
                )
                _ = self.gates.relay(message)
            }
        }
    }
}
