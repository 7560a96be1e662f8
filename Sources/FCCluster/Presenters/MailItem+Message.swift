import FCCore

// A presenter message and a reply as mail (ClusterWire.swift), and back.

extension MailItem {
    /// `message` for a presenter of another host (`presenter`, its id there), with its paths as that host reads
    /// them; `nil` when a path is outside every shared folder (a move out of them: the other host cannot name the
    /// new place).
    init?(_ message: PresenterMessage, presenter: UInt64, paths shared: SharedPaths) {
        self.init(presenter: presenter, request: message.request?.rawValue)
        func wire(_ path: ItemPath) -> WirePath? { shared.wire(path) }
        switch message.kind {
        case .relinquishToReader: kind = "relinquishToReader"
        case .relinquishToWriter: kind = "relinquishToWriter"
        case .savePresentedItemChanges: kind = "save"
        case .accommodatePresentedItemDeletion: kind = "accommodateDeletion"
        case .accommodatePresentedSubitemDeletion(let at):
            guard let at = wire(at) else { return nil }
            (kind, paths) = ("accommodateSubitemDeletion", [at])
        case .reacquire(let relinquish): (kind, self.relinquish) = ("reacquire", relinquish.rawValue)
        case .presentedItemDidChange: kind = "didChange"
        case .presentedItemDidMove(let to):
            guard let to = wire(to) else { return nil }
            (kind, paths) = ("didMove", [to])
        case .presentedSubitemDidChange(let at):
            guard let at = wire(at) else { return nil }
            (kind, paths) = ("subitemDidChange", [at])
        case .presentedSubitemDidAppear(let at):
            guard let at = wire(at) else { return nil }
            (kind, paths) = ("subitemDidAppear", [at])
        case .presentedSubitemDidMove(let from, let to):
            guard let from = wire(from), let to = wire(to) else { return nil }
            (kind, paths) = ("subitemDidMove", [from, to])
        case .presentedItemVersion(let change):
            kind = "version"
            (version, versionChange) = Self.wire(change)
        case .presentedSubitemVersion(let at, let change):
            guard let at = wire(at) else { return nil }
            (kind, paths) = ("subitemVersion", [at])
            (version, versionChange) = Self.wire(change)
        }
        movedFromName = message.movedFromName.map(SharedPaths.hex)
    }

    /// The message this letter carries, in this host's paths; `nil` when it is not one, or names a folder this host
    /// does not share or a path that is not one (logged by the caller and dropped). A reacquire's relinquish is the
    /// sender's id, for the caller to map.
    func message(paths shared: SharedPaths) -> PresenterMessageKind? {
        let local = (paths ?? []).map(shared.local)
        func path(_ index: Int) -> ItemPath? { index < local.count ? local[index] : nil }
        switch kind {
        case "relinquishToReader": return .relinquishToReader
        case "relinquishToWriter": return .relinquishToWriter
        case "save": return .savePresentedItemChanges
        case "accommodateDeletion": return .accommodatePresentedItemDeletion
        case "accommodateSubitemDeletion": return path(0).map { .accommodatePresentedSubitemDeletion(at: $0) }
        case "reacquire": return relinquish.map { .reacquire(relinquish: RequestID($0)) }
        case "didChange": return .presentedItemDidChange
        case "didMove": return path(0).map { .presentedItemDidMove(to: $0) }
        case "subitemDidChange": return path(0).map { .presentedSubitemDidChange(at: $0) }
        case "subitemDidAppear": return path(0).map { .presentedSubitemDidAppear(at: $0) }
        case "subitemDidMove":
            guard let from = path(0), let to = path(1) else { return nil }
            return .presentedSubitemDidMove(from: from, to: to)
        case "version": return versionChangeValue.map { .presentedItemVersion($0) }
        case "subitemVersion":
            guard let at = path(0), let change = versionChangeValue else { return nil }
            return .presentedSubitemVersion(at: at, change)
        default: return nil
        }
    }

    /// A reply to the sender's request `request`.
    init(reply: PresenterReply, to request: UInt64) {
        self.init(request: request)
        switch reply {
        case .relinquished(let reacquirer): (self.reply, self.reacquirer) = ("relinquished", reacquirer)
        case .succeeded: self.reply = "succeeded"
        case .failed(let error):
            (self.reply, errorDomain, errorCode, errorMessage) = ("failed", error.domain, error.code, error.message)
        }
    }

    /// The reply this letter carries; `nil` when it is not one.
    var replyValue: PresenterReply? {
        switch reply {
        case "relinquished": .relinquished(reacquirer: reacquirer ?? false)
        case "succeeded": .succeeded
        case "failed":
            .failed(PresenterError(domain: errorDomain ?? "", code: errorCode ?? 0, message: errorMessage ?? ""))
        default: nil
        }
    }

    private static func wire(_ change: VersionChange) -> (String, String) {
        switch change {
        case .added(let id): (id.rawValue, "added")
        case .removed(let id): (id.rawValue, "removed")
        case .resolved(let id): (id.rawValue, "resolved")
        }
    }

    private var versionChangeValue: VersionChange? {
        guard let version else { return nil }
        switch versionChange {
        case "added": return .added(VersionID(version))
        case "removed": return .removed(VersionID(version))
        case "resolved": return .resolved(VersionID(version))
        default: return nil
        }
    }
}
