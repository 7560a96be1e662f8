import Synchronization

/// The numbers one client gives its coordinators, claims and presenters: one sequence, so that no two of them
/// share a number within the client (the arbiter knows each kind by its number and the client's id).
///
/// - Important: Thread-safe (an atomic counter).
final class IDSource: Sendable {
    private let last: Atomic<UInt64>

    /// A source whose first number is `start + 1`.
    init(after start: UInt64 = 0) {
        last = Atomic(start)
    }

    /// A number never returned before by this source.
    func next() -> UInt64 {
        last.add(1, ordering: .relaxed).newValue
    }
}
