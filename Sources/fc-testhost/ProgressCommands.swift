@_spi(FileCoordinationTesting) import FileCoordination
import Foundation
import Synchronization

// fc-testhost's file progress commands (issue 44); see the command list in main.swift.
//
//   publish NAME PATH TOTAL [cancellable] [pausable] [copying|downloading|uploading]
//                                        publishes a Progress (kind .file) about PATH; its handlers print
//                                        `progress NAME cancelled|paused|resumed`; prints `published NAME`
//   progress-set NAME COMPLETED          sets its completedUnitCount; prints `set NAME COMPLETED`
//   progress-count NAME COUNT            `completedUnitCount += 1` COUNT times, as fast as it can; prints
//                                        `counted NAME NANOSECONDS-PER-INCREMENT`
//   unpublish NAME                       prints `unpublished NAME`
//   subscribe NAME PATH                  addSubscriber(forFileURL:); prints `subscriber NAME appeared PATH C/T
//                                        FLAGS KIND OPERATION` per proxy handed, `subscriber NAME state PATH C/T FLAGS`
//                                        whenever a proxy's state differs from the last line (checked every 5 ms),
//                                        `subscriber NAME unpublished PATH` from the unpublishing handler
//   unsubscribe NAME
//   proxy-cancel NAME | proxy-pause NAME | proxy-resume NAME
//                                        calls cancel(), pause(), resume() on the newest proxy of subscription NAME
//   proxy-updates NAME                   prints `proxy-updates NAME N`: the updates the newest proxy received

/// The progresses this host publishes and the proxies it was handed, by the names the test gave.
final class ProgressCommands: Sendable {
    static let shared = ProgressCommands()

    private struct Watched {
        let proxy: Progress
        let name: String
        var last: String
    }

    // Progress is not Sendable in swift-corelibs-foundation: the tables are only touched under the lock.
    private struct State: @unchecked Sendable {
        var published: [String: Progress] = [:]
        var subscribers: [String: Any] = [:]
        var watched: [Watched] = []
        var newest: [String: Progress] = [:]
        var timer: (any DispatchSourceTimer)?
    }
    private let state = Mutex(State())

    private static func flags(_ progress: Progress) -> String {
        [
            progress.isCancellable ? "cancellable" : "-", progress.isPausable ? "pausable" : "-",
            progress.isCancelled ? "cancelled" : "-", progress.isPaused ? "paused" : "-",
        ].joined(separator: ",")
    }

    private static func line(_ progress: Progress) -> String {
        "\(progress.completedUnitCount)/\(progress.totalUnitCount) \(flags(progress))"
    }

    func run(_ command: String, _ arguments: [String]) {
        guard let name = arguments.first else {
            say("error \(command) needs a name")
            return
        }
        switch command {
        case "publish" where arguments.count >= 3:
            let progress = Progress.discreteProgress(totalUnitCount: Int64(arguments[2]) ?? 100)
            progress.kind = .file
            progress.fileURL = URL(fileURLWithPath: arguments[1])
            progress.isCancellable = arguments.contains("cancellable")
            progress.isPausable = arguments.contains("pausable")
            if arguments.contains("copying") { progress.fileOperationKind = .copying }
            if arguments.contains("downloading") { progress.fileOperationKind = .downloading }
            if arguments.contains("uploading") { progress.fileOperationKind = .uploading }
            progress.cancellationHandler = { say("progress \(name) cancelled") }
            progress.pausingHandler = { say("progress \(name) paused") }
            progress.resumingHandler = { say("progress \(name) resumed") }
            progress.publish()
            guard !arguments.contains("unpublish-at-once") else {
                // A copy too quick for any update: unpublished right after, on the same thread.
                progress.unpublish()
                return say("published and unpublished \(name)")
            }
            state.withLock { $0.published[name] = progress }
            say("published \(name)")
        case "progress-set" where arguments.count == 2:
            guard let progress = state.withLock({ $0.published[name] }) else { return say("error no \(name)") }
            progress.completedUnitCount = Int64(arguments[1]) ?? 0
            say("set \(name) \(arguments[1])")
        case "progress-count" where arguments.count == 2:
            guard let progress = state.withLock({ $0.published[name] }) else { return say("error no \(name)") }
            let count = max(1, Int(arguments[1]) ?? 1)
            let start = ContinuousClock.now
            for _ in 0..<count { progress.completedUnitCount += 1 }
            let elapsed = ContinuousClock.now - start
            say("counted \(name) \(elapsed / .nanoseconds(1) / Double(count))")
        case "unpublish":
            guard let progress = state.withLock({ $0.published.removeValue(forKey: name) }) else {
                return say("error no \(name)")
            }
            progress.unpublish()
            say("unpublished \(name)")
        case "subscribe" where arguments.count == 2:
            let subscriber = Progress.addSubscriber(forFileURL: URL(fileURLWithPath: arguments[1])) { proxy in
                let path = proxy.fileURL?.path ?? "-"
                let kind = proxy.kind?.rawValue ?? "-"
                let operation = proxy.fileOperationKind?.rawValue ?? "-"
                say("subscriber \(name) appeared \(path) \(Self.line(proxy)) \(kind) \(operation)")
                ProgressCommands.shared.watch(proxy, name: name)
                return { say("subscriber \(name) unpublished \(path)") }
            }
            state.withLock { $0.subscribers[name] = subscriber }
            say("subscribed \(name)")
        case "unsubscribe":
            guard let subscriber = state.withLock({ $0.subscribers.removeValue(forKey: name) }) else {
                return say("error no \(name)")
            }
            Progress.removeSubscriber(subscriber)
            say("unsubscribed \(name)")
        case "proxy-cancel", "proxy-pause", "proxy-resume", "proxy-updates":
            guard let proxy = state.withLock({ $0.newest[name] }) else { return say("error no proxy \(name)") }
            switch command {
            case "proxy-cancel": proxy.cancel()
            case "proxy-pause": proxy.pause()
            case "proxy-resume": proxy.resume()
            default: return say("proxy-updates \(name) \(proxy.fileProgressUpdatesReceived)")
            }
            say("\(command) \(name)")
        default:
            say("error unknown command: \(command) \(arguments.joined(separator: " "))")
        }
    }

    /// Prints the proxy's state whenever it changes (swift-corelibs-foundation has no key-value observing).
    private func watch(_ proxy: Progress, name: String) {
        state.withLock { state in
            state.watched.append(Watched(proxy: proxy, name: name, last: Self.line(proxy)))
            state.newest[name] = proxy
            guard state.timer == nil else { return }
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "fc-testhost.progress"))
            timer.schedule(deadline: .now(), repeating: .milliseconds(5))
            timer.setEventHandler { ProgressCommands.shared.poll() }
            timer.resume()
            state.timer = timer
        }
    }

    private func poll() {
        let lines: [String] = state.withLock { state in
            var lines: [String] = []
            for index in state.watched.indices {
                let proxy = state.watched[index].proxy
                let now = Self.line(proxy)
                guard now != state.watched[index].last else { continue }
                state.watched[index].last = now
                lines.append("subscriber \(state.watched[index].name) state \(proxy.fileURL?.path ?? "-") \(now)")
            }
            state.watched.removeAll { $0.proxy.isOld }
            return lines
        }
        for line in lines { say(line) }
    }
}
