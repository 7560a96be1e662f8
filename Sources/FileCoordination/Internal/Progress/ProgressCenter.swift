import Dispatch
import FCCore
import FCProtocol
import FCToolkit
import Foundation
import Logging

/// This process's file progress (issue 44; docs/SEMANTICS.md §16): the progresses it publishes, the subscriptions it
/// made, and the proxies it handed to subscribers, kept in step with filecoordd.
///
/// Three places, each with its rule:
/// - The caller's thread (`publish()`, `unpublish()`, `addSubscriber`, `removeSubscriber`, the file-field setters)
///   only changes the tables under ``state``'s lock and queues the rest: it never waits for the daemon.
/// - ``queue`` (serial) connects, sends every frame in order, samples the published progresses every
///   ``sampleInterval``, and takes the daemon's news from the connection's reading thread.
/// - ``delivery`` (serial) runs the app's code (publishing and unpublishing handlers, a publisher's `cancel()`,
///   `pause()`, `resume()`) and writes the proxies, which live on it (`proxies`).
///
/// A connection that is lost ends every proxy (their unpublishing handlers run: a publication can no longer be
/// followed); the next one receives every publication and subscription again, and its daemon hands them on.
///
/// - Important: Thread-safe. No lock is held while app code runs or a frame is sent.
// @unchecked: `proxies` is touched only on `delivery`; everything else mutable is under `state`'s lock.
final class ProgressCenter: @unchecked Sendable {
    /// The process's center, on the process's client.
    static var shared: ProgressCenter { CoordinationClient.shared.progress }

    /// How often published progresses are read for changes.
    let sampleInterval: Duration

    private struct State {
        var publications: [UInt64: Publication] = [:]
        var publicationOf: [ObjectIdentifier: UInt64] = [:]
        var subscriptions: [UInt64: Subscription] = [:]
        var warnedNoDaemon = false
        /// Something was published or subscribed to once: from then on connections are followed. Until then the
        /// center touches no queue, so a process that never uses file progress runs none of its code.
        var used = false
        /// The last publish was refused: the process has as many publications as a connection may.
        var refusedOverLimit = false
    }

    /// The daemon's limits per connection (docs/PROTOCOL.md §12), kept here so that no call makes the daemon close
    /// the connection.
    static let maximumPublications = 4096
    static let maximumSubscriptions = 1024

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "filecoord.progress")
    private let delivery = DispatchQueue(label: "filecoord.progress.delivery")

    /// On `queue` only: where each publication and subscription was sent (the connection's serial), the item path
    /// each publication was sent with, what each publication's last message carried, and the sampling timer.
    private var publishedOn: [UInt64: UInt64] = [:]
    private var publishedPath: [UInt64: ItemPath] = [:]
    private var lastSent: [UInt64: ProgressSnapshot] = [:]
    private var subscribedOn: [UInt64: UInt64] = [:]
    private var timer: (any DispatchSourceTimer)?

    /// On `delivery` only: the proxies handed to subscribers, by the daemon's publication id, then by subscription,
    /// each with the connection its news comes on and its unpublishing handler.
    private var proxies: [UInt64: [UInt64: HandedProxy]] = [:]
    private struct HandedProxy {
        let proxy: ProgressProxy
        let connection: UInt64
        let unpublished: UncheckedUnpublishing?
    }

    private let ids: IDSource
    private let connect: @Sendable () -> Result<any ArbiterTransport, FileCoordinationError>
    private let current: @Sendable () -> (any ArbiterTransport)?
    /// On `queue` only: the board of a process that coordinates in process (its own publications and subscriptions
    /// meet there, as the daemon's board matches those of all processes).
    private var localBoard = ProgressBoard()
    private let logger: @Sendable () -> Logger

    /// - Parameters:
    ///   - connect: the client's connection, made if needed (``ConnectionManager/transport(retrying:)``).
    ///   - current: the client's connection in charge now, never made here.
    init(
        ids: IDSource,
        sampleInterval: Duration = .milliseconds(100),
        connect: @escaping @Sendable () -> Result<any ArbiterTransport, FileCoordinationError>,
        current: @escaping @Sendable () -> (any ArbiterTransport)?,
        logger: @escaping @Sendable () -> Logger
    ) {
        self.ids = ids
        self.sampleInterval = sampleInterval
        self.connect = connect
        self.current = current
        self.logger = logger
    }

    /// Whether the process has something the daemon must know (so a lost connection is made again at once).
    var needsConnection: Bool {
        state.withLock { !$0.publications.isEmpty || !$0.subscriptions.isEmpty }
    }

    // MARK: Publishers (caller's thread)

    func publish(_ progress: Progress) {
        guard let url = progress.fileURL else {
            logger().warning("Progress.publish() ignored: the progress has no fileURL (set it before publishing)")
            return
        }
        let fields = ProgressSnapshot(fileFieldsOf: progress)
        let publication = Publication(progress: UncheckedProgress(progress), url: url, fields: fields)
        let key = ObjectIdentifier(progress)
        let id: UInt64? = state.withLock { state in
            state.refusedOverLimit = false
            guard state.publicationOf[key] == nil else { return nil }
            // The daemon closes a connection over its limit; the call is refused here instead (docs/PROTOCOL.md §12).
            guard state.publications.count < Self.maximumPublications else {
                state.refusedOverLimit = true
                return nil
            }
            state.used = true
            let id = ids.next()
            state.publicationOf[key] = id
            state.publications[id] = publication
            return id
        }
        guard let id else {
            if state.withLock({ $0.refusedOverLimit }) {
                let limit = Self.maximumPublications
                logger().warning(
                    "Progress.publish() ignored: this process has \(limit) published progresses (unpublish finished ones)"
                )
            }
            return
        }
        queue.async {
            guard let route = self.route() else { return }
            self.send(publication: id, via: route, published: publication)
        }
    }

    func unpublish(_ progress: Progress) {
        let key = ObjectIdentifier(progress)
        let id: UInt64? = state.withLock { state in
            guard let id = state.publicationOf.removeValue(forKey: key) else { return nil }
            state.publications[id] = nil
            return id
        }
        guard let id else { return }
        queue.async {
            self.lastSent[id] = nil
            self.publishedPath[id] = nil
            if let serial = self.publishedOn.removeValue(forKey: id), let route = self.currentRoute(),
                route.serial == serial
            {
                var message = Filecoord_V1_ProgressUnpublish()
                message.publicationID = id
                self.send(Filecoord_V1_Frame(.progressUnpublish(message)), via: route)
            }
            if self.publishedOn.isEmpty { self.stopSampling() }
        }
    }

    /// A file field of `progress` was set through this library's properties: if it is published, its next sample
    /// carries the new value (read here, on the thread that set it).
    func fileFieldsChanged(of progress: Progress) {
        let key = ObjectIdentifier(progress)
        guard state.withLock({ $0.publicationOf[key] != nil }) else { return }
        let fields = ProgressSnapshot(fileFieldsOf: progress)
        state.withLock { state in
            guard let id = state.publicationOf[key] else { return }
            state.publications[id]?.fields = fields
        }
    }

    // MARK: Subscribers (caller's thread)

    func subscribe(at url: URL, handler: @escaping Progress.PublishingHandler) -> ProgressSubscriber {
        let id = ids.next()
        let accepted = state.withLock { state -> Bool in
            guard state.subscriptions.count < Self.maximumSubscriptions else { return false }
            state.used = true
            state.subscriptions[id] = Subscription(url: url, handler: UncheckedHandler(handler))
            return true
        }
        guard accepted else {
            let limit = Self.maximumSubscriptions
            logger().warning("Progress.addSubscriber(forFileURL:) ignored: \(limit) subscriptions (remove unused ones)")
            return ProgressSubscriber(id: id)
        }
        queue.async {
            guard let route = self.route() else { return }
            self.send(subscription: id, via: route)
        }
        return ProgressSubscriber(id: id)
    }

    func unsubscribe(_ subscriber: ProgressSubscriber) {
        guard state.withLock({ $0.subscriptions.removeValue(forKey: subscriber.id) }) != nil else { return }
        queue.async {
            if let serial = self.subscribedOn.removeValue(forKey: subscriber.id), let route = self.currentRoute(),
                route.serial == serial
            {
                var message = Filecoord_V1_ProgressUnsubscribe()
                message.subscriptionID = subscriber.id
                self.send(Filecoord_V1_Frame(.progressUnsubscribe(message)), via: route)
            }
        }
        delivery.async {
            for publication in Array(self.proxies.keys) {
                self.proxies[publication]?[subscriber.id] = nil
                if self.proxies[publication]?.isEmpty == true { self.proxies[publication] = nil }
            }
        }
    }

    // MARK: Connections (any thread)

    /// `transport` was put in charge: it gets every publication and subscription not sent on it yet. A process
    /// that coordinated in process until now (a daemon appeared) leaves its own board first.
    func connected(to transport: DaemonTransport) {
        guard state.withLock({ $0.used }) else { return }
        forget(connection: ProgressRoute.local.serial)
        queue.async {
            self.localBoard = ProgressBoard()
            guard transport.daemonRevision >= ProtocolVersion.progressRevision, !transport.isLost else { return }
            let (publications, subscriptions) = self.state.withLock {
                (Array($0.publications.keys).sorted(), Array($0.subscriptions.keys).sorted())
            }
            for id in publications { self.send(publication: id, via: .daemon(transport)) }
            for id in subscriptions { self.send(subscription: id, via: .daemon(transport)) }
        }
    }

    /// `lost` is gone: what was sent on it must be sent again on the next connection, and the proxies whose news
    /// came on it end (their unpublishing handlers run).
    func transportLost(_ lost: DaemonTransport) {
        guard state.withLock({ $0.used }) else { return }
        forget(connection: lost.serial)
    }

    private func forget(connection serial: UInt64) {
        queue.async {
            self.publishedOn = self.publishedOn.filter { $0.value != serial }
            self.subscribedOn = self.subscribedOn.filter { $0.value != serial }
        }
        delivery.async {
            for (publication, handed) in self.proxies {
                for (subscription, entry) in handed where entry.connection == serial {
                    self.proxies[publication]?[subscription] = nil
                    entry.proxy.end()
                    entry.unpublished?.value()
                }
                if self.proxies[publication]?.isEmpty == true { self.proxies[publication] = nil }
            }
        }
    }

    // MARK: News (the connection's reading thread; never blocks)

    func receive(_ news: ProgressNews, on transport: DaemonTransport) {
        receive(news, connection: transport.serial) { transport.isLost }
    }

    /// News from the connection numbered `serial` (``ProgressRoute/serial``), lost when `isLost()`.
    private func receive(_ news: ProgressNews, connection serial: UInt64, isLost: @escaping @Sendable () -> Bool) {
        switch news {
        case .appeared(let subscription, let publication, let path, let snapshot):
            guard let handler = state.withLock({ $0.subscriptions[subscription]?.handler }) else { return }
            delivery.async {
                // Removed meanwhile, or told twice: nothing to hand. Nor from a connection lost meanwhile: its
                // proxies were ended (forget(connection:)), and such a one would never end.
                guard !isLost(),
                    self.state.withLock({ $0.subscriptions[subscription] != nil }),
                    self.proxies[publication]?[subscription] == nil
                else { return }
                let proxy = ProgressProxy(path: path.description, state: snapshot) { [weak self] action in
                    self?.control(publication, action, connection: serial)
                }
                let unpublished = handler.value(proxy)
                self.proxies[publication, default: [:]][subscription] = HandedProxy(
                    proxy: proxy,
                    connection: serial,
                    unpublished: unpublished.map(UncheckedUnpublishing.init)
                )
            }
        case .changed(let publication, let snapshot):
            delivery.async {
                for entry in self.proxies[publication]?.values ?? [:].values { entry.proxy.apply(snapshot) }
            }
        case .gone(let publication):
            delivery.async {
                guard let handed = self.proxies.removeValue(forKey: publication) else { return }
                for subscription in handed.keys.sorted() {
                    guard let entry = handed[subscription] else { continue }
                    entry.proxy.end()
                    entry.unpublished?.value()
                }
            }
        case .control(let publication, let action):
            guard let progress = state.withLock({ $0.publications[publication]?.progress }) else { return }
            delivery.async {
                switch action {
                case .cancel: progress.value.cancel()
                case .pause: progress.value.pause()
                case .resume: progress.value.resume()
                }
            }
        }
    }

    /// A proxy's `cancel()`, `pause()` or `resume()`: sent to the publisher if the connection the proxy came on is
    /// still the one in charge.
    private func control(_ publication: UInt64, _ action: ProgressAction, connection: UInt64) {
        queue.async {
            guard let route = self.currentRoute(), route.serial == connection else { return }
            var message = Filecoord_V1_ProgressControl()
            message.publicationID = publication
            message.action = action.wire
            self.send(Filecoord_V1_Frame(.progressControl(message)), via: route)
        }
    }

    // MARK: Sending (on `queue`)

    /// Where frames go now, connecting first if needed; `nil` (logged once) without a daemon that knows file
    /// progress or an in-process arbiter.
    private func route() -> ProgressRoute? {
        dispatchPrecondition(condition: .onQueue(queue))
        let reason: String
        switch connect() {
        case .success(let transport as DaemonTransport):
            if transport.daemonRevision >= ProtocolVersion.progressRevision { return .daemon(transport) }
            reason =
                "filecoordd speaks protocol revision \(transport.daemonRevision), which has no file progress "
                + "(revision \(ProtocolVersion.progressRevision) has); restart filecoordd from this release"
        case .success:
            return .local
        case .failure(let error):
            reason = error.message
        }
        let warn = state.withLock { state in
            defer { state.warnedNoDaemon = true }
            return !state.warnedNoDaemon
        }
        if warn { logger().warning("file progress is not shared with other processes: \(reason)") }
        return nil
    }

    /// Where frames go now, without connecting (`nil` while there is no connection).
    private func currentRoute() -> ProgressRoute? {
        switch current() {
        case let transport as DaemonTransport: .daemon(transport)
        case .some: .local
        case nil: nil
        }
    }

    /// Sends `frame` on `route`; `false` if it could not be written (a lost connection, reported as for any frame).
    @discardableResult
    private func send(_ frame: Filecoord_V1_Frame, via route: ProgressRoute) -> Bool {
        switch route {
        case .daemon(let transport):
            return transport.sendProgress(frame)
        case .local:
            for news in localBoard.news(for: frame) { receive(news, connection: route.serial) { false } }
            return true
        }
    }

    /// Sends publication `id` on `route` unless sent there already, or gone and not `published` (``publish(_:)``'s,
    /// sent even if unpublished since, its unpublish queued after it: a copy too quick for the queue appears, then goes).
    private func send(publication id: UInt64, via route: ProgressRoute, published: Publication? = nil) {
        guard publishedOn[id] != route.serial, let entry = published ?? state.withLock({ $0.publications[id] })
        else { return }
        let path: ItemPath
        if let known = publishedPath[id] {
            path = known
        } else {
            do {
                path = try URLMapping.canonicalPath(entry.url)
            } catch {
                logger().warning("Progress.publish() ignored: \(error.message)")
                return
            }
        }
        let snapshot = ProgressSnapshot(sampling: entry.progress.value, fields: entry.fields)
        guard send(.progressPublish(id, path: path, state: snapshot.wire), via: route) else { return }
        publishedOn[id] = route.serial
        publishedPath[id] = path
        lastSent[id] = snapshot
        startSampling()
    }

    /// Sends subscription `id` on `route` unless it was sent there already or is gone.
    private func send(subscription id: UInt64, via route: ProgressRoute) {
        guard subscribedOn[id] != route.serial, let entry = state.withLock({ $0.subscriptions[id] }) else {
            return
        }
        let path: ItemPath
        do {
            path = try URLMapping.canonicalPath(entry.url)
        } catch {
            logger().warning("Progress.addSubscriber(forFileURL:) subscribes to nothing: \(error.message)")
            return
        }
        guard send(.progressSubscribe(id, path: path), via: route) else { return }
        subscribedOn[id] = route.serial
    }

    // MARK: Sampling (on `queue`)

    private func startSampling() {
        guard timer == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let nanoseconds = Int(sampleInterval / .nanoseconds(1))
        let interval = DispatchTimeInterval.nanoseconds(nanoseconds)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .nanoseconds(nanoseconds / 4))
        timer.setEventHandler { [weak self] in self?.sampleAll() }
        timer.resume()
        self.timer = timer
    }

    private func stopSampling() {
        timer?.cancel()
        timer = nil
    }

    /// Reads every published progress and sends what changed, at most one message per publication per tick.
    private func sampleAll() {
        guard !publishedOn.isEmpty else { return stopSampling() }
        let live = state.withLock { $0.publications }
        let route = currentRoute()
        for (id, serial) in publishedOn {
            guard let entry = live[id], let route, route.serial == serial else { continue }
            let snapshot = ProgressSnapshot(sampling: entry.progress.value, fields: entry.fields)
            guard snapshot != lastSent[id] else { continue }
            var message = Filecoord_V1_ProgressUpdate()
            message.publicationID = id
            message.state = snapshot.wire
            guard send(Filecoord_V1_Frame(.progressUpdate(message)), via: route) else { return }
            lastSent[id] = snapshot
        }
    }
}
