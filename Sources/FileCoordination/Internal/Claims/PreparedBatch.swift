import Dispatch
import FCCore
import FCProtocol
import FCToolkit
import Foundation
import Logging

/// The claim of one `prepare(forReadingItemsAt:…byAccessor:)` call after its batch block ran: granted until the
/// completion handler the block was given is called (docs/SEMANTICS.md §10).
///
/// - The handler ends the batch the first time it is called, from any thread; later calls do nothing.
/// - The handler released without being called (the block dropped it, or whoever kept it went away) ends the
///   batch too, with a warning that names the purpose and the items: nobody can call it any more. The handler
///   holds the only strong reference to its batch, so this is the batch's `deinit`.
/// - Until then the batch is held: after ``warningDelay`` a warning names it (once), `fcdump` shows it as waiting
///   for its handler with its age, and the process's end (its connection's) ends it as it ends every claim.
///
/// - Important: Thread-safe. `state` is never held while the client is called.
final class PreparedBatch: Sendable {
    private enum Phase {
        /// The batch block runs.
        case running
        /// The block returned; the handler was not called yet.
        case returned
        /// The handler was called, or released uncalled: the claim is finished.
        case ended
    }

    private let coordinator: NSFileCoordinator
    private let request: NSFileCoordinator.PreparedClaim
    private let purpose: String
    private let phase = Locked(Phase.running)

    init(coordinator: NSFileCoordinator, request: NSFileCoordinator.PreparedClaim) {
        self.coordinator = coordinator
        self.request = request
        self.purpose = request.claimRequest.purpose.rawValue
    }

    /// The handler given to the batch block: it ends the batch once. It holds the batch, and only it does once the
    /// block returned.
    var completionHandler: @Sendable () -> Void {
        { [self] in end(reason: nil) }
    }

    /// The batch block returned: from now on the batch waits for its handler, unless the handler ran already.
    /// Called on the thread that called `prepare`, which returns next.
    func blockReturned() {
        let waits = phase.withLock { phase -> Bool in
            guard phase == .running else { return false }
            phase = .returned
            return true
        }
        guard waits else { return }
        let client = coordinator.client
        client.send(.preparationReturned(request.id))
        let delay = client.batchHandlerWarningDelay
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.timeInterval) { [weak self] in
            guard let self, self.phase.withLock({ $0 == .returned }) else { return }
            client.logger().warning(
                """
                prepare(forReadingItemsAt:…) returned \(delay) ago and its completion handler has not been called: \
                \(self.itemsDescription) stay claimed (purpose \(self.purpose)) until it is, or until it is \
                released. Call the handler once the batch's coordinated calls are done.
                """
            )
        }
    }

    /// Ends the batch unless it ended already. `reason` says why when the handler did not do it.
    private func end(reason: String?) {
        let ends = phase.withLock { phase -> Bool in
            guard phase != .ended else { return false }
            phase = .ended
            return true
        }
        guard ends else { return }
        if let reason {
            let message =
                "\(reason): the batch of \(itemsDescription) (purpose \(purpose)) ends now. Call the handler once "
                + "the batch's coordinated calls are done."
            coordinator.client.logger().warning("\(message)")
        }
        // A preparation writes nothing itself: nothing was created by it.
        coordinator.finish(request, created: [])
    }

    private var itemsDescription: String {
        request.claimRequest.items.prefix(request.canonical.count).map { item in
            "\(item.access.isWrite ? "write" : "read") \(item.path)"
        }.joined(separator: ", ")
    }

    deinit {
        end(reason: "the completion handler of prepare(forReadingItemsAt:…) was released without being called")
    }
}

extension NSFileCoordinator {
    /// Claims `items` as one preparation, blocks until it is granted or fails, runs `batchAccessor` with the
    /// batch's completion handler, and returns when the block returns; the claim lasts until the handler is called
    /// or released (``PreparedBatch``). Returns the error that kept the block from running, if any.
    func prepareBatch(
        _ items: [(URL, Access)],
        _ batchAccessor: (@escaping @Sendable () -> Void) -> Void
    ) -> (any Error)? {
        switch claimBlocking(items, isPreparation: true) {
        case .failure(let error):
            return error
        case .success((let request, _)):
            let batch = PreparedBatch(coordinator: self, request: request)
            let access = ThreadContext.Access(
                client: client,
                coordinator: ObjectIdentifier(self),
                claim: request.id,
                refusesNestedWrite: false
            )
            ThreadContext.withAccess(access) { batchAccessor(batch.completionHandler) }
            batch.blockReturned()
            return nil
        }
    }
}
