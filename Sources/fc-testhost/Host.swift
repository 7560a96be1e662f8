import FCSystem
import FCToolkit
import FileCoordination
import Foundation
import Logging
import SystemPackage

/// Runs the commands read from standard input (listed in main.swift), each call on a thread of its own.
// @unchecked: `presenters`, `held` and `handlers` are read and written only under `lock`.
final class Host: @unchecked Sendable {
    let lock = Locked(())
    private var presenters: [String: PrintingPresenter] = [:]
    var held: [DispatchSemaphore] = []
    /// Completion handlers of `prepare` batches, kept for `complete`.
    var handlers: [@Sendable () -> Void] = []

    func report(_ operation: String, _ path: String, _ error: NSError?) {
        if let error {
            say("failed \(operation) \(path) \(error.domain) \(error.code) \(error.localizedDescription)")
        }
    }

    /// `operation` (`move` or `rename`): a coordinated move of `from` (`.forMoving`) to `to` (`.forReplacing`) whose
    /// accessor moves the item with `mover` (an error message, or `nil`) and reports the move to the coordinator.
    private func coordinatedMove(
        _ operation: String,
        _ from: String,
        _ to: String,
        on background: (@escaping @Sendable () -> Void) -> Void,
        mover: @escaping @Sendable (URL, URL) -> String?
    ) {
        let from = URL(fileURLWithPath: from)
        let to = URL(fileURLWithPath: to)
        background {
            var error: NSError?
            let coordinator = NSFileCoordinator()
            coordinator.coordinate(
                writingItemAt: from,
                options: .forMoving,
                writingItemAt: to,
                options: .forReplacing,
                error: &error
            ) { source, destination in
                say("granted \(operation) \(from.path)")
                if let failure = mover(source, destination) {
                    say("failed \(operation) \(from.path) \(failure)")
                } else {
                    coordinator.item(at: source, didMoveTo: destination)
                }
                say("done \(operation) \(from.path) \(to.path)")
            }
            self.report(operation, from.path, error)
        }
    }

    /// Runs one command. Calls go to a thread of their own, or with `onMain` to the main thread.
    func run(_ words: [String], onMain: Bool = false) {
        guard let command = words.first else { return }
        let arguments = Array(words.dropFirst())
        let background = { (body: @escaping @Sendable () -> Void) in
            if onMain { DispatchQueue.main.async(execute: body) } else { Thread { body() }.start() }
        }
        switch command {
        case "main" where arguments.count >= 1:
            run(arguments, onMain: true)
        case "present" where arguments.count >= 2:
            let presenter = PrintingPresenter(
                name: arguments[0],
                url: URL(fileURLWithPath: arguments[1]),
                refuseSave: arguments.contains("refuse-save"),
                neverAnswer: arguments.contains("never-answer"),
                reacquire: !arguments.contains("no-reacquire"),
                readOnChange: arguments.contains("read-on-change"),
                mainQueue: arguments.contains("main-queue"),
                showContents: arguments.contains("show-contents")
            )
            lock.withLock { presenters[arguments[0]] = presenter }
            NSFileCoordinator.addFilePresenter(presenter)
            if arguments.contains("change-at-once") {
                // An uncoordinated change the moment addFilePresenter returned (issue 37): appended to a file, or a
                // new file in a folder.
                Self.changeWithoutCoordination(arguments[1])
            }
            say("presenting \(arguments[0]) \(arguments[1])")
        case "unpresent" where arguments.count == 1:
            if let presenter = lock.withLock({ presenters.removeValue(forKey: arguments[0]) }) {
                NSFileCoordinator.removeFilePresenter(presenter)
            }
            say("unpresented \(arguments[0])")
        case "read-loop" where arguments.count == 2:
            let path = arguments[0]
            let count = max(1, Int(arguments[1]) ?? 1)
            background {
                // COUNT coordinated reads, one new coordinator each, as apps make them (Benchmarks/other-languages.sh).
                let start = ContinuousClock.now
                for _ in 0..<count {
                    var error: NSError?
                    NSFileCoordinator().coordinate(readingItemAt: URL(fileURLWithPath: path), error: &error) { _ in }
                    if error != nil { return self.report("read-loop", path, error) }
                }
                let elapsed = ContinuousClock.now - start
                let nanoseconds =
                    elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
                say("done read-loop \(path) \(nanoseconds / Int64(count))")
            }
        case "read" where arguments.count >= 1:
            let path = arguments[0]
            let options: NSFileCoordinator.ReadingOptions = arguments.contains("without-changes") ? .withoutChanges : []
            let hold = arguments.contains("hold") ? DispatchSemaphore(value: 0) : nil
            background {
                var error: NSError?
                NSFileCoordinator().coordinate(
                    readingItemAt: URL(fileURLWithPath: path),
                    options: options,
                    error: &error
                ) { url in
                    say("granted read \(path)")
                    if let hold {
                        self.lock.withLock { self.held.append(hold) }
                        say("holding read \(path)")
                        hold.wait()
                    }
                    let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
                    say("done read \(path) \(text)")
                }
                self.report("read", path, error)
            }
        case "write" where arguments.count >= 1:
            let path = arguments[0]
            let flags = Set(arguments.dropFirst())
            let text = arguments.dropFirst().first {
                !["deleting", "moving", "merging", "replacing", "hold", "chmod"].contains($0)
            }
            var options: NSFileCoordinator.WritingOptions = []
            if flags.contains("deleting") { options.insert(.forDeleting) }
            if flags.contains("moving") { options.insert(.forMoving) }
            if flags.contains("merging") { options.insert(.forMerging) }
            if flags.contains("replacing") { options.insert(.forReplacing) }
            let writeOptions = options
            let hold = flags.contains("hold") ? DispatchSemaphore(value: 0) : nil
            background {
                var error: NSError?
                NSFileCoordinator().coordinate(
                    writingItemAt: URL(fileURLWithPath: path),
                    options: writeOptions,
                    error: &error
                ) { url in
                    say("granted write \(path)")
                    if writeOptions.contains(.forDeleting) {
                        try? FileManager.default.removeItem(at: url)
                    } else if flags.contains("chmod") {
                        // A change that closes no written file (its mode: `IN_ATTRIB`).
                        try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
                    } else if let text {
                        try? Data(text.utf8).write(to: url)
                    }
                    if let hold {
                        // Queued for `release` only once the accessor runs: a write that fails holds nothing.
                        self.lock.withLock { self.held.append(hold) }
                        say("holding write \(path)")
                        hold.wait()
                    }
                    say("done write \(path)")
                }
                self.report("write", path, error)
            }
        case "move" where arguments.count == 2:
            // FileManager's move (a copy and a delete across file systems).
            coordinatedMove("move", arguments[0], arguments[1], on: background) { source, destination in
                do {
                    try FileManager.default.moveItem(at: source, to: destination)
                    return nil
                } catch {
                    return "\(error)"
                }
            }
        case "rename" where arguments.count == 2:
            // rename(2) itself, so that a case-only rename on a case-insensitive file system happens in place.
            coordinatedMove("rename", arguments[0], arguments[1], on: background) { source, destination in
                do {
                    try FileSystemCalls.rename(FilePath(source.path), to: FilePath(destination.path))
                    return nil
                } catch {
                    return "\(error)"
                }
            }
        case "write-move" where arguments.count >= 2:
            // One write (forMoving; with `plain`, no option: a lease grants it on its straight path) of the source
            // alone, whose accessor renames it and reports the move (a move a lease's claim reports, stop 69);
            // `hold` keeps the accessor running until `release`.
            let from = URL(fileURLWithPath: arguments[0])
            let to = URL(fileURLWithPath: arguments[1])
            let hold = arguments.dropFirst(2).contains("hold") ? DispatchSemaphore(value: 0) : nil
            let options: NSFileCoordinator.WritingOptions = arguments.dropFirst(2).contains("plain") ? [] : .forMoving
            background {
                var error: NSError?
                let coordinator = NSFileCoordinator()
                coordinator.coordinate(writingItemAt: from, options: options, error: &error) { source in
                    say("granted write-move \(from.path)")
                    do {
                        try FileSystemCalls.rename(FilePath(source.path), to: FilePath(to.path))
                        coordinator.item(at: source, didMoveTo: to)
                    } catch {
                        say("failed write-move \(from.path) \(error)")
                    }
                    if let hold {
                        self.lock.withLock { self.held.append(hold) }
                        say("holding write-move \(from.path)")
                        hold.wait()
                    }
                    say("done write-move \(from.path)")
                }
                self.report("write-move", from.path, error)
            }
        case "write2" where arguments.count >= 2:
            let first = URL(fileURLWithPath: arguments[0])
            let second = URL(fileURLWithPath: arguments[1])
            let hold = arguments.dropFirst(2).contains("hold") ? DispatchSemaphore(value: 0) : nil
            background {
                var error: NSError?
                NSFileCoordinator().coordinate(
                    writingItemAt: first,
                    options: [],
                    writingItemAt: second,
                    options: [],
                    error: &error
                ) { _, _ in
                    say("granted write2 \(first.path)")
                    if let hold {
                        self.lock.withLock { self.held.append(hold) }
                        say("holding write2 \(first.path)")
                        hold.wait()
                    }
                    say("done write2 \(first.path)")
                }
                self.report("write2", first.path, error)
            }
        case "prepare" where arguments.count >= 1:
            let path = arguments[0]
            let url = URL(fileURLWithPath: path)
            let flags = Set(arguments.dropFirst())
            background {
                var error: NSError?
                NSFileCoordinator().prepare(
                    forReadingItemsAt: flags.contains("write") ? [] : [url],
                    options: [],
                    writingItemsAt: flags.contains("write") ? [url] : [],
                    options: [],
                    error: &error
                ) { completionHandler in
                    say("batch prepare \(path)")
                    if flags.contains("main-complete") {
                        DispatchQueue.main.async {
                            completionHandler()
                            say("completed prepare \(path)")
                        }
                    } else if !flags.contains("drop") {
                        self.lock.withLock { self.handlers.append(completionHandler) }
                    }
                }
                self.report("prepare", path, error)
                say("returned prepare \(path)")
            }
        case "complete":
            let handler = lock.withLock { handlers.isEmpty ? nil : handlers.removeFirst() }
            handler?()
            say(handler == nil ? "error no completion handler kept" : "completed prepare")
        case "listener-wakeups":
            runListenerWakeups(arguments)
        case "add-version", "add-versions", "resolve", "versions", "upload", "version-temp":
            runVersionCommand(command, arguments, background: background)
        case "doc", "doc-edit", "doc-text", "doc-save", "doc-revert", "doc-close", "doc-conflicts", "doc-pick":
            runDocumentCommand(command, arguments)
        case "publish", "progress-set", "progress-count", "unpublish", "subscribe", "unsubscribe", "proxy-cancel",
            "proxy-pause", "proxy-resume", "proxy-updates":
            ProgressCommands.shared.run(command, arguments)
        case "query", "query-block", "query-threads", "query-stop", "query-count", "query-keep", "query-index":
            QueryCommands.shared.run(command, arguments)
        case "release":
            let semaphore = lock.withLock { held.isEmpty ? nil : held.removeFirst() }
            semaphore?.signal()
            say("released")
        case "sleep" where arguments.count == 1:
            Thread.sleep(forTimeInterval: (Double(arguments[0]) ?? 0) / 1000)
        case "ignore" where arguments.count == 1:
            // Process-wide state that a daemon this process starts must not inherit (issue 10).
            do {
                try Signals.ignore(Int32(arguments[0]) ?? SIGUSR1)
                say("ignoring \(arguments[0])")
            } catch {
                say("error ignore \(arguments[0]): \(error)")
            }
        case "exit":
            exit(0)
        default:
            say("error unknown command: \(words.joined(separator: " "))")
        }
    }
}

extension Host {
    /// Appends a line to the file at `path` without coordination, or, for a folder, creates `changed-at-once` in it.
    static func changeWithoutCoordination(_ path: String) {
        var isDirectory: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        let target = isDirectory.boolValue ? path + "/changed-at-once" : path
        if !FileManager.default.fileExists(atPath: target) {
            _ = FileManager.default.createFile(atPath: target, contents: Data("at once\n".utf8))
            return
        }
        guard let handle = FileHandle(forWritingAtPath: target) else { return }
        _ = try? handle.seekToEnd()
        try? handle.write(contentsOf: Data("at once\n".utf8))
        try? handle.close()
    }
}
