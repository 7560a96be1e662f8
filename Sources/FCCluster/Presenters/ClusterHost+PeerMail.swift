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
// one connection to it, shows the token in its first frame (``PeerHello``), then writes its batches of letters
// (``PeerFrame``), each with its number in the series that etcd's mail keys number too: the receiver reads both ways
// in one order (``batchArrived(_:number:for:from:)``), so a sender may switch between them at any time.
//
// etcd stays the way of last resort: for a host that publishes no mailbox (`off`, an older daemon), and for a second
// after a connection to a mailbox failed or broke. What a broken connection loses is lost as a failed put's letters
// are: the receiver's presenter counts as not answering (the asking arbiter's presenter timeout).
//
// Frames are 4-byte big-endian lengths and JSON (swift-nio-extras' LengthFieldPrepender and
// LengthFieldBasedFrameDecoder), at most ``PresenterExchange/maximumFrame`` bytes. A connection that shows no valid
// token within ``PresenterExchange/helloTimeout`` is closed, as is one past ``PresenterExchange/maximumPeers``.
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
            // The address of this machine's route to the first etcd endpoint: a UDP socket connected there (no
            // packet is sent). Off the loop: a name is resolved.
            guard let url = configuration.endpoints.first.flatMap(URL.init(string:)), let host = url.host else {
                return noteError(
                    "no endpoint to find the address to listen on for letters from: letters come through etcd"
                )
            }
            let (port, loop, bound) = (url.port ?? 2379, self.loop, self.bound)
            Task {
                do {
                    let target = try SocketAddress.makeAddressResolvingHost(host, port: port)
                    let channel = try await DatagramBootstrap(group: loop).connect(to: target).get()
                    let local = channel.localAddress?.ipAddress
                    try? await channel.close()
                    bound.execute { host in
                        guard let local else {
                            return host.noteError("no local address reaches etcd: letters come through etcd")
                        }
                        host.listen(on: local, port: 0)
                    }
                } catch {
                    bound.execute { $0.noteError("cannot find an address to listen on for letters: \(error)") }
                }
            }
        }
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
                    try channel.pipeline.syncOperations.addHandlers(
                        ByteToMessageHandler(
                            LengthFieldBasedFrameDecoder(lengthFieldBitLength: .fourBytes),
                            maximumBufferSize: maximumFrame + 4
                        ),
                        PeerReceiver(bound.host)
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

    func dropLink(_ session: String) {
        if case .open(let channel) = exchange.links.removeValue(forKey: session) { channel.close(promise: nil) }
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

    private func connect(to receiver: String, _ record: MailboxRecord) {
        guard let lease = session?.lease else { return }
        exchange.connects += 1
        let attempt = exchange.connects
        exchange.links[receiver] = .connecting(attempt)
        let hello = PeerHello(version: 1, token: record.token, sender: "\(hostHex)/\(String(lease, radix: 16))")
        let bound = self.bound
        let target: SocketAddress
        do { target = try SocketAddress(ipAddress: record.address, port: record.port) } catch {
            return linkFailed(receiver, "\(error)")
        }
        ClientBootstrap(group: loop)
            .connectTimeout(.seconds(1))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        LengthFieldPrepender(lengthFieldBitLength: .fourBytes),
                        PeerSender(bound.host, receiver: receiver)
                    )
                }
            }
            .connect(to: target)
            .whenComplete { result in
                bound.execute { host in
                    // Still this attempt's turn: not dropped (a new session, a new mailbox) or begun again since.
                    guard case .connecting(attempt) = host.exchange.links[receiver] else {
                        if case .success(let channel) = result { channel.close(promise: nil) }
                        return
                    }
                    switch result {
                    case .success(let channel):
                        guard let frame = try? JSONEncoder().encode(hello), !host.stopped else {
                            channel.close(promise: nil)
                            return
                        }
                        host.exchange.links[receiver] = .open(channel)
                        channel.write(channel.allocator.buffer(bytes: frame), promise: nil)
                        host.writeLetters(to: receiver, on: channel)
                        channel.flush()
                    case .failure(let error):
                        host.linkFailed(receiver, "\(error)")
                    }
                }
            }
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

    /// The connection `channel` to `receiver` closed.
    func linkClosed(_ receiver: String, _ channel: any Channel) {
        guard case .open(let current) = exchange.links[receiver], current === channel else { return }
        linkFailed(receiver, "the connection closed")
    }

    // MARK: Receiving

    /// A connection's first frame: whether it shows this host's token (the connection is closed if not).
    func peerHello(_ bytes: ByteBuffer) -> PeerHello? {
        guard let hello = try? JSONDecoder().decode(PeerHello.self, from: Data(bytes.readableBytesView)),
            hello.version == 1, Self.sameToken(hello.token, exchange.token),
            hello.sender.split(separator: "/").count == 2
        else {
            noteError("a connection to this host's mailbox showed no valid token: closed")
            return nil
        }
        return hello
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

/// The sending end of a connection to another host's mailbox: tells the adapter when the connection takes more
/// (after a full socket buffer) and when it closed. Runs on the adapter's loop.
final class PeerSender: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let host: NIOLoopBound<ClusterHost>
    private let receiver: String

    init(_ host: NIOLoopBound<ClusterHost>, receiver: String) {
        self.host = host
        self.receiver = receiver
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}  // The receiver writes nothing.

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { _ = host.value.sendDirect(to: receiver) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        host.value.linkClosed(receiver, context.channel)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// The receiving end of a connection from another host's daemon: the hello, then batches of letters. Runs on the
/// adapter's loop.
final class PeerReceiver: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let host: NIOLoopBound<ClusterHost>
    private var sender: String?
    private var helloTimer: Scheduled<Void>?

    init(_ host: NIOLoopBound<ClusterHost>) {
        self.host = host
    }

    func channelActive(context: ChannelHandlerContext) {
        let adapter = host.value
        guard adapter.exchange.peers.count < PresenterExchange.maximumPeers else {
            adapter.noteError(
                "more than \(PresenterExchange.maximumPeers) connections to this host's mailbox: one closed"
            )
            context.close(promise: nil)
            return
        }
        adapter.exchange.peers[ObjectIdentifier(context.channel)] = context.channel
        let channel = context.channel
        helloTimer = context.eventLoop.assumeIsolated().scheduleTask(in: PresenterExchange.helloTimeout) {
            channel.close(promise: nil)
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard let sender else {
            helloTimer?.cancel()
            guard let hello = host.value.peerHello(bytes) else { return context.close(promise: nil) }
            sender = hello.sender
            return
        }
        if !host.value.peerFrame(bytes, from: sender) { context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        helloTimer?.cancel()
        host.value.exchange.peers[ObjectIdentifier(context.channel)] = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        host.value.noteError("a connection to this host's mailbox failed: \(error)")
        context.close(promise: nil)
    }
}
