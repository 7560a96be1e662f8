import FCCore
import Foundation
import Logging
import NIOCore
import NIOExtras
import NIOPosix

// Presenters across hosts, part three (issue 41; docs/ARCHITECTURE.md §15.1): the mail goes directly between
// daemons. Through etcd a letter costs a write through the cluster's consensus (an fsync on each member) and a watch
// delivery, and a write that asks a presenter on another host needs two of them (the letter, the reply). So each host
// listens on a TCP port (`--cluster-listen`) and publishes where, with a token, under its session:
// `<prefix>mailboxes/<host, hex>/<lease, hex>` (``MailboxRecord``). A sender that knows the receiver's mailbox opens
// one connection to it, shows the token in its first frame (``PeerHello``), waits for the receiver's ``PeerWelcome``,
// then writes its batches of letters (``PeerFrame``), each with its number in the series that etcd's mail keys number
// too: the receiver reads both ways in one order (``batchArrived(_:number:for:from:)``), so a sender may switch
// between them at any time.
//
// etcd stays the way of last resort: for a host that publishes no mailbox (`off`, an older daemon), and for a second
// after a connection to a mailbox failed, was refused or stalled. What a broken connection loses is lost as a failed
// put's letters are: the receiver's presenter counts as not answering (the asking arbiter's presenter timeout).
//
// Frames are 4-byte big-endian lengths and JSON (swift-nio-extras' LengthFieldPrepender and
// LengthFieldBasedFrameDecoder), at most ``PresenterExchange/maximumFrame`` bytes; the limits on connections are in
// docs/PROTOCOL.md §11 and ``PresenterExchange``. The channel handlers are in PeerMailHandlers.swift.
//
// - Important: Every method runs on the adapter's loop, as ClusterHost's; the channels run on that loop too.

extension ClusterHost {
    var mailboxPrefix: String { "\(configuration.keyPrefix)mailboxes/" }

    // MARK: Listening

    /// Starts listening for letters (``ClusterConfiguration/mailListen``); once bound, the mailbox is published.
    func startMailListener() {
        switch configuration.mailListen {
        case .off:
            return
        case .address(let address, let port):
            listen(on: address, port: port)
        case .automatic:
            // The address of this machine's route to an etcd endpoint: a UDP socket connected there (no packet is
            // sent). The first endpoint reached through another interface than loopback wins (a local etcd member or
            // proxy on 127.0.0.1 says nothing of the address other hosts reach); loopback only if all are local (one
            // machine). Off the loop: names are resolved.
            let (endpoints, loop, bound) = (configuration.endpoints, self.loop, self.bound)
            Task {
                let found = await ClusterHost.address(reaching: endpoints, on: loop)
                bound.execute { host in
                    guard let address = found.address else {
                        return host.noteError(
                            "cannot find an address to listen on for letters (\(found.failure)): they come through etcd"
                        )
                    }
                    host.listen(on: address, port: 0)
                }
            }
        }
    }

    /// This machine's address towards the first of `endpoints` not reached through loopback, else towards the first
    /// reached at all; `nil` and why when none is.
    static func address(
        reaching endpoints: [String],
        on loop: any EventLoop
    ) async -> (address: String?, failure: String) {
        var loopback: String?
        var failure = "no etcd endpoint names a host"
        for endpoint in endpoints {
            guard let url = URL(string: endpoint), let name = url.host else { continue }
            let port = url.port ?? 2379
            do {
                let target = try SocketAddress.makeAddressResolvingHost(name, port: port)
                let channel = try await DatagramBootstrap(group: loop).connect(to: target).get()
                let address = channel.localAddress?.ipAddress
                try? await channel.close()
                guard let address else { continue }
                guard isLoopback(address) else { return (address, "") }
                loopback = loopback ?? address
            } catch {
                failure = "\(error)"
            }
        }
        return (loopback, failure)
    }

    /// Whether `address` (as `SocketAddress.ipAddress` writes it) is a loopback address: 127.0.0.0/8, ::1.
    static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("127.") || address == "::1" || address.hasPrefix("::ffff:127.")
    }

    func listen(on address: String, port: Int) {
        guard !stopped else { return }
        let bound = self.bound
        let maximumFrame = PresenterExchange.maximumFrame
        let bootstrap = ServerBootstrap(group: loop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let helloGuard = PeerHelloGuard()
                    try channel.pipeline.syncOperations.addHandlers(
                        IdleStateHandler(readTimeout: PresenterExchange.idlePeer),
                        helloGuard,
                        ByteToMessageHandler(
                            LengthFieldBasedFrameDecoder(lengthFieldBitLength: .fourBytes),
                            maximumBufferSize: maximumFrame + 4
                        ),
                        LengthFieldPrepender(lengthFieldBitLength: .fourBytes),
                        PeerReceiver(bound.host, guard: helloGuard)
                    )
                }
            }
        let target: SocketAddress
        do { target = try SocketAddress(ipAddress: address, port: port) } catch {
            return noteError("cannot listen for letters on \(address):\(port): \(error); letters come through etcd")
        }
        bootstrap.bind(to: target).whenComplete { result in
            bound.execute { host in
                switch result {
                case .success(let channel):
                    guard !host.stopped, let port = channel.localAddress?.port else {
                        channel.close(promise: nil)
                        return
                    }
                    host.exchange.listener = channel
                    host.exchange.mailbox = MailboxRecord(address: address, port: port, token: host.exchange.token)
                    host.logger.info(
                        "cluster: taking letters from other hosts directly",
                        metadata: ["cluster.mail": "\(ClusterConfiguration.MailListen.address(address, port: port))"]
                    )
                    host.publishMailbox()
                case .failure(let error):
                    host.noteError(
                        "cannot listen for letters on \(address):\(port): \(error); letters come through etcd"
                    )
                }
            }
        }
    }

    /// Puts this host's mailbox under the current session (a new session puts it again).
    func publishMailbox() {
        guard let mailbox = exchange.mailbox, let lease = session?.lease,
            let value = try? JSONEncoder().encode(mailbox)
        else { return }
        queuePresenceValue("\(mailboxPrefix)\(hostHex)/\(String(lease, radix: 16))", Array(value))
    }

    // MARK: The other hosts' mailboxes

    /// Lists the other hosts' mailboxes, then watches them.
    func watchMailboxes() {
        followPrefix(
            mailboxPrefix,
            "the other hosts' mailboxes",
            into: \.mailboxWatch,
            listed: { host, kvs in
                let sessions = Set(kvs.compactMap { host.mailboxPut($0.key, $0.value) })
                for session in host.exchange.mailboxes.keys where !sessions.contains(session) {
                    host.mailboxDeleted(session)
                }
            },
            watched: { host, event in
                switch event.type {
                case .put: _ = host.mailboxPut(event.key, event.value)
                case .delete:
                    let session = String(event.key.dropFirst(host.mailboxPrefix.count))
                    host.mailboxDeleted(session)
                }
            }
        )
    }

    /// Another host's mailbox, put: its session (`<host, hex>/<lease, hex>`), or `nil` for this host's own or one
    /// that cannot be read.
    func mailboxPut(_ key: String, _ value: [UInt8]) -> String? {
        let session = String(key.dropFirst(mailboxPrefix.count))
        let parts = session.split(separator: "/")
        guard parts.count == 2, String(parts[0]) != hostHex else { return nil }
        guard let record = try? JSONDecoder().decode(MailboxRecord.self, from: Data(value)),
            (1...65_535).contains(record.port)
        else {
            noteError("another host's mailbox cannot be read, ignored: \(key)")
            return nil
        }
        if exchange.mailboxes[session] != record {
            exchange.mailboxes[session] = record
            dropLink(session)  // Another place: the next letters go there.
        }
        return session
    }

    func mailboxDeleted(_ session: String) {
        guard exchange.mailboxes.removeValue(forKey: session) != nil else { return }
        dropLink(session)
    }

    /// Forgets the connection to `session`'s mailbox (closed if open); what waits for it goes the way it can now.
    func dropLink(_ session: String) {
        guard let link = exchange.links.removeValue(forKey: session) else { return }
        if case .open(let channel) = link { channel.close(promise: nil) }
        if exchange.outbox[session] != nil { sendMail(to: session) }
    }

    // MARK: Sending

    /// Sends what waits for `receiver` directly, if it has a mailbox and no connection to it failed in the last
    /// second; `false` when the letters must go through etcd.
    func sendDirect(to receiver: String) -> Bool {
        guard !stopped, session != nil, let record = exchange.mailboxes[receiver] else { return false }
        switch exchange.links[receiver] {
        case .broken(let until) where NIODeadline.now() < until: return false
        case .connecting: return true
        case .open(let channel):
            writeLetters(to: receiver, on: channel)
            return true
        case .broken, nil:
            connect(to: receiver, record)
            return true
        }
    }

    /// Opens a connection to `receiver`'s mailbox and says hello; the letters go once the receiver accepts it
    /// (``linkAccepted(_:attempt:channel:)``), within ``PresenterExchange/greetingTimeout`` or not at all (they go
    /// through etcd then: none was written).
    private func connect(to receiver: String, _ record: MailboxRecord) {
        guard let lease = session?.lease,
            let hello = try? JSONEncoder().encode(
                PeerHello(version: 1, token: record.token, sender: "\(hostHex)/\(String(lease, radix: 16))")
            )
        else { return }
        exchange.connects += 1
        let attempt = exchange.connects
        exchange.links[receiver] = .connecting(attempt)
        let bound = self.bound
        let target: SocketAddress
        do { target = try SocketAddress(ipAddress: record.address, port: record.port) } catch {
            return linkFailed(receiver, "\(error)")
        }
        ClientBootstrap(group: loop)
            .connectTimeout(PresenterExchange.greetingTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        ByteToMessageHandler(
                            LengthFieldBasedFrameDecoder(lengthFieldBitLength: .fourBytes),
                            maximumBufferSize: PresenterExchange.maximumHello
                        ),
                        LengthFieldPrepender(lengthFieldBitLength: .fourBytes),
                        IdleStateHandler(writeTimeout: PresenterExchange.idleLink),
                        PeerSender(bound.host, receiver: receiver, attempt: attempt)
                    )
                }
            }
            .connect(to: target)
            .whenComplete { result in
                bound.execute { host in
                    // Still this attempt's turn: not dropped (a new session, a new mailbox) or begun again since.
                    guard case .connecting(attempt) = host.exchange.links[receiver], !host.stopped else {
                        if case .success(let channel) = result { channel.close(promise: nil) }
                        return
                    }
                    switch result {
                    case .success(let channel):
                        channel.writeAndFlush(channel.allocator.buffer(bytes: hello), promise: nil)
                        host.loop.assumeIsolated().scheduleTask(in: PresenterExchange.greetingTimeout) {
                            [weak host] in
                            guard let host, case .open(let open) = host.exchange.links[receiver], open === channel
                            else {
                                channel.close(promise: nil)  // Never accepted (or dropped meanwhile).
                                return
                            }
                        }
                    case .failure(let error):
                        host.linkFailed(receiver, "\(error)")
                    }
                }
            }
    }

    /// The receiver accepted the hello on `channel`: the letters go.
    func linkAccepted(_ receiver: String, attempt: Int, channel: any Channel) {
        guard case .connecting(attempt) = exchange.links[receiver], !stopped else {
            channel.close(promise: nil)
            return
        }
        exchange.links[receiver] = .open(channel)
        writeLetters(to: receiver, on: channel)
    }

    /// Writes the letters waiting for `receiver` while the connection takes them (the rest wait for
    /// ``PeerSender``'s word that it takes more, or for a failure that sends them through etcd).
    func writeLetters(to receiver: String, on channel: any Channel) {
        guard let toLease = receiver.split(separator: "/").last else { return }
        var wrote = false
        while channel.isWritable, let letters = exchange.outbox[receiver], !letters.isEmpty {
            let batch = Array(letters.prefix(PresenterExchange.lettersPerPut))
            exchange.outbox[receiver]?.removeFirst(batch.count)
            if exchange.outbox[receiver]?.isEmpty == true { exchange.outbox[receiver] = nil }
            let number = exchange.sequences[receiver, default: 0] + 1
            exchange.sequences[receiver] = number
            scheduleMailSweep()
            guard
                let frame = try? JSONEncoder().encode(
                    PeerFrame(number: number, batch: MailBatch(toLease: String(toLease), items: batch))
                )
            else { continue }
            channel.write(channel.allocator.buffer(bytes: frame), promise: nil)
            exchange.lettersDirect += batch.count
            wrote = true
        }
        if wrote { channel.flush() }
    }

    /// A connection to `receiver` failed or broke: its letters go through etcd for a second.
    func linkFailed(_ receiver: String, _ reason: String) {
        exchange.links[receiver] = .broken(until: .now() + .seconds(1))
        noteError("letters to \(receiver) go through etcd for a second: its mailbox failed: \(reason)")
        sendMail(to: receiver)
    }

    /// The connection `channel` (of the connect numbered `attempt`) to `receiver` closed. Before the receiver
    /// accepted it, or with letters waiting, it failed; an idle one that closed is just forgotten (the next letter
    /// opens another).
    func linkClosed(_ receiver: String, attempt: Int, _ channel: any Channel) {
        switch exchange.links[receiver] {
        case .connecting(attempt):
            linkFailed(receiver, "the receiver closed the connection before it accepted it")
        case .open(let current) where current === channel:
            if exchange.outbox[receiver] == nil {
                exchange.links[receiver] = nil
            } else {
                linkFailed(receiver, "the connection closed")
            }
        default:
            break
        }
    }

    /// The connection to `receiver` took nothing for ``PresenterExchange/stalledLink``: the receiver's host is cut
    /// off or stopped. It is closed, and the letters go through etcd (the receiver may still reach etcd).
    func linkStalled(_ receiver: String, _ channel: any Channel) {
        guard case .open(let current) = exchange.links[receiver], current === channel, !channel.isWritable else {
            return
        }
        channel.close(promise: nil)
        linkFailed(receiver, "the connection took nothing for \(PresenterExchange.stalledLink)")
    }

    /// The connection to `receiver` carried nothing for ``PresenterExchange/idleLink``: closed, and forgotten.
    func linkIdle(_ receiver: String, _ channel: any Channel) {
        guard case .open(let current) = exchange.links[receiver], current === channel else { return }
        exchange.links[receiver] = nil
        channel.close(promise: nil)
    }

    // MARK: Receiving

    /// A connection's first frame: whether it shows this host's token (the connection is closed if not).
    func peerHello(_ bytes: ByteBuffer) -> PeerHello? {
        guard let hello = try? JSONDecoder().decode(PeerHello.self, from: Data(bytes.readableBytesView)),
            hello.version == 1, Self.sameToken(hello.token, exchange.token), Self.isSession(hello.sender)
        else {
            noteError("a connection to this host's mailbox showed no valid token: closed")
            return nil
        }
        return hello
    }

    /// Whether `text` names a session as mail does: `<host, hex>/<lease, hex>`, lowercase, neither empty.
    static func isSession(_ text: String) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 2
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 512
                    && part.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
            }
    }

    /// A batch of letters from `sender`, directly.
    func peerFrame(_ bytes: ByteBuffer, from sender: String) -> Bool {
        guard let frame = try? JSONDecoder().decode(PeerFrame.self, from: Data(bytes.readableBytesView)) else {
            noteError("letters from \(sender) cannot be read: its connection is closed")
            return false
        }
        batchArrived(frame.batch, number: frame.number, for: frame.batch.toLease, from: sender)
        return true
    }

    /// Compares two tokens in a time that does not depend on where they differ.
    static func sameToken(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for index in x.indices { difference |= x[index] ^ y[index] }
        return difference == 0
    }

    /// A new process's token: 32 random bytes, hexadecimal.
    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return SharedPaths.hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// Closes the listener and every connection (the daemon stops).
    func stopPeerMail() {
        exchange.listener?.close(promise: nil)
        exchange.listener = nil
        for session in Array(exchange.links.keys) { dropLink(session) }
        for channel in exchange.peers.values { channel.close(promise: nil) }
        exchange.peers = [:]
    }
}
