import FCCore
import FCProtocol
import Foundation
import Synchronization

/// Turns one arbiter message into one call of an ``NSFilePresenter`` callback, and the presenter's answer into
/// one reply to the arbiter.
///
/// - Important: Runs on the presenter's `presentedItemOperationQueue`. Reply blocks may be called from any thread,
///   and a second call of the same block is ignored.
enum PresenterDelivery {
    static func run(_ message: PresenterMessage, on presenter: any NSFilePresenter, client: CoordinationClient) {
        let id = message.presenter
        switch message.kind {
        case .relinquishToReader:
            presenter.relinquishPresentedItem(toReader: relinquishReply(message, client: client))
        case .relinquishToWriter:
            presenter.relinquishPresentedItem(toWriter: relinquishReply(message, client: client))
        case .savePresentedItemChanges:
            presenter.savePresentedItemChanges(completionHandler: completionReply(message, client: client))
        case .accommodatePresentedItemDeletion:
            presenter.accommodatePresentedItemDeletion(completionHandler: completionReply(message, client: client))
        case .accommodatePresentedSubitemDeletion(let path):
            presenter.accommodatePresentedSubitemDeletion(
                at: url(path, presenter),
                completionHandler: completionReply(message, client: client)
            )
        case .reacquire(let request):
            client.takeReacquirer(request)?()
        case .presentedItemDidChange:
            presenter.presentedItemDidChange()
        case .presentedItemDidMove(let path):
            presenter.presentedItemDidMove(to: url(path, presenter, .moveDestination))
            client.refreshURL(of: id)
        case .presentedSubitemDidChange(let path):
            presenter.presentedSubitemDidChange(at: url(path, presenter))
        case .presentedSubitemDidAppear(let path):
            presenter.presentedSubitemDidAppear(at: url(path, presenter))
        case .presentedSubitemDidMove(let from, let to):
            presenter.presentedSubitem(
                at: movedFromURL(from, presenter, spelledName: message.movedFromName),
                didMoveTo: url(to, presenter, .moveDestination)
            )
        case .presentedItemVersion(let change):
            let version = fileVersion(change, of: presenter.presentedItemURL)
            switch change {
            case .added: presenter.presentedItemDidGain(version)
            case .removed: presenter.presentedItemDidLose(version)
            case .resolved: presenter.presentedItemDidResolveConflict(version)
            }
        case .presentedSubitemVersion(let path, let change):
            let url = url(path, presenter)
            let version = fileVersion(change, of: url)
            switch change {
            case .added: presenter.presentedSubitem(at: url, didGain: version)
            case .removed: presenter.presentedSubitem(at: url, didLose: version)
            case .resolved: presenter.presentedSubitem(at: url, didResolve: version)
            }
        }
    }

    /// The URL of `path` for `presenter`: spelled as its own URL where that covers the path (docs/SEMANTICS.md §4).
    private static func url(
        _ path: ItemPath,
        _ presenter: any NSFilePresenter,
        _ role: Respelling.Role = .item
    ) -> URL {
        let own = presenter.presentedItemURL
        let ownPath = own.flatMap { try? URLMapping.canonicalPath($0) }
        // The common case: the presenter's URL is its canonical path, and no name needs respelling.
        if !PathCanonicalizer.shared.caseSensitivity.anyInsensitive, own?.path == ownPath?.description {
            return URLMapping.url(path)
        }
        return URLMapping.url(path, for: own, presenterPath: ownPath, role: role)
    }

    /// Where a subitem was before a move. For a rename in place whose mover sent its spelling of the old name
    /// (issue 14), that name after the folder as this presenter spells it, unless this process spelled the old name
    /// itself (``Respelling``'s own books come first).
    private static func movedFromURL(
        _ path: ItemPath,
        _ presenter: any NSFilePresenter,
        spelledName: [UInt8]?
    ) -> URL {
        guard let spelledName, let parent = path.parent, SpellingBook.renames.spelling(of: path) == nil,
            SpellingBook.shared.spelling(of: path) == nil
        else { return url(path, presenter, .moveSource) }
        return url(parent, presenter).appendingPathComponent(String(decoding: spelledName, as: UTF8.self))
    }

    /// The version a message names, as the store has it; for a version no longer there (a removed one), an
    /// instance with its identifier and the item's URL.
    private static func fileVersion(_ change: VersionChange, of url: URL?) -> NSFileVersion {
        let id: VersionID =
            switch change {
            case .added(let id), .removed(let id), .resolved(let id): id
            }
        if let stored = try? VersionStoreAccessPoint.access().version(id: id.rawValue) { return NSFileVersion(stored) }
        return NSFileVersion(url: url ?? URL(fileURLWithPath: "/"), identifier: id.rawValue)
    }

    private static func relinquishReply(
        _ message: PresenterMessage,
        client: CoordinationClient
    ) -> @Sendable ((@Sendable () -> Void)?) -> Void {
        let once = Once()
        return { reacquirer in
            guard once.claim(), let request = message.request else { return }
            if let reacquirer { client.storeReacquirer(reacquirer, for: request) }
            client.send(.presenterReplied(request, .relinquished(reacquirer: reacquirer != nil)))
        }
    }

    private static func completionReply(
        _ message: PresenterMessage,
        client: CoordinationClient
    ) -> @Sendable ((any Error)?) -> Void {
        let once = Once()
        return { error in
            guard once.claim(), let request = message.request else { return }
            guard let error else {
                client.send(.presenterReplied(request, .succeeded))
                return
            }
            client.recordPresenterError(error, presenter: message.presenter)
            let nsError = error as NSError
            let reply = PresenterError(
                domain: nsError.domain,
                code: nsError.code,
                message: nsError.localizedDescription
            )
            client.send(.presenterReplied(request, .failed(reply)))
        }
    }
}

/// A flag that can be claimed once, from any thread.
final class Once: Sendable {
    private let claimed = Atomic<Bool>(false)

    /// `true` the first time only.
    func claim() -> Bool {
        !claimed.exchange(true, ordering: .acquiringAndReleasing)
    }
}
