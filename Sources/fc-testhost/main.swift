// fc-testhost: a process that presents items and makes coordinated calls on command, so that tests (and the
// README's demonstration) can put several real processes around one filecoordd.
//
// Commands, one per line on standard input; everything the process sees is printed to standard output, one event
// per line, flushed at once:
//
//   present NAME PATH [refuse-save] [never-answer] [no-reacquire] [read-on-change] [main-queue] [show-contents]
//           [change-at-once]                                         with change-at-once, appends a line to PATH (a
//                                                                    file) or creates PATH/changed-at-once (a folder)
//                                                                    without coordination the moment addFilePresenter
//                                                                    returned; with show-contents it prints
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
//   add-version PATH [CONTENTS] [conflict COMPUTER] [moving]         inside a coordinated write, add a version of PATH
//                                                                    with CONTENTS (default: PATH itself), a conflict
//                                                                    version from COMPUTER with `conflict`, moving
//                                                                    CONTENTS with `moving`; prints
//                                                                    `done add-version PATH ID`
//   version-temp PATH                                                prints `version-temp PATH DIR`: a directory in
//                                                                    which to prepare a version to add by moving
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
//                                                                    wakes, and how many frames it reads, over
//                                                                    COUNT coordinated reads of PATH, without and
//                                                                    then with a presenter of OTHER
//                                                                    (ListenerWakeups.swift; the process's first
//                                                                    coordinated call)
//   publish, progress-set, progress-count, unpublish, subscribe, unsubscribe, proxy-cancel, proxy-pause,
//   proxy-resume, proxy-updates                                      file progress (ProgressCommands.swift)
//   query, query-block, query-threads, query-stop, query-count, query-keep, query-index
//                                                                    live queries (QueryCommands.swift)
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

// The library logs through the logger an app gives it (never on its own to standard error): this host gives it one
// that writes to standard error, where tests read it.
FileCoordinationLogging.logger = {
    var logger = Logger(label: "fc-testhost") { label in StreamLogHandler.standardError(label: label) }
    logger.logLevel = .info
    return logger
}()
let host = Host()
say("ready \(ProcessIdentity.processID)")
Thread {
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        host.run(words)
    }
    exit(0)
}
.start()
dispatchMain()
