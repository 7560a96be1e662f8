import Dispatch
import FCCore
import FCSystem
import Logging
import SystemPackage

extension DocumentPortalBus.Failure {
    /// What ``DocumentPortalMapping/Portal/none`` answers.
    static let disabled = DocumentPortalBus.Failure(name: "filecoordd.Disabled", message: "", errno: .notSupported)
}

/// Document-portal paths to the host files they export (issue 26, docs/SEMANTICS.md "Sandboxed apps and the
/// document portal"). A Flatpak app sees a document the user gave it as `<portal>/<ID>/<name>` (its own mount of
/// the portal's `by-app/<APP>` folder, which the client's mount-namespace translation turns into
/// `<portal>/by-app/<APP>/<ID>/<name>` first); a host app sees the same file at its host path. The portal's file
/// system gives the file inode numbers of its own (not the host file's, and not even the same in its two views), so
/// identity cannot join them: the daemon asks the portal which host path document `<ID>` exports (`Info`, refused
/// to sandboxed callers: the daemon runs on the host) and keys `<portal>/…/<ID>/<name>/rest` as `<host>/rest` when
/// `<name>` is the host file's name. Other names in a document's folder (an editor's temporary file) stay by path.
///
/// Cached per document id (at most ``maximumDocuments``, dropped whole when full), and checked against the portal
/// file's identity when the client sent one for the document's own item: a document removed and another added under
/// a reused id shows another inode, so the portal is asked again. An id the portal does not know is remembered as
/// such for ``negativeLifetime``. When the portal cannot be reached, the path is left as the client sent it (it then
/// meets by path and by the portal file's identity, as before) and a log line says why; the portal is not asked
/// again for ``backoff``.
///
/// - Important: Not thread-safe: the daemon's loop owns it (``ArbiterHost``). The loop never asks the portal: an
///   event naming a document the cache cannot answer waits, with the client's later events, while
///   ``lookUp(_:portal:)`` runs on another thread (a D-Bus round trip, at most ``timeout``); other clients go on.
///   A path outside the portal's mount costs one prefix comparison.
final class DocumentPortalMapping {
    /// Asks the portal where it mounts its file system; asks it which host path a document exports.
    struct Portal: Sendable {
        var mountPoint: @Sendable () -> Result<[UInt8], DocumentPortalBus.Failure>
        var hostPath: @Sendable (String) -> Result<[UInt8], DocumentPortalBus.Failure>
        /// `false` for ``none``: nothing is ever asked, and no event waits.
        var asks = true
        /// Whether asking can reach a portal now (a session bus is there): when not, the mount point is not asked
        /// for, and the connecting client's events do not wait for the answer.
        var mayAnswer: @Sendable () -> Bool = { true }

        /// The session bus's document portal.
        static func sessionBus(timeout: Duration) -> Portal {
            Portal(
                mountPoint: { DocumentPortalBus.mountPoint(timeout: timeout) },
                hostPath: { DocumentPortalBus.hostPath(ofDocument: $0, timeout: timeout) },
                mayAnswer: { DocumentPortalBus.sessionBusMayExist() }
            )
        }

        /// No portal: nothing is mapped (``DaemonConfiguration/mapsDocumentPortalPaths`` off).
        static let none = Portal(
            mountPoint: { .failure(.disabled) },
            hostPath: { _ in .failure(.disabled) },
            asks: false
        )
    }

    /// The daemon's one thread for questions to the portal, off the loop.
    static let lookupQueue = DispatchQueue(label: "filecoordd.document-portal")

    static let maximumDocuments = 1024
    static let identitiesPerDocument = 8
    static let timeout: Duration = .milliseconds(250)
    static let backoff: Duration = .seconds(10)
    static let negativeLifetime: Duration = .seconds(5)
    /// How often the mount point is asked for while no portal answered.
    static let mountPointRetry: Duration = .seconds(1)

    private enum Entry {
        /// The host path, and the identities the portal showed for the document's item (one per view, at most
        /// ``identitiesPerDocument``).
        case exported(ItemPath, identities: [ItemIdentity])
        /// The portal does not know the id (until the instant).
        case unknown(until: ContinuousClock.Instant)
    }

    /// What the daemon asks; `Sendable`, so that ``lookUp(_:portal:)`` runs off the loop.
    let portal: Portal
    private let logger: Logger
    private let now: () -> ContinuousClock.Instant
    /// Where the portal mounts its file system, once it said so.
    private(set) var mountPoint: ItemPath?
    private var nextMountPointAttempt: ContinuousClock.Instant?
    private var documents: [String: Entry] = [:]
    private var unreachableUntil: ContinuousClock.Instant?
    /// The daemon maps no portal path (``Portal/none``).
    private var disabled = false
    /// Portal round trips made (for tests).
    private(set) var lookups = 0
    /// Documents cached now (for tests).
    var cachedDocuments: Int { documents.count }

    init(portal: Portal, logger: Logger, now: @escaping () -> ContinuousClock.Instant = { .now }) {
        self.portal = portal
        self.logger = logger
        self.now = now
        self.disabled = !portal.asks
    }

    /// Asks the portal for its mount point unless it is known or was asked within ``mountPointRetry``, on the
    /// caller's thread (tests; the daemon asks ``discoveryIsDue()`` and asks off the loop).
    ///
    /// - Returns: The mount point when this call found it (the caller then keeps leases away from it), else `nil`.
    @discardableResult
    func discoverMountPoint() -> ItemPath? {
        guard discoveryIsDue() else { return nil }
        return recordMountPoint(portal.mountPoint())
    }

    /// Whether the portal's mount point is to be asked for now: not known yet, mapping not disabled, and not asked
    /// within ``mountPointRetry`` (called when a client connects, so a portal started after the daemon is found by
    /// the next client to connect). A `true` counts as the attempt.
    func discoveryIsDue() -> Bool {
        guard mountPoint == nil, !disabled else { return false }
        let instant = now()
        if let next = nextMountPointAttempt, instant < next { return false }
        nextMountPointAttempt = instant + Self.mountPointRetry
        // No session bus, no portal: nothing to ask, and the connecting client's events need not wait.
        return portal.mayAnswer()
    }

    /// Records the portal's answer to the mount point question.
    ///
    /// - Returns: The mount point when this answer gave it, else `nil`.
    func recordMountPoint(_ result: Result<[UInt8], DocumentPortalBus.Failure>) -> ItemPath? {
        lookups += 1
        switch result {
        case .success(let bytes):
            guard let path = try? ItemPath(absolute: bytes), !path.isRoot else {
                logger.warning("document portal: unusable mount point \(String(decoding: bytes, as: UTF8.self))")
                return nil
            }
            mountPoint = path
            logger.info(
                "document portal found: its paths are mapped to the host files they export",
                metadata: ["portal.mountPoint": "\(path)"]
            )
            return path
        case .failure(let failure) where failure.name == DocumentPortalBus.Failure.disabled.name:
            disabled = true
        case .failure(let failure):
            logger.debug("no document portal: \(failure)")
        }
        return nil
    }

    /// Where a path names a document: the document's id and the path of its item in the portal (`…/<ID>/<name>`).
    struct DocumentPath: Hashable {
        var id: String
        var item: ItemPath
    }

    /// The document `path` (a daemon path) is in, or `nil` when it is not under the portal's mount at
    /// `<ID>/<name>` or `by-app/<APP>/<ID>/<name>`.
    func document(of path: ItemPath) -> DocumentPath? {
        guard let mountPoint, path.depth > mountPoint.depth + 1, path.isDescendant(of: mountPoint) else { return nil }
        let base = mountPoint.depth
        let byApp = path.components[base] == Array("by-app".utf8)
        let idIndex = byApp ? base + 2 : base
        guard path.depth > idIndex + 1 else { return nil }
        return DocumentPath(
            id: String(decoding: path.components[idIndex], as: UTF8.self),
            item: path.prefix(idIndex + 2)
        )
    }

    /// The host path of `path` when it is a document-portal path of a document the portal exports (see the type's
    /// comment), else `nil`. `identity` is what the client read for `path` (a claim item's, a presenter's).
    /// `asking`: whether a cache miss asks the portal on the caller's thread (else the path is left as it is).
    func hostPath(of path: ItemPath, identity: ItemIdentity?, asking: Bool = true) -> ItemPath? {
        guard let document = document(of: path) else { return nil }
        let ownIdentity = path.depth == document.item.depth ? identity : nil
        guard let exported = exportedPath(of: document.id, identity: ownIdentity, asking: asking),
            exported.lastComponent == document.item.lastComponent
        else { return nil }
        return path.relocated(from: document.item, to: exported)
    }

    /// A document the portal is to be asked about, and the identity the client read for its item (if it named it).
    struct Lookup: Sendable, Hashable {
        var id: String
        var identity: ItemIdentity?
    }

    /// The portal's answer to one ``Lookup``.
    typealias Answer = (lookup: Lookup, result: Result<[UInt8], DocumentPortalBus.Failure>)

    /// The documents `event` (in the daemon's paths) names that the cache cannot answer: the portal is to be asked
    /// (``lookUp(_:portal:)``, off the loop) and the answers recorded (``record(_:)``) before the event is mapped.
    /// Empty for an event with no portal path, and while the portal is in its back-off.
    func pendingLookups(for event: ArbiterEvent) -> [Lookup] {
        guard let mountPoint, event.containsPath(where: { $0.isDescendant(of: mountPoint) }) else { return [] }
        var lookups: [Lookup] = []
        _ = event.mappingPaths { path, identity in
            guard let document = document(of: path) else { return path }
            let lookup = Lookup(id: document.id, identity: path.depth == document.item.depth ? identity : nil)
            if case .miss = cached(lookup), !lookups.contains(lookup) { lookups.append(lookup) }
            return path
        }
        return lookups
    }

    /// Asks `portal` about each document: a D-Bus round trip each, up to ``timeout``. Any thread; never the loop's.
    static func lookUp(_ lookups: [Lookup], portal: Portal) -> [Answer] {
        lookups.map { ($0, portal.hostPath($0.id)) }
    }

    /// Records the portal's answers in the cache (or its back-off when it could not be reached).
    func record(_ answers: [Answer]) {
        let instant = now()
        for (lookup, result) in answers {
            lookups += 1
            switch result {
            case .success(let bytes):
                guard let path = try? ItemPath(absolute: bytes) else {
                    logger.warning("document portal: document \(lookup.id) exports an unusable path; left by path")
                    store(lookup.id, .unknown(until: instant + Self.negativeLifetime))
                    continue
                }
                var identities: [ItemIdentity] = []
                if case .exported(let known, let seen)? = documents[lookup.id], known == path { identities = seen }
                if let identity = lookup.identity, !identities.contains(identity) {
                    if identities.count >= Self.identitiesPerDocument { identities.removeFirst() }
                    identities.append(identity)
                }
                store(lookup.id, .exported(path, identities: identities))
            case .failure(let failure) where failure.name == "org.freedesktop.portal.Error.InvalidArgument":
                store(lookup.id, .unknown(until: instant + Self.negativeLifetime))
            case .failure(let failure):
                unreachableUntil = instant + Self.backoff
                logger.warning(
                    "document portal unreachable: its paths coordinate by path for \(Self.backoff): \(failure)",
                    metadata: ["portal.document": "\(lookup.id)"]
                )
            }
        }
    }

    /// What the cache says of a document: its host path, that it maps to nothing (unknown, or the portal in its
    /// back-off), or that the portal must be asked.
    private enum Cached {
        case exported(ItemPath)
        case nothing
        case miss
    }

    private func cached(_ lookup: Lookup) -> Cached {
        let instant = now()
        switch documents[lookup.id] {
        case .exported(let path, let identities)? where lookup.identity.map(identities.contains) ?? true:
            return .exported(path)
        case .unknown(let until)? where instant < until:
            return .nothing
        default:
            break
        }
        if let until = unreachableUntil, instant < until { return .nothing }
        return .miss
    }

    /// The exported path from the cache; on a miss, the portal is asked here, on the caller's thread, only when
    /// `asking` (tests; the daemon's loop asks ``pendingLookups(for:)`` first and never waits here).
    private func exportedPath(of id: String, identity: ItemIdentity?, asking: Bool) -> ItemPath? {
        let lookup = Lookup(id: id, identity: identity)
        switch cached(lookup) {
        case .exported(let path): return path
        case .nothing: return nil
        case .miss:
            guard asking else { return nil }
            record(Self.lookUp([lookup], portal: portal))
            if case .exported(let path) = cached(lookup) { return path }
            return nil
        }
    }

    private func store(_ id: String, _ entry: Entry) {
        if documents.count >= Self.maximumDocuments, documents[id] == nil { documents.removeAll(keepingCapacity: true) }
        documents[id] = entry
    }
}

/// The portal paths one client spelled, so that what the daemon sends it about the host files they export comes back
/// in its spelling (the way back of ``DocumentPortalMapping``). At most ``maximumNames`` (forgotten whole when full:
/// later messages then name the host path, never a wrong file).
///
/// - Important: A value the daemon's loop owns, one per client that spelled a portal path.
struct DocumentPortalSpellings {
    static let maximumNames = 1024
    /// Host path of a document's item to the client's portal path of it.
    private(set) var names: [ItemPath: ItemPath] = [:]
    /// The deepest host path remembered (a path deeper than it cannot be under one).
    private var deepest = 0

    mutating func remember(host: ItemPath, portal: ItemPath) {
        guard names[host] != portal else { return }
        if names.count >= Self.maximumNames {
            names.removeAll(keepingCapacity: true)
            deepest = 0
        }
        names[host] = portal
        deepest = max(deepest, host.depth)
    }

    /// `path` in the client's portal spelling when it is, or is under, a host path the client spelled through the
    /// portal.
    func toClient(_ path: ItemPath) -> ItemPath {
        guard !names.isEmpty else { return path }
        var depth = min(path.depth, deepest)
        while depth > 0 {
            let candidate = path.depth == depth ? path : path.prefix(depth)
            if let portal = names[candidate] { return path.relocated(from: candidate, to: portal) ?? path }
            depth -= 1
        }
        return path
    }
}
