public import Foundation

/// The `Progress` a subscriber is handed for a publication in another process (issue 44): it shows the publisher's
/// state as the daemon last sent it, and passes `cancel()`, `pause()` and `resume()` to the publisher.
///
/// - Important: Written only on the progress center's delivery queue (``ProgressCenter``); the subscriber reads it
///   from any thread, as it would read a `Progress` its own code updates. Its overrides of `cancel()`, `pause()` and
///   `resume()` may be called from any thread.
// @unchecked: `Progress` of swift-corelibs-foundation has no lock; the fields below are written on the delivery queue
// only, and `control` is a `let`.
final class ProgressProxy: Progress, @unchecked Sendable {
    /// The publisher's descriptions (empty: the publisher has none).
    private var publishedDescription = ""
    private var publishedAdditionalDescription = ""
    /// The updates applied after the first state (tests read it: ``Progress/fileProgressUpdatesReceived``).
    private(set) var updatesReceived = -1
    /// Set when the publication ended (``Progress/isOld``).
    private(set) var hasEnded = false
    /// Sends an action to the publisher.
    private let control: @Sendable (ProgressAction) -> Void

    init(path: String, state: ProgressSnapshot, control: @escaping @Sendable (ProgressAction) -> Void) {
        self.control = control
        super.init(parent: nil, userInfo: [.fileURLKey: URL(fileURLWithPath: path)])
        apply(state)
    }

    /// Shows the publisher's state `state` (on the delivery queue). The flags are set directly, so that the
    /// subscriber's own handlers and the publisher are not called for what the publisher did itself.
    func apply(_ state: ProgressSnapshot) {
        updatesReceived += 1
        totalUnitCount = state.totalUnitCount
        completedUnitCount = state.completedUnitCount
        isCancellable = state.isCancellable
        isPausable = state.isPausable
        if state.isCancelled { isCancelled = true }
        isPaused = state.isPaused
        kind = state.kind.isEmpty ? nil : ProgressKind(rawValue: state.kind)
        setUserInfoObject(
            state.fileOperationKind.isEmpty ? nil : Progress.FileOperationKind(rawValue: state.fileOperationKind),
            forKey: .fileOperationKindKey
        )
        setUserInfoObject(state.fileTotalCount.map { NSNumber(value: $0) }, forKey: .fileTotalCountKey)
        setUserInfoObject(state.fileCompletedCount.map { NSNumber(value: $0) }, forKey: .fileCompletedCountKey)
        setUserInfoObject(state.estimatedTimeRemaining.map { NSNumber(value: $0) }, forKey: .estimatedTimeRemainingKey)
        setUserInfoObject(state.throughput.map { NSNumber(value: $0) }, forKey: .throughputKey)
        publishedDescription = state.localizedDescription
        publishedAdditionalDescription = state.localizedAdditionalDescription
    }

    /// The publication ended (on the delivery queue).
    func end() { hasEnded = true }

    override var localizedDescription: String! {
        if !publishedDescription.isEmpty { return publishedDescription }
        return isIndeterminate ? "" : "\(Int((fractionCompleted * 100).rounded(.down)))% completed"
    }

    override var localizedAdditionalDescription: String! {
        if !publishedAdditionalDescription.isEmpty { return publishedAdditionalDescription }
        guard !isIndeterminate else { return "" }
        return "\(completedUnitCount) of \(totalUnitCount)"
    }

    override func cancel() {
        let was = isCancelled
        super.cancel()
        if !was && !hasEnded { control(.cancel) }
    }

    override func pause() {
        super.pause()
        if !hasEnded { control(.pause) }
    }

    override func resume() {
        super.resume()
        if !hasEnded { control(.resume) }
    }
}

extension Progress {
    /// For tests: how many state updates this proxy received from its publisher (0 for any other `Progress`).
    @_spi(FileCoordinationTesting) public var fileProgressUpdatesReceived: Int {
        (self as? ProgressProxy)?.updatesReceived ?? 0
    }
}
