import FCCore

/// Document-portal paths (issue 26; ``DocumentPortalMapping``): each client's inbound paths, once in the daemon's
/// mount namespace, are mapped to the host files the portal exports; what is sent back to the client about those
/// files takes its portal spelling again (before its mount-namespace translation).
extension ArbiterHost {
    /// `event` (in the daemon's paths) with its document-portal paths mapped; remembers the client's spellings.
    func mappingDocumentPortalPaths(_ event: ArbiterEvent, from client: ClientID) -> ArbiterEvent {
        // Most events name no portal path: one prefix comparison each, nothing copied.
        guard let mountPoint = documentPortal.mountPoint,
            event.containsPath(where: { $0.isDescendant(of: mountPoint) })
        else { return event }
        var spelled: [(host: ItemPath, portal: ItemPath)] = []
        let mapped = event.mappingPaths { path, identity in
            guard let host = documentPortal.hostPath(of: path, identity: identity),
                let item = documentPortal.document(of: path)?.item
            else { return path }
            // The document's item and its host path (the host path's prefix as deep as the item).
            spelled.append((host.prefix(host.depth - (path.depth - item.depth)), item))
            return host
        }
        for (host, portal) in spelled {
            portalSpellings[client, default: DocumentPortalSpellings()].remember(host: host, portal: portal)
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

    /// `effect` for `client` with the host paths it spelled through the portal in its portal spelling.
    func respellingDocumentPortalPaths(_ effect: ArbiterEffect, for client: ClientID) -> ArbiterEffect {
        guard let spellings = portalSpellings[client] else { return effect }
        return effect.mappingPaths(spellings.toClient)
    }
}
