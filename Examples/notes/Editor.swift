import FileCoordination
import FileCoordinationDocument
import Foundation

/// The editor: a text buffer with a cursor over a PlainTextDocument, drawn full screen with a status line that says
/// what other programs do to the file.
///
/// - Important: Every method runs on `queue` (serial): keys from the input thread and the document's events both
///   hop there, so the buffer and the screen change one at a time.
final class Editor: @unchecked Sendable {
    let queue = DispatchQueue(label: "notes.editor")
    private let document: PlainTextDocument
    private let terminal: Terminal
    private var lines: [[Character]] = [[]]
    private var row = 0
    private var column = 0
    private var top = 0
    /// The last thing that happened, shown on the status line.
    private var message = ""
    private var others = (readers: 0, writers: 0)
    private var conflictCount = 0
    /// The conflict versions listed while the picker is open, else `nil`.
    private var picker: [NSFileVersion]?
    private var closedBecauseDeleted = false
    /// Copies into the file that another program (the mirror) published a file progress for: running now, and
    /// finished since the editor opened (issue 44).
    private var copiesRunning: [ObjectIdentifier: Progress] = [:]
    private var copiesFinished = 0
    /// Redraws while copies run.
    private lazy var redraws = RedrawTimer(queue: queue) { [weak self] in self?.draw() }
    private var quitting = false

    init(document: PlainTextDocument, terminal: Terminal) {
        self.document = document
        self.terminal = terminal
    }

    // MARK: Document events

    func opened() {
        load(document.text)
        conflictCount = document.conflictVersions.count
        message = "opened \(document.fileURL.lastPathComponent)"
        draw()
    }

    func handle(_ event: DocumentEvent) {
        switch event {
        case .opened:
            return
        case .saved:
            message = "saved"
        case .saveFailed(let why):
            message = "save failed: \(why)"
        case .reloaded:
            load(document.text)
            message = "reloaded: the file changed on disk"
        case .changedOnDiskWithUnsavedChanges:
            message = "the file changed on disk; ^S keeps yours, ^R takes the file's"
        case .othersAccessing(let readers, let writers):
            others = (readers, writers)
            if writers > 0 { message = "another program is writing the file" }
        case .moved(let url):
            message = "the file moved to \(url.path)"
        case .conflictVersionsChanged(let count):
            conflictCount = count
            if count > 0 { message = "\(count) conflict version\(count == 1 ? "" : "s"): ^K to choose" }
        case .closed(let reason):
            others = (0, 0)
            if reason == .deleted {
                closedBecauseDeleted = true
                message = "the file was deleted; the document is closed (^Q quits)"
            }
        }
        draw()
    }

    // MARK: File progress

    /// A program published a file progress about an item in the document's folder (on `queue`): shown while it
    /// runs if it is about the document.
    func progressAppeared(_ progress: Progress) {
        guard progress.fileURL?.lastPathComponent == document.fileURL.lastPathComponent else { return }
        copiesRunning[ObjectIdentifier(progress)] = progress
        redraws.run(true)
        draw()
    }

    /// That progress ended (on `queue`).
    func progressEnded(_ progress: Progress) {
        guard copiesRunning.removeValue(forKey: ObjectIdentifier(progress)) != nil else { return }
        redraws.run(!copiesRunning.isEmpty)
        copiesFinished += 1
        draw()
    }

    // MARK: Keys

    func handle(_ keys: [Key]) {
        for key in keys where !quitting {
            if picker != nil {
                pick(key)
            } else {
                edit(key)
            }
        }
        draw()
    }

    private func edit(_ key: Key) {
        switch key {
        case .control("q"):
            quit()
            return
        case .control("s"):
            message = "saving…"
            run("save") { try await $0.save() }
            return
        case .control("r"):
            run("revert") { try await $0.revert() }
            return
        case .control("k"):
            let versions = document.conflictVersions
            if versions.isEmpty {
                message = "no conflict versions"
            } else {
                picker = versions
            }
            return
        default:
            break
        }
        guard !document.isClosed else { return }
        switch key {
        case .character(let character):
            lines[row].insert(character, at: column)
            column += 1
        case .enter:
            let rest = Array(lines[row][column...])
            lines[row].removeSubrange(column...)
            lines.insert(rest, at: row + 1)
            row += 1
            column = 0
        case .backspace:
            if column > 0 {
                lines[row].remove(at: column - 1)
                column -= 1
            } else if row > 0 {
                column = lines[row - 1].count
                lines[row - 1] += lines.remove(at: row)
                row -= 1
            } else {
                return
            }
        case .delete:
            if column < lines[row].count {
                lines[row].remove(at: column)
            } else if row + 1 < lines.count {
                lines[row] += lines.remove(at: row + 1)
            } else {
                return
            }
        case .up: moveTo(row: row - 1)
        case .down: moveTo(row: row + 1)
        case .left:
            if column > 0 { column -= 1 }
        case .right:
            if column < lines[row].count { column += 1 }
        case .home: column = 0
        case .end: column = lines[row].count
        default: return
        }
        if case .character = key {
        } else if [.enter, .backspace, .delete].contains(key) {
        } else {
            return
        }
        document.text = String(lines.map { String($0) }.joined(separator: "\n"))
        message = "modified"
    }

    private func pick(_ key: Key) {
        guard let versions = picker else { return }
        switch key {
        case .escape, .control("k"):
            picker = nil
        case .character("0"):
            picker = nil
            message = "keeping this text; resolving…"
            run("resolve") { try await $0.resolveConflicts(keeping: nil) }
        case .character(let digit) where digit.wholeNumberValue.map { (1...versions.count).contains($0) } == true:
            picker = nil
            let version = versions[digit.wholeNumberValue! - 1]
            message = "taking the version from \(version.localizedNameOfSavingComputer ?? "?"); resolving…"
            run("resolve") { try await $0.resolveConflicts(keeping: version) }
        default:
            break
        }
    }

    private func moveTo(row newRow: Int) {
        row = min(max(0, newRow), lines.count - 1)
        column = min(column, lines[row].count)
    }

    private func load(_ text: String) {
        lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { Array($0) }
        if lines.isEmpty { lines = [[]] }
        row = min(row, lines.count - 1)
        column = min(column, lines[row].count)
    }

    /// Runs a document call from a task; its failure goes to the status line.
    private func run(_ what: String, _ body: @escaping @Sendable (PlainTextDocument) async throws -> Void) {
        let document = self.document
        Task {
            do {
                try await body(document)
            } catch {
                queue.async { [self] in
                    message = "\(what) failed: \(error)"
                    draw()
                }
            }
        }
    }

    private func quit() {
        quitting = true
        message = "closing…"
        let document = self.document
        let terminal = self.terminal
        Task {
            try? await document.close()
            terminal.leave()
            exit(0)
        }
    }

    // MARK: Drawing

    /// Draws the whole screen: title, text, status line, keys.
    func draw() {
        let (rows, columns) = terminal.size
        let bodyRows = rows - 3
        if row < top { top = row }
        if row >= top + bodyRows { top = row - bodyRows + 1 }
        var screen = "\u{1B}[?25l\u{1B}[H"
        func line(_ text: String, reverse: Bool = false) {
            let clipped = String(text.prefix(columns))
            screen += (reverse ? "\u{1B}[7m" : "") + clipped
            screen +=
                reverse ? String(repeating: " ", count: max(0, columns - clipped.count)) + "\u{1B}[0m" : "\u{1B}[K"
            screen += "\r\n"
        }
        line(" notes  \(document.fileURL.path)", reverse: true)
        if let versions = picker {
            var list = ["Conflict versions of \(document.fileURL.lastPathComponent):", ""]
            list.append("  0) keep the text shown now")
            for (index, version) in versions.enumerated() {
                let text = (try? String(contentsOf: version.url, encoding: .utf8)) ?? ""
                let oneLine = text.split(separator: "\n").joined(separator: " / ")
                list.append("  \(index + 1)) from \(version.localizedNameOfSavingComputer ?? "?"): \(oneLine)")
            }
            list += ["", "Press a number to keep that version, Esc to go back."]
            for index in 0..<bodyRows { line(index < list.count ? list[index] : "") }
        } else {
            for index in 0..<bodyRows {
                let number = top + index
                line(number < lines.count ? String(lines[number]) : "~")
            }
        }
        var status = document.isClosed ? " CLOSED" : document.hasUnsavedChanges ? " MODIFIED" : " saved"
        if others.writers > 0 { status += " | another program is writing" }
        if others.readers > 0 { status += " | another program is reading" }
        if conflictCount > 0 { status += " | conflicts: \(conflictCount)" }
        for copy in copiesRunning.values {
            status += " | copying in \(Int((copy.fractionCompleted * 100).rounded(.down)))%"
        }
        if copiesFinished > 0 { status += " | copies in: \(copiesFinished)" }
        status += " | " + message
        line(status, reverse: true)
        screen += String(" ^S save  ^R revert  ^K conflicts  ^Q quit".prefix(columns)) + "\u{1B}[K"
        if picker == nil {
            screen += "\u{1B}[\(row - top + 2);\(min(column, columns - 1) + 1)H\u{1B}[?25h"
        }
        terminal.write(screen)
    }
}
