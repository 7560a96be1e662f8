import FCCore
import FCProtocol
import Foundation

/// What a published `Progress` shows at one moment (issue 44): what its publisher's sampler read, what travels in a
/// `ProgressState` (docs/PROTOCOL.md §12), and what a subscriber's proxy is set to. A value: `Sendable`.
struct ProgressSnapshot: Sendable, Equatable {
    var totalUnitCount: Int64 = 0
    var completedUnitCount: Int64 = 0
    var fractionCompleted: Double = 0
    var isIndeterminate = true
    var isCancellable = false
    var isPausable = false
    var isCancelled = false
    var isPaused = false
    var isFinished = false
    var kind: String = ""
    var fileOperationKind: String = ""
    var localizedDescription: String = ""
    var localizedAdditionalDescription: String = ""
    var fileTotalCount: Int?
    var fileCompletedCount: Int?
    var estimatedTimeRemaining: TimeInterval?
    var throughput: Int?

    /// A string cut to the wire's limit, on a character boundary.
    private static func bounded(_ string: String) -> String {
        let limit = Filecoord_V1_ProgressState.maximumStringBytes
        guard string.utf8.count > limit else { return string }
        var result = ""
        for character in string {
            guard result.utf8.count + character.utf8.count <= limit else { break }
            result.append(character)
        }
        return result
    }

    var wire: Filecoord_V1_ProgressState {
        var state = Filecoord_V1_ProgressState()
        state.totalUnitCount = totalUnitCount
        state.completedUnitCount = completedUnitCount
        state.fractionCompleted = fractionCompleted.isFinite ? fractionCompleted : 0
        state.indeterminate = isIndeterminate
        state.cancellable = isCancellable
        state.pausable = isPausable
        state.cancelled = isCancelled
        state.paused = isPaused
        state.finished = isFinished
        state.kind = Self.bounded(kind)
        state.fileOperationKind = Self.bounded(fileOperationKind)
        state.localizedDescription = Self.bounded(localizedDescription)
        state.localizedAdditionalDescription = Self.bounded(localizedAdditionalDescription)
        if let fileTotalCount { state.fileTotalCount = Int64(fileTotalCount) }
        if let fileCompletedCount { state.fileCompletedCount = Int64(fileCompletedCount) }
        if let estimatedTimeRemaining, estimatedTimeRemaining.isFinite {
            state.estimatedTimeRemaining = estimatedTimeRemaining
        }
        if let throughput { state.throughput = Int64(throughput) }
        return state
    }

    init() {}

    init(wire state: Filecoord_V1_ProgressState) {
        totalUnitCount = state.totalUnitCount
        completedUnitCount = state.completedUnitCount
        fractionCompleted = state.fractionCompleted
        isIndeterminate = state.indeterminate
        isCancellable = state.cancellable
        isPausable = state.pausable
        isCancelled = state.cancelled
        isPaused = state.paused
        isFinished = state.finished
        kind = state.kind
        fileOperationKind = state.fileOperationKind
        localizedDescription = state.localizedDescription
        localizedAdditionalDescription = state.localizedAdditionalDescription
        fileTotalCount = state.hasFileTotalCount ? Int(clamping: state.fileTotalCount) : nil
        fileCompletedCount = state.hasFileCompletedCount ? Int(clamping: state.fileCompletedCount) : nil
        estimatedTimeRemaining = state.hasEstimatedTimeRemaining ? state.estimatedTimeRemaining : nil
        throughput = state.hasThroughput ? Int(clamping: state.throughput) : nil
    }
}

extension ProgressSnapshot {
    /// The fields of `progress` this library sets through `userInfo` (and `kind`), read on the thread that owns
    /// them: at `publish()` and at each setter of ``Progress/fileURL`` and its siblings.
    init(fileFieldsOf progress: Progress) {
        self.init()
        kind = progress.kind?.rawValue ?? ""
        fileOperationKind = progress.fileOperationKind?.rawValue ?? ""
        fileTotalCount = progress.fileTotalCount
        fileCompletedCount = progress.fileCompletedCount
        estimatedTimeRemaining = progress.estimatedTimeRemaining
        throughput = progress.throughput
    }

    /// `fields` with `progress`'s unit counts, flags and descriptions, read on the sampler's queue: plain stored
    /// integers and flags of `Progress` (which swift-corelibs-foundation neither locks nor observes), read as they
    /// are, as a UI reads them; its `userInfo` is not read here.
    init(sampling progress: Progress, fields: ProgressSnapshot) {
        self = fields
        totalUnitCount = progress.totalUnitCount
        completedUnitCount = progress.completedUnitCount
        fractionCompleted = progress.fractionCompleted
        isIndeterminate = progress.isIndeterminate
        isCancellable = progress.isCancellable
        isPausable = progress.isPausable
        isCancelled = progress.isCancelled
        isPaused = progress.isPaused
        isFinished = progress.isFinished
        localizedDescription = progress.localizedDescription ?? ""
        localizedAdditionalDescription = progress.localizedAdditionalDescription ?? ""
    }
}

/// What a subscriber asks of a publisher.
enum ProgressAction: Sendable, Equatable {
    case cancel, pause, resume

    init?(wire: Filecoord_V1_ProgressAction) {
        switch wire {
        case .cancel: self = .cancel
        case .pause: self = .pause
        case .resume: self = .resume
        default: return nil
        }
    }

    var wire: Filecoord_V1_ProgressAction {
        switch self {
        case .cancel: .cancel
        case .pause: .pause
        case .resume: .resume
        }
    }
}

/// File progress news from the daemon (docs/PROTOCOL.md §12), as the transport hands it to the client.
enum ProgressNews: Sendable {
    /// A publication (the daemon's id) matches this client's subscription (its own id).
    case appeared(subscription: UInt64, publication: UInt64, path: ItemPath, state: ProgressSnapshot)
    /// A publication this client heard of changed.
    case changed(publication: UInt64, ProgressSnapshot)
    /// A publication this client heard of ended.
    case gone(publication: UInt64)
    /// A subscriber asks this client's publication (its own id) to act.
    case control(publication: UInt64, ProgressAction)
}
