import FCCore
import FCProtocol
public import Foundation

extension NSFileCoordinator {
    /// Reads an item in a coordinated way and returns what `body` returns: the `async` form of
    /// ``coordinate(readingItemAt:options:error:byAccessor:)`` for new code.
    ///
    /// The wait suspends the task instead of blocking a thread. Cancelling the task while it waits abandons the claim
    /// and throws `CocoaError(.userCancelled)`; once `body` runs, it runs to the end.
    ///
    /// - Parameters:
    ///   - url: The item to read.
    ///   - options: The reading options.
    ///   - timeout: How long to wait for the claim at most (else ``timeout``, the coordinator's): when it is up,
    ///     `body` does not run and ``FileCoordinationError/Code/timedOut`` says what the read waited for.
    ///   - body: Reads the item at the URL it is given (the item's current location).
    /// - Returns: What `body` returns.
    /// - Throws: The error that kept `body` from running, or what `body` throws.
    public func read<T>(
        at url: URL,
        options: NSFileCoordinator.ReadingOptions = [],
        timeout: Duration? = nil,
        _ body: (URL) throws -> T
    ) async throws -> T {
        if options.contains(.forUploading) {
            // A snapshot made under the claim; `body` runs after it is released (UploadSnapshot).
            let snapshot = try await access(
                [(url, .read(FCCore.ReadingOptions(rawValue: options.rawValue)))],
                timeout: timeout
            ) { urls in try UploadSnapshot.make(of: urls[0]) }
            defer { UploadSnapshot.remove(snapshot) }
            return try body(snapshot)
        }
        return try await access([(url, .read(FCCore.ReadingOptions(rawValue: options.rawValue)))], timeout: timeout) {
            urls in
            try body(urls[0])
        }
    }

    /// Writes an item in a coordinated way and returns what `body` returns: the `async` form of
    /// ``coordinate(writingItemAt:options:error:byAccessor:)`` for new code.
    ///
    /// The wait suspends the task instead of blocking a thread. Cancelling the task while it waits abandons the claim
    /// and throws `CocoaError(.userCancelled)`; once `body` runs, it runs to the end.
    ///
    /// - Parameters:
    ///   - url: The item to write.
    ///   - options: The writing options.
    ///   - timeout: How long to wait for the claim at most (else ``timeout``, the coordinator's): when it is up,
    ///     `body` does not run and ``FileCoordinationError/Code/timedOut`` says what the write waited for.
    ///   - body: Writes the item at the URL it is given (the item's current location).
    /// - Returns: What `body` returns.
    /// - Throws: The error that kept `body` from running, or what `body` throws.
    public func write<T>(
        at url: URL,
        options: NSFileCoordinator.WritingOptions = [],
        timeout: Duration? = nil,
        _ body: (URL) throws -> T
    ) async throws -> T {
        try await access([(url, .write(FCCore.WritingOptions(rawValue: options.rawValue)))], timeout: timeout) {
            urls in
            try body(urls[0])
        }
    }

    private func access<T>(
        _ items: [(URL, Access)],
        timeout: Duration?,
        _ body: ([URL]) throws -> T
    ) async throws -> T {
        let prepared: PreparedClaim
        switch prepareClaim(items, isPreparation: false, blocksThread: false, timeout: timeout) {
        case .failure(let error): throw error
        case .success(let claim): prepared = claim
        }
        let client = self.client
        // Requested before the cancellation handler is installed: a task cancelled already runs the handler at
        // once, and its cancel must reach the arbiter after the request, not before it.
        client.submitClaim(prepared.claimRequest, waiter: prepared.waiter)
        let outcome = await withTaskCancellationHandler {
            await prepared.waiter.value()
        } onCancel: {
            client.send(.cancelClaim(prepared.id))
        }
        switch outcome {
        case .failed(let error):
            throw error
        case .granted(let paths):
            let access = ThreadContext.Access(
                client: client,
                coordinator: ObjectIdentifier(self),
                claim: prepared.id,
                refusesNestedWrite: true
            )
            defer { finish(prepared, paths: paths) }
            return try ThreadContext.withAccess(access) { try body(prepared.urls(for: paths)) }
        }
    }
}
