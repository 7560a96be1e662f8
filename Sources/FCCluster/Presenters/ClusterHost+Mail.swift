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
            post(letter, to: receiver)
        }
    }

    func post(_ letter: MailItem, to receiver: String) {
        guard exchange.outbox[receiver, default: []].count < PresenterExchange.maximumOutbox else {
            noteError("more than \(PresenterExchange.maximumOutbox) letters wait for \(receiver): one dropped")
            return
        }
        exchange.outbox[receiver, default: []].append(letter)
        sendMail(to: receiver)
    }

    /// Puts the next batch of letters for `receiver` (`<host, hex>/<lease, hex>`), if none is on its way. A put that
    /// fails is not retried (it may have been applied: a letter twice is worse than a letter lost, which the other
    /// host takes as a presenter that did not answer, and the asking arbiter as the same after its timeout).
    func sendMail(to receiver: String) {
        guard !exchange.sending.contains(receiver), !stopped, let session,
            let letters = exchange.outbox[receiver], !letters.isEmpty
        else { return }
        let batch = Array(letters.prefix(PresenterExchange.lettersPerPut))
        exchange.outbox[receiver]?.removeFirst(batch.count)
        if exchange.outbox[receiver]?.isEmpty == true { exchange.outbox[receiver] = nil }
        guard let toLease = receiver.split(separator: "/").last,
            let value = try? JSONEncoder().encode(MailBatch(toLease: String(toLease), items: batch))
        else { return }
        exchange.mailPuts += 1
        let key =
            "\(configuration.keyPrefix)mail/\(receiver)/\(hostHex)/\(String(session.lease, radix: 16))."
            + String(exchange.mailPuts, radix: 16)
        exchange.sending.insert(receiver)
        let (etcd, bound) = (self.etcd, self.bound)
        Task {
            var failure: String?
            do { _ = try await etcd.put(key: key, value: Array(value), lease: session.lease) } catch {
                failure = "\(error)"
            }
            let failed = failure
            bound.execute { host in
                let failure = failed
                host.exchange.sending.remove(receiver)
                if let failure { host.noteError("letters to \(receiver) lost: \(failure)") }
                host.sendMail(to: receiver)
            }
        }
    }

    // MARK: Receiving

    /// Lists this host's mail (when `revision` is `nil`), then watches it from the list's revision on, as
    /// ``watchPresence(from:tries:)`` does.
    func watchMail(from revision: Int64? = nil, tries: Int = 0) {
        let (etcd, bound, prefix) = (self.etcd, self.bound, mailPrefix)
        exchange.mailWatch = Task {
            var next = revision
            var delivered = false
            do {
                if next == nil {
                    let range = try await etcd.range(prefix: prefix)
                    bound.execute { host in for kv in range.kvs { host.mailArrived(kv.key, kv.value) } }
                    next = range.revision + 1
                }
                for try await event in etcd.watch(prefix: prefix, fromRevision: next) {
                    next = event.modRevision + 1
                    delivered = true
                    guard event.type == .put else { continue }
                    bound.execute { $0.mailArrived(event.key, event.value) }
                }
            } catch {
                if let failure = error as? EtcdError, case .watchCanceled = failure.reason { next = nil }
                bound.execute { $0.noteError("the watch of this host's mail ended: \(error)") }
            }
            guard !Task.isCancelled else { return }
            let failures = delivered ? 0 : tries + 1
            try? await Task.sleep(for: .milliseconds(100 << min(failures, 5)))
            let resume = next
            bound.execute { host in
                guard !host.stopped else { return }
                host.watchMail(from: resume, tries: failures)
            }
        }
    }

    /// A batch of letters: deleted from etcd, then each handed on in order. Letters for an earlier session of this
    /// host are for presenters it no longer has: the messages among them that wait for an answer are answered at
    /// once, as a presenter that went away answers.
    func mailArrived(_ key: String, _ value: [UInt8]) {
        let etcd = self.etcd
        Task { _ = try? await etcd.delete(key: key) }
        // <receiver lease, hex>/<sender host, hex>/<sender lease, hex>.<put>
        let parts = key.dropFirst(mailPrefix.count).split(separator: "/")
        guard parts.count == 3, let dot = parts[2].firstIndex(of: "."),
            let batch = try? JSONDecoder().decode(MailBatch.self, from: Data(value))
        else {
            noteError("a letter from another host cannot be read, dropped: \(key)")
            return
        }
        let sender = "\(parts[1])/\(parts[2][..<dot])"
        let current = session.map { String($0.lease, radix: 16) }
        for letter in batch.items {
            if letter.reply != nil {
                replyArrived(letter, from: sender)
            } else if batch.toLease != current || parts[0] != batch.toLease {
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
            guard let relay = exchange.reacquirers.removeValue(forKey: "\(sender)#\(relinquish.rawValue)") else {
                return
            }
            kind = .reacquire(relinquish: relay)
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
            exchange.relayOrigin[relay] = (sender, request)
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
    public func relayReplied(_ request: RequestID, _ reply: PresenterReply) {
        guard let origin = exchange.relayOrigin.removeValue(forKey: request) else { return }
        if case .relinquished(reacquirer: true) = reply,
            exchange.reacquirers.count < PresenterExchange.maximumOpenRelays
        {
            exchange.reacquirers["\(origin.session)#\(origin.request)"] = request
        }
        post(MailItem(reply: reply, to: origin.request), to: origin.session)
    }
}
