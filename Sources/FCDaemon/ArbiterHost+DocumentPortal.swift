import FCCore
import NIOCore

/// Document-portal paths (issue 26; ``DocumentPortalMapping``): each client's inbound paths, once in the daemon's
/// mount namespace, are mapped to the host files the portal exports; what is sent back to the client about those
/// files takes its portal spelling again (before its mount-namespace translation).
extension ArbiterHost {
    /// Whether `event` (in the daemon's paths) names a path under the portal's mount: most events do not, and are
    /// then neither checked for lookups nor mapped. One prefix comparison per path, nothing copied.
    func namesDocumentPortalPath(_ event: ArbiterEvent) -> Bool {
        guard let mountPoint = documentPortal.mountPoint else { return false }
        return event.containsPath(where: { $0.isDescendant(of: mountPoint) })
    }

    /// `event` (in the daemon's paths, naming a portal path: ``namesDocumentPortalPath(_:)``) with its
    /// document-portal paths mapped; remembers the client's spellings.
    func mappingDocumentPortalPaths(_ event: ArbiterEvent, from client: ClientID) -> ArbiterEvent {
        var spelled: [(host: ItemPath, portal: ItemPath)] = []
        let mapped = event.mappingPaths { path, identity in
            guard let host = documentPortal.hostPath(of: path, identity: identity, asking: false),
                let item = documentPortal.document(of: path)?.item
            else { return path }
            // The document's item and its host path (the host path's prefix as deep as the item).
            spelled.append((host.prefix(host.depth - (path.depth - item.depth)), item))
            return host
        }
        for (host, portal) in spelled {
            portalClients.remember(host: host, portal: portal, for: client)
        }
        guard !spelled.isEmpty, case .claimRequested(let sent) = event, case .claimRequested(var request) = mapped
        else { return mapped }
        // A mapped item names a file with another name (its portal path): no lease decides it in process (the
        // holder spells it otherwise: the daemon would hand it back to a lease that cannot take it, again and
        // again), and the leases are recalled before it runs, as for a hard-linked file (docs/SEMANTICS.md §13).
        for index in request.items.indices where request.items[index].path != sent.items[index].path {
            request.items[index].hasOtherNames = true
        }
        return .claimRequested(request)
    }

    /// Whether `event` (from `client`, `inDaemonPaths` once translated) must wait for the portal: it names a document
    /// the cache cannot answer. Then it waits, with the client's later events (``receive(_:from:)`` queues them),
    /// while the portal is asked on ``DocumentPortalClients/lookups``' thread, and the client's connection stops reading; the loop
    /// and every other client go on. When the answers are in (``askPortal(for:_:then:)``), the events are received
    /// again, in order.
    func waitsForPortal(_ event: ArbiterEvent, inDaemonPaths: ArbiterEvent, from client: ClientID) -> Bool {
        let lookups = documentPortal.pendingLookups(for: inDaemonPaths)
        guard !lookups.isEmpty else { return false }
        portalClients.startWaiting(client, with: [event])
        _ = connections[client]?.setOption(ChannelOptions.autoRead, value: false)
        let portal = documentPortal.portal
        askPortal(for: client) {
            DocumentPortalMapping.lookUp(lookups, portal: portal)
        } then: { host, answers in
            host.documentPortal.record(answers)
        }
        return true
    }

    /// Looks for the portal's mount point when it is due (``DocumentPortalMapping/discoveryIsDue()``), off the loop:
    /// the connecting `client`'s events wait for the answer (a claim of its through the portal must be mapped), the
    /// other clients' do not. A portal found has leases kept away from its mount: their holder would decide claims
    /// on portal paths that the daemon maps elsewhere.
    func discoverDocumentPortal(for client: ClientID) {
        guard documentPortal.discoveryIsDue() else { return }
        portalClients.startWaiting(client, with: [])
        let portal = documentPortal.portal
        askPortal(for: client) {
            portal.mountPoint()
        } then: { host, result in
            if let mountPoint = host.documentPortal.recordMountPoint(result) {
                host.apply(host.router.excludeLeases(around: mountPoint))
            }
        }
    }

    /// Runs `question` on ``DocumentPortalClients/lookups``' thread, then `record` with its answer on the loop, then receives
    /// `client`'s waiting events again, in order (one may wait again; the rest then queue behind it).
    private func askPortal<Answer: Sendable>(
        for client: ClientID,
        _ question: @escaping @Sendable () -> Answer,
        then record: @escaping @Sendable (ArbiterHost, Answer) -> Void
    ) {
        portalClients.ask(for: client, question) { answer in
            record(self, answer)
        } resume: { events in
            // Not while every client waits for a mount's type: read again when that hold ends.
            if !self.mountTypes.isHolding {
                _ = self.connections[client]?.setOption(ChannelOptions.autoRead, value: true)
            }
            for event in events { self.receive(event, from: client) }
        }
    }

    /// `effect` for `client` with the host paths it spelled through the portal in its portal spelling.
    func respellingDocumentPortalPaths(_ effect: ArbiterEffect, for client: ClientID) -> ArbiterEffect {
        guard let spellings = portalClients.spellings[client] else { return effect }
        return effect.mappingPaths(spellings.toClient)
    }
}
