/// When a live query tells the daemon how many results it holds (`QueryResults`, revision 8; for `fcdump queries`):
/// when the count changed, at most once per ``interval``, and again on a new connection.
///
/// - Important: Not thread-safe: confined to its query's serial queue.
final class ResultCountReports {
    /// The least time between two counts told.
    static let interval: Duration = .seconds(1)

    private var told: Int?
    private var toldAt: ContinuousClock.Instant?
    private var scheduled = false

    /// The count may have changed: the delay after which ``due(_:)`` should run, or `nil` (one is already due, or
    /// the daemon has this count).
    func changed(_ count: Int) -> Duration? {
        guard !scheduled, count != told else { return nil }
        scheduled = true
        return toldAt.map { max(Self.interval - (.now - $0), .zero) } ?? .zero
    }

    /// A report is due: whether `count` is to be told.
    func due(_ count: Int) -> Bool {
        scheduled = false
        return count != told
    }

    func told(_ count: Int) {
        told = count
        toldAt = .now
    }

    /// A new connection: its daemon knows no count.
    func connectionChanged() { told = nil }
}
