// notes: a full-screen terminal notes editor built on CoordinatedDocument (issue 27).
//
//   notes [--autosave SECONDS] FILE
//   notes --browse FOLDER
//
// It edits FILE as a PlainTextDocument: coordinated open, save (^S) and autosave, revert (^R); the status line says
// when another program reads or writes the file, and shows the copies into it a sync agent publishes a file progress
// for; the text is read again when another program changes it (with or without coordination); it follows a rename,
// closes when the file is deleted, and lists the conflict versions a sync tool added (^K) to keep one. ^Q saves and
// quits. With --browse it lists the documents of FOLDER instead, kept current by an NSMetadataQuery, with the copies a
// sync agent publishes progress for (Browser.swift). Run it in a terminal (or in tmux, as the tests do).

import FileCoordination
import FileCoordinationDocument
import Foundation

var arguments = Array(CommandLine.arguments.dropFirst())
var autosave: Duration? = .seconds(1)
if let index = arguments.firstIndex(of: "--autosave"), index + 1 < arguments.count {
    autosave = Double(arguments[index + 1]).map { $0 > 0 ? .milliseconds(Int($0 * 1000)) : nil } ?? autosave
    arguments.removeSubrange(index...(index + 1))
}
if arguments.count == 2, arguments[0] == "--browse" {
    let terminal = Terminal()
    let browser = Browser(folder: URL(fileURLWithPath: arguments[1]), terminal: terminal)
    do {
        try terminal.enter()
    } catch {
        FileHandle.standardError.write(Data("notes: \(error)\n".utf8))
        exit(1)
    }
    let started = browser.queue.sync { browser.start() }
    guard started else {
        terminal.leave()
        FileHandle.standardError.write(Data("notes: the folder cannot be browsed: filecoordd does not answer\n".utf8))
        exit(1)
    }
    browser.queue.async { browser.draw() }
    Thread {
        var decoder = KeyDecoder()
        while true {
            let data = FileHandle.standardInput.availableData
            if data.isEmpty { break }
            let keys = decoder.decode(Array(data))
            let goOn = browser.queue.sync { browser.handle(keys) }
            if !goOn { break }
        }
        terminal.leave()
        exit(0)
    }
    .start()
    dispatchMain()
}
guard arguments.count == 1, !arguments[0].hasPrefix("-") else {
    FileHandle.standardError.write(Data("usage: notes [--autosave SECONDS] FILE | notes --browse FOLDER\n".utf8))
    exit(2)
}
let url = URL(fileURLWithPath: arguments[0])
if !FileManager.default.fileExists(atPath: url.path) {
    _ = FileManager.default.createFile(atPath: url.path, contents: Data())
}

let document = PlainTextDocument(fileURL: url, autosaveDelay: autosave)
let terminal = Terminal()
let editor = Editor(document: document, terminal: terminal)

do {
    try terminal.enter()
} catch {
    FileHandle.standardError.write(Data("notes: \(error)\n".utf8))
    exit(1)
}

Task {
    do {
        try await document.open()
    } catch {
        terminal.leave()
        FileHandle.standardError.write(Data("notes: cannot open \(url.path): \(error)\n".utf8))
        exit(1)
    }
    editor.queue.async { editor.opened() }
    // File progress published about items of the document's folder (the mirror's copies, issue 44).
    _ = Progress.addSubscriber(forFileURL: url.deletingLastPathComponent()) { progress in
        let shown = UncheckedProgress(progress)
        editor.queue.async { editor.progressAppeared(shown.value) }
        return { editor.queue.async { editor.progressEnded(shown.value) } }
    }
    for await event in document.events {
        editor.queue.async { editor.handle(event) }
    }
}

/// A progress handed to the editor's queue.
// @unchecked: swift-corelibs-foundation's Progress is not Sendable; the editor only reads it, on its queue.
struct UncheckedProgress: @unchecked Sendable {
    let value: Progress
    init(_ value: Progress) { self.value = value }
}

// Keys are read on a thread of their own (a blocking read) and handled on the editor's queue.
Thread {
    var decoder = KeyDecoder()
    while true {
        let data = FileHandle.standardInput.availableData
        if data.isEmpty { break }
        let keys = decoder.decode(Array(data))
        editor.queue.async { editor.handle(keys) }
    }
}
.start()

dispatchMain()
