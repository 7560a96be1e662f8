import FCToolkit
@_spi(Testing) import FileCoordination
import Foundation

// fc-testhost's `listener-wakeups PATH OTHER COUNT` (issues 12 and 38, the reader role; docs/ARCHITECTURE.md §8.1): how
// often the connection's listener thread wakes, and how many frames the process's listeners read
// (`ReaderDiagnostics`), while COUNT uncontended synchronous coordinated reads of PATH run, first with no presenter in
// the process, then with a presenter of OTHER registered, then (the control) while COUNT reads of PATH through the
// intents API run, whose replies no caller reads: the listener reads each. Prints `listener-wakeups idle I presenting
// P reads COUNT frames FI FP control C FC`, where I, P and C are the listener's voluntary context switches
// (/proc/self/task/TID/status) over each phase and FI, FP and FC the frames read by listeners, or
// `failed listener-wakeups MESSAGE`.
//
// It must be the process's first coordinated call: the listener is told apart as the one thread that the first
// connection to the daemon started (or, once the library gives its threads names the kernel sees, by its name).

extension Host {
    /// Runs `listener-wakeups` on a thread of its own.
    func runListenerWakeups(_ arguments: [String]) {
        guard arguments.count == 3, let count = Int(arguments[2]), count > 0 else {
            say("error listener-wakeups needs PATH OTHER COUNT")
            return
        }
        let url = URL(fileURLWithPath: arguments[0])
        let other = URL(fileURLWithPath: arguments[1])
        Thread {
            switch ListenerWakeups.measure(reading: url, presenting: other, reads: count) {
            case .success(let phases):
                say(
                    "listener-wakeups idle \(phases.idle) presenting \(phases.presenting) reads \(count) "
                        + "frames \(phases.idleFrames) \(phases.presentingFrames) "
                        + "control \(phases.control) \(phases.controlFrames)"
                )
            case .failure(let failure):
                say("failed listener-wakeups \(failure.message)")
            }
        }
        .start()
    }
}

enum ListenerWakeups {
    struct Failure: Error {
        var message: String
    }

    /// The listener's name as the kernel keeps it (the library sets it, `DaemonTransport.listenerThreadName`;
    /// Foundation's `Thread.name` does not reach the kernel on Linux). Without it the thread is found as the one the
    /// first connection started.
    static let listenerName = "fc.listener"

    /// What one measurement saw.
    struct Phases {
        /// The listener's voluntary context switches without presenters, then with one.
        var idle: Int
        var presenting: Int
        /// The frames listeners read without presenters, then with one.
        var idleFrames: Int
        var presentingFrames: Int
        /// The listener's voluntary context switches, and the frames listeners read, over the intents reads.
        var control: Int
        var controlFrames: Int
    }

    /// The listener's voluntary context switches and the frames it read over `reads` coordinated reads of `url`
    /// without presenters, then over as many with a presenter of `other` registered.
    static func measure(reading url: URL, presenting other: URL, reads: Int) -> Result<Phases, Failure> {
        do {
            let me = try currentThreadID()
            let before = Set(try threadIDs())
            try read(url)
            let listener = try findListener(startedSince: before, excluding: me)
            try read(url)
            let idleStart = try voluntarySwitches(listener)
            let idleFramesStart = ReaderDiagnostics.framesReadByListeners
            for _ in 0..<reads { try read(url) }
            let idle = try voluntarySwitches(listener) - idleStart
            let idleFrames = ReaderDiagnostics.framesReadByListeners - idleFramesStart

            let presenter = PrintingPresenter(
                name: "listener-wakeups",
                url: other,
                refuseSave: false,
                neverAnswer: false,
                reacquire: false,
                readOnChange: false,
                mainQueue: false
            )
            NSFileCoordinator.addFilePresenter(presenter)
            defer { NSFileCoordinator.removeFilePresenter(presenter) }
            // A first read after the registration: the listener has switched to reading data by the time it ends.
            try read(url)
            let presentingStart = try voluntarySwitches(listener)
            let presentingFramesStart = ReaderDiagnostics.framesReadByListeners
            for _ in 0..<reads { try read(url) }
            let presenting = try voluntarySwitches(listener) - presentingStart
            let presentingFrames = ReaderDiagnostics.framesReadByListeners - presentingFramesStart
            let controlStart = try voluntarySwitches(listener)
            let controlFramesStart = ReaderDiagnostics.framesReadByListeners
            for _ in 0..<reads { try readThroughIntents(url) }
            let control = try voluntarySwitches(listener) - controlStart
            let controlFrames = ReaderDiagnostics.framesReadByListeners - controlFramesStart
            return .success(
                Phases(
                    idle: idle,
                    presenting: presenting,
                    idleFrames: idleFrames,
                    presentingFrames: presentingFrames,
                    control: control,
                    controlFrames: controlFrames
                )
            )
        } catch let failure as Failure {
            return .failure(failure)
        } catch {
            return .failure(Failure(message: "\(error)"))
        }
    }

    private static func read(_ url: URL) throws {
        var error: NSError?
        NSFileCoordinator().coordinate(readingItemAt: url, options: [], error: &error) { _ in }
        if let error {
            throw Failure(
                message: "a coordinated read failed: \(error.domain) \(error.code) \(error.localizedDescription)"
            )
        }
    }

    /// A read through the intents API, waited for: its caller does not block on the connection, so the listener
    /// reads the reply.
    private static func readThroughIntents(_ url: URL) throws {
        let done = DispatchSemaphore(value: 0)
        let failure = Locked<(any Error)?>(nil)
        NSFileCoordinator().coordinate(with: [.readingIntent(with: url)], queue: intentsQueue) { error in
            failure.withLock { $0 = error }
            done.signal()
        }
        guard done.wait(timeout: .now() + 30) == .success else {
            throw Failure(message: "a read through the intents API did not end within 30 s")
        }
        if let error = failure.withLock({ $0 }) {
            throw Failure(message: "a read through the intents API failed: \(error)")
        }
    }

    private static let intentsQueue = OperationQueue()

    /// The calling thread's id (`/proc/thread-self` links to `PID/task/TID`).
    private static func currentThreadID() throws -> String {
        guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"),
            let id = link.split(separator: "/").last
        else { throw Failure(message: "cannot read /proc/thread-self") }
        return String(id)
    }

    private static func threadIDs() throws -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        } catch {
            throw Failure(message: "cannot list /proc/self/task: \(error)")
        }
    }

    private static func threadName(_ id: String) -> String {
        let name = (try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8)) ?? ""
        return name.trimmingCharacters(in: .newlines)
    }

    /// The thread named as the listener if there is one; else the one thread (but the caller) started since
    /// `before`, that is, by the first connection. Anything else is a failure that names the candidates.
    private static func findListener(startedSince before: Set<String>, excluding me: String) throws -> String {
        let all = try threadIDs()
        let named = all.filter { threadName($0) == listenerName }
        if named.count == 1 { return named[0] }
        let started = all.filter { !before.contains($0) && $0 != me }
        guard named.isEmpty, started.count == 1 else {
            let candidates = (named.isEmpty ? started : named).map { "\($0) (\(threadName($0)))" }
            throw Failure(
                message: "cannot tell the listener thread: \(candidates.count) candidates "
                    + "[\(candidates.joined(separator: ", "))]; was this the process's first coordinated call?"
            )
        }
        return started[0]
    }

    /// `voluntary_ctxt_switches` of thread `id`: how often it blocked (and so was woken again).
    private static func voluntarySwitches(_ id: String) throws -> Int {
        let path = "/proc/self/task/\(id)/status"
        guard let status = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw Failure(message: "cannot read \(path): the listener thread ended")
        }
        for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
            if let value = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) { return value }
        }
        throw Failure(message: "no voluntary_ctxt_switches in \(path)")
    }
}
