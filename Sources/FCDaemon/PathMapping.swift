import FCCore

/// The paths an event or an effect carries, for the daemon's per-client translations (issue 26): a client's mount
/// namespace (``MountNamespaceTranslation``) and its document-portal paths (``DocumentPortalMapping``). Both map the
/// same paths, in and out.
extension ArbiterEvent {
    /// The event with each path the client sent passed through `map`, with the identity the client read for that
    /// path where it sent one (claim items and presenter registrations). `sameItems`: `map` names each item the
    /// client read by another path to the same file (a fold of its names), so the states a write left behind keep
    /// their values under the new paths; otherwise a state read through a path that `map` changes is dropped.
    func mappingPaths(sameItems: Bool = false, _ map: (ItemPath, ItemIdentity?) -> ItemPath) -> ArbiterEvent {
        switch self {
        case .presenterAdded(var registration):
            registration.path = registration.path.map { map($0, registration.identity) }
            return .presenterAdded(registration)
        case .presenterURLChanged(let presenter, let path):
            return .presenterURLChanged(presenter, to: path.map { map($0, nil) })
        case .claimRequested(var request):
            for index in request.items.indices {
                request.items[index].path = map(request.items[index].path, request.items[index].identity)
            }
            return .claimRequested(request)
        case .claimFinished(let claim, let created, let outcome):
            return .claimFinished(
                claim,
                created: created.map { map($0, nil) },
                // A state read through another path (a portal's FUSE file system shows its own inode numbers) is
                // not compared with the daemon's: such an item's echoes are told apart by the write's end time.
                outcome: outcome.map { outcome in
                    WriteOutcome(
                        endedAt: outcome.endedAt,
                        items: sameItems
                            ? Dictionary(outcome.items.map { (map($0.key, nil), $0.value) }) { first, _ in first }
                            : outcome.items.filter { map($0.key, nil) == $0.key }
                    )
                }
            )
        case .itemMoved(let claim, let from, let to, let fromName):
            return .itemMoved(claim, from: map(from, nil), to: map(to, nil), fromName: fromName)
        case .versionChanged(let claim, let path, let change):
            return .versionChanged(claim, map(path, nil), change)
        case .leaseReturned(let lease, let client, var running):
            // The claims a lease's holder decided and still runs, declared as held: keyed as its other claims are.
            for claim in running.indices {
                for index in running[claim].items.indices {
                    let item = running[claim].items[index]
                    running[claim].items[index].path = map(item.path, item.identity)
                }
            }
            return .leaseReturned(lease, client: client, running: running)
        default:
            return self
        }
    }

    /// `true` when a path the client sent satisfies `predicate`: a check that copies nothing, made before
    /// ``mappingPaths(_:)`` where most events have nothing to map.
    func containsPath(where predicate: (ItemPath) -> Bool) -> Bool {
        switch self {
        case .presenterAdded(let registration): registration.path.map(predicate) ?? false
        case .presenterURLChanged(_, let path): path.map(predicate) ?? false
        case .claimRequested(let request): request.items.contains { predicate($0.path) }
        case .claimFinished(_, let created, let outcome):
            created.contains(where: predicate) || (outcome?.items.keys.contains(where: predicate) ?? false)
        case .itemMoved(_, let from, let to, _): predicate(from) || predicate(to)
        case .versionChanged(_, let path, _): predicate(path)
        case .leaseReturned(_, _, let running): running.contains { $0.items.contains { predicate($0.path) } }
        default: false
        }
    }
}

extension ArbiterEffect {
    /// The effect with each path it sends to a client passed through `map`.
    func mappingPaths(_ map: (ItemPath) -> ItemPath) -> ArbiterEffect {
        switch self {
        case .grant(let claim, let client, let paths):
            return .grant(claim, client: client, paths: paths.map(map))
        case .message(var message):
            message.kind = message.kind.mappingPaths(map)
            return .message(message)
        case .watchUnavailable(let presenter, let client, let directory, let reason):
            return .watchUnavailable(presenter, client: client, directory: map(directory), reason: reason)
        case .watchAvailable(let presenter, let client, let directory):
            return .watchAvailable(presenter, client: client, directory: map(directory))
        default:
            return self
        }
    }
}

extension PresenterMessageKind {
    /// The message with each path it names passed through `map`.
    func mappingPaths(_ map: (ItemPath) -> ItemPath) -> PresenterMessageKind {
        switch self {
        case .accommodatePresentedSubitemDeletion(let path): .accommodatePresentedSubitemDeletion(at: map(path))
        case .presentedItemDidMove(let path): .presentedItemDidMove(to: map(path))
        case .presentedSubitemDidChange(let path): .presentedSubitemDidChange(at: map(path))
        case .presentedSubitemDidAppear(let path): .presentedSubitemDidAppear(at: map(path))
        case .presentedSubitemDidMove(let from, let to): .presentedSubitemDidMove(from: map(from), to: map(to))
        case .presentedSubitemVersion(let path, let change): .presentedSubitemVersion(at: map(path), change)
        default: self
        }
    }
}
