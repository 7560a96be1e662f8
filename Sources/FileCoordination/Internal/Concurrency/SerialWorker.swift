import Dispatch
import FCSystem
import FCToolkit
import Foundation

/// A thread of its own that runs jobs one at a time, in the order they were added.
///
/// Used instead of a Dispatch queue where progress must not depend on Dispatch's shared pool: when an app blocks
/// many pool threads in synchronous coordinated calls, a job waiting for a pool thread could wait long, and the
/// calls it would release wait for it.
///
/// - Important: Thread-safe. Jobs run on the worker's thread, never concurrently.
final class SerialWorker: Sendable {
    private let jobs = Locked<[@Sendable () -> Void]>([])
    /// Signalled once per job added; the thread sleeps here while there is none.
    private let added = DispatchSemaphore(value: 0)

    /// A worker whose thread is `name` for Foundation and `kernelName` (at most 15 bytes) for the kernel (`top -H`,
    /// `/proc/…/comm`), which Foundation's name does not reach on Linux.
    init(name: String, kernelName: String) {
        let thread = Thread { [self] in
            nameCurrentThread(kernelName)
            run()
        }
        thread.name = name
        thread.start()
    }

    /// Adds a job; it runs after every job added before it.
    func async(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        added.signal()
    }

    private func run() {
        while true {
            added.wait()
            // Takes every job added so far; the signals of the jobs taken early find an empty batch.
            let batch = jobs.withLock { jobs in
                defer { jobs = [] }
                return jobs
            }
            for job in batch { job() }
        }
    }
}
