// fc-testhost: a process that presents items and makes coordinated calls on command, so that tests (and the
// README's demonstration) can put several real processes around one filecoordd.
//
// Commands, one per line on standard input; everything the process sees is printed to standard output, one event
// per line, flushed at once:
//
//   present NAME PATH [refuse-save] [never-answer] [no-reacquire] [read-on-change] [main-queue] [show-contents]
//                                                                    with show-contents it prints
//                                                                    `presenter NAME contents TEXT` (its item's text,
//                                                                    or `-` when missing) after relinquishToWriter and
//                                                                    before reacquire, so that a test sees what the
//                                                                    file held when it was asked and when it came back;
//                                                                    register a presenter called NAME; with
//                                                                    read-on-change it makes a coordinated read of its
//                                                                    item inside presentedItemDidChange, on its own
//                                                                    queue (the classic deadlock,
//                                                                    docs/SEMANTICS.md §6);
//                                                                    with main-queue its queue is OperationQueue.main
//                                                                    (run by the main thread) instead of its own
//   unpresent NAME                                                   remove it
//   read PATH [without-changes] [hold]                               coordinated read (prints the contents); with
//                                                                    hold, prints `holding read PATH` and waits for
//                                                                    `release` inside the accessor
//   read-loop PATH COUNT                                             COUNT coordinated reads; prints
//                                                                    `done read-loop PATH NANOSECONDS-PER-READ`
//   write PATH [TEXT] [deleting|moving|merging|replacing] [hold]     coordinated write of TEXT; with hold, waits for
//                                                                    `release` inside the accessor
//   move FROM TO                                                     coordinated move with item(at:didMoveTo:)
//   rename FROM TO                                                   as move, with rename(2) (which, unlike
//                                                                    FileManager, renames `a` to `A` in place on a
//                                                                    case-insensitive file system)
//   write2 FIRST SECOND [hold]                                       one coordinated write of both items (the
//                                                                    two-URL method); prints `granted write2 FIRST`
//                                                                    and `done write2 FIRST`
//   release                                                          let the held accessor return
//   prepare PATH [write] [main-complete] [drop]                      prepare(forReadingItemsAt:…) of PATH (writing
//                                                                    with `write`): prints `batch prepare PATH` in
//                                                                    the block and `returned prepare PATH` once the
//                                                                    call returns. The block keeps its completion
//                                                                    handler for `complete`; with main-complete it
//                                                                    calls it from a block it queues on the main
//                                                                    queue (`completed prepare PATH`); with drop it
//                                                                    never calls it and keeps nothing
//   complete                                                         call the oldest kept completion handler, on the
//                                                                    thread that reads standard input; prints
//                                                                    `completed prepare`
//   add-version PATH [CONTENTS] [conflict COMPUTER]                  inside a coordinated write, add a version of PATH
//                                                                    with CONTENTS (default: PATH itself), a conflict
//                                                                    version from COMPUTER with `conflict`; prints
//                                                                    `done add-version PATH ID`
//   add-versions PATH COUNT BYTES [coordinated] [parallel]          COUNT adds of BYTES fresh bytes each, one after
//                                                                    another (all at once with `parallel`), outside
//                                                                    a coordinated call (inside a write of PATH each
//                                                                    with `coordinated`); prints
//                                                                    `done add-version PATH ID` (or `failed ...`) per
//                                                                    add, then `done add-versions PATH`
//   resolve PATH                                                     inside a coordinated write, replace PATH with its
//                                                                    newest unresolved conflict version, mark every
//                                                                    conflict resolved, remove the other versions
//   versions PATH                                                    prints `versions PATH ID,...` (other versions)
//                                                                    and `conflicts PATH ID,...` (unresolved)
//   upload PATH [hold]                                               coordinated read with .forUploading: prints
//                                                                    `granted upload PATH SNAPSHOT`, holds for
//                                                                    `release` with hold, then `done upload PATH TEXT`
//   doc NAME PATH [autosave MS]                                      open a PlainTextDocument (CoordinatedDocument)
//                                                                    called NAME on PATH; prints every event as
//                                                                    `doc NAME EVENT` (DocumentCommands.swift)
//   doc-edit NAME TEXT | doc-text NAME | doc-save NAME | doc-revert NAME | doc-close NAME | doc-conflicts NAME |
//   doc-pick NAME INDEX|current                                      edit, show, save, revert, close the document,
//                                                                    list its conflict versions, resolve them
//   main COMMAND ...                                                 make the call of a read, write or move on the
//                                                                    main thread (DispatchQueue.main), not its own
//   listener-wakeups PATH OTHER COUNT                                how often the connection's listener thread
//                                                                    wakes over COUNT coordinated reads of PATH,
//                                                                    without and then with a presenter of OTHER
//                                                                    (ListenerWakeups.swift; the process's first
//                                                                    coordinated call)
//   sleep MS
//   ignore SIGNAL                                                    set SIGNAL (a number) to SIG_IGN in this process
//   exit
//
// Output lines: `ready`, `presenter NAME CALLBACK [URL]`, `granted OP PATH`, `done OP PATH [TEXT]`,
// `failed OP PATH DOMAIN CODE MESSAGE`. Calls run on their own threads, so `release` is read while a write holds.
// Standard input is read on a thread of its own; the main thread runs the main queue, as an app's does.

import FCSystem
import FileCoordination
import Foundation
import Logging
import SystemPackage

/// Writes one line to standard output at once (no buffering: a test reads it as it happens).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A presenter that prints every callback and answers as the command asked.
// @unchecked: an NSObject subclass; `url` is read and written only under `lock`, the rest is `let`.
final class PrintingPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let name: String
    let refuseSave: Bool
    let neverAnswer: Bool
    let reacquire: Bool
    let readOnChange: Bool
    let showContents: Bool
    private let lock = NSLock()
    private var url: URL
    let presentedItemOperationQueue: OperationQueue

    init(
        name: String,
        url: URL,
        refuseSave: Bool,
        neverAnswer: Bool,
        reacquire: Bool,
        readOnChange: Bool,
        mainQueue: Bool,
        showContents: Bool = false
    ) {
        self.showContents = showContents
        if mainQueue {
            presentedItemOperationQueue = .main
        } else {
            presentedItemOperationQueue = OperationQueue()
            presentedItemOperationQueue.maxConcurrentOperationCount = 1
        }
        self.readOnChange = readOnChange
        self.name = name
        self.url = url
        self.refuseSave = refuseSave
        self.neverAnswer = neverAnswer
        self.reacquire = reacquire
    }

    var presentedItemURL: URL? { lock.withLock { url } }

    private func reacquirer() -> (@Sendable () -> Void)? {
        guard reacquire else { return nil }
        let name = self.name
        return { [self] in
            sayContents()
            say("presenter \(name) reacquire")
        }
    }

    /// With show-contents: prints the item's text as it is now.
    private func sayContents() {
        guard showContents, let url = presentedItemURL else { return }
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? "-"
        say("presenter \(name) contents \(text.trimmingCharacters(in: .newlines))")
    }

    func relinquishPresentedItem(toReader reader: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        say("presenter \(name) relinquishToReader")
        if neverAnswer { return }
        reader(reacquirer())
    }

    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        say("presenter \(name) relinquishToWriter")
        sayContents()
        if neverAnswer { return }
        writer(reacquirer())
    }

    func savePresentedItemChanges(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        say("presenter \(name) save")
        if refuseSave {
            completionHandler(
                NSError(
                    domain: "FCTestHostDomain",
                    code: 42,
                    userInfo: [NSLocalizedDescriptionKey: "The document could not be saved."]
                )
            )
        } else {
            completionHandler(nil)
        }
    }

    func accommodatePresentedItemDeletion(completionHandler: @escaping @Sendable ((any Error)?) -> Void) {
        say("presenter \(name) accommodateDeletion")
        completionHandler(nil)
    }

    func presentedItemDidMove(to newURL: URL) {
        lock.withLock { url = newURL }
        say("presenter \(name) didMove \(newURL.path)")
    }

    func presentedItemDidChange() {
        say("presenter \(name) didChange")
        guard readOnChange, let url = presentedItemURL else { return }
        var error: NSError?
        NSFileCoordinator(filePresenter: self).coordinate(readingItemAt: url, options: .withoutChanges, error: &error) {
            _ in
            say("presenter \(name) readOnChange done")
        }
        if let error {
            say("presenter \(name) readOnChange failed \(error.domain) \(error.code) \(error.localizedDescription)")
        }
    }
    func accommodatePresentedSubitemDeletion(
        at url: URL,
        completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        say("presenter \(name) accommodateSubitemDeletion \(url.path)")
        completionHandler(nil)
    }
    func presentedItemDidGain(_ version: NSFileVersion) { say("presenter \(name) didGainVersion") }
    func presentedItemDidLose(_ version: NSFileVersion) { say("presenter \(name) didLoseVersion") }
    func presentedItemDidResolveConflict(_ version: NSFileVersion) {
        say("presenter \(name) didResolveConflictVersion")
    }
    func presentedSubitem(at url: URL, didGain version: NSFileVersion) {
        say("presenter \(name) subitemDidGainVersion \(url.path)")
    }
    func presentedSubitem(at url: URL, didLose version: NSFileVersion) {
        say("presenter \(name) subitemDidLoseVersion \(url.path)")
    }
    func presentedSubitem(at url: URL, didResolve version: NSFileVersion) {
        say("presenter \(name) subitemDidResolveConflictVersion \(url.path)")
    }
    func presentedSubitemDidChange(at url: URL) { say("presenter \(name) subitemDidChange \(url.path)") }
    func presentedSubitemDidAppear(at url: URL) { say("presenter \(name) subitemDidAppear \(url.path)") }
    func presentedSubitem(at oldURL: URL, didMoveTo newURL: URL) {
        say("presenter \(name) subitemDidMove \(oldURL.path) \(newURL.path)")
    }
}

// @unchecked: `presenters` and `held` are read and written only under `lock`.
final class Host: @unchecked Sendable {
    let lock = NSLock()
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
                !["deleting", "moving", "merging", "replacing", "hold"].contains($0)
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
        case "add-version", "add-versions", "resolve", "versions", "upload":
            runVersionCommand(command, arguments, background: background)
        case "doc", "doc-edit", "doc-text", "doc-save", "doc-revert", "doc-close", "doc-conflicts", "doc-pick":
            runDocumentCommand(command, arguments)
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

// The library logs through the logger an app gives it (never on its own to standard error): this host gives it one
// that writes to standard error, where tests read it.
FileCoordinationLogging.logger = {
    var logger = Logger(label: "fc-testhost") { label in StreamLogHandler.standardError(label: label) }
    logger.logLevel = .info
    return logger
}()
let host = Host()
say("ready \(ProcessInfo.processInfo.processIdentifier)")
Thread {
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        host.run(words)
    }
    exit(0)
}
.start()
dispatchMain()
