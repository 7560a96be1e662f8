import Foundation

/// A thread of its own that runs jobs one at a time, in the order they were added.
///
/// Used instead of a Dispatch queue where progress must not depend on Dispatch's shared pool: when an app blocks
/// many pool threads in synchronous coordinated calls, a job waiting for a pool thread could wait long, and the
/// calls it would release wait for it.
///
/// - Important: Thread-safe. Jobs run on the worker's thread, never concurrently.
final class SerialWorker: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    init(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Adds a job; it runs after every job added before it.
    func async(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let batch = jobs
            jobs = []
            condition.unlock()
            for job in batch { job() }
        }
    }
}
