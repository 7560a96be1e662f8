import FCSystem
import Foundation

// When a child of the tests ended, read from the kernel rather than from Foundation's `Process`.
//
// `Process.isRunning` learns of a child's end through a socket the child holds; a process another test spawns at that
// moment may inherit that socket (a daemon, a host, a FUSE mount), and `isRunning` then stays true until that other
// process ends too (swift-corelibs-foundation issue 4795). Under the full suite, `fcdump` runs that had long exited
// were still "running" 30 s later. These read the end with `waitid(WNOWAIT)` (``ChildProcess/peekEnd(of:blocking:)``)
// and leave the child for Foundation to reap.

extension Process {
    /// How it ended, if it has; `nil` while it runs.
    var end: ChildProcess.Termination? {
        do {
            return try ChildProcess.peekEnd(of: processIdentifier)
        } catch {
            // Reaped already (by Foundation, which then knows how it ended).
            return isRunning ? nil : foundationEnd
        }
    }

    /// Whether it still runs.
    var stillRuns: Bool { end == nil }

    /// Waits until it ends and returns how.
    @discardableResult
    func waitForEnd() -> ChildProcess.Termination {
        if let ended = try? ChildProcess.peekEnd(of: processIdentifier, blocking: true) { return ended }
        waitUntilExit()
        return foundationEnd
    }

    /// Its exit status, or the signal that ended it, as `terminationStatus` says (waits for its end).
    var endStatus: Int32 {
        switch waitForEnd() {
        case .exited(let status): status
        case .signalled(let signal): signal
        }
    }

    /// Whether a signal ended it (waits for its end).
    var endedBySignal: Bool {
        if case .signalled = waitForEnd() { true } else { false }
    }

    private var foundationEnd: ChildProcess.Termination {
        terminationReason == .exit ? .exited(terminationStatus) : .signalled(terminationStatus)
    }
}
