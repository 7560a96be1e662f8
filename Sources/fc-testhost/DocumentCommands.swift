import FCToolkit
import FileCoordination
import FileCoordinationDocument
import Foundation

// fc-testhost's CoordinatedDocument commands (issue 27): a PlainTextDocument per name, driven line by line, every
// event it reports printed as `doc NAME EVENT ...`; see the command list in main.swift.

/// The documents of this host, by name.
// @unchecked: `documents` is read and written only under `lock`.
final class Documents: @unchecked Sendable {
    private let lock = Locked(())
    private var documents: [String: PlainTextDocument] = [:]

    func add(_ name: String, _ document: PlainTextDocument) { lock.withLock { documents[name] = document } }
    func get(_ name: String) -> PlainTextDocument? { lock.withLock { documents[name] } }
}

let documents = Documents()

/// One line per event, with the text after a read so that tests see what was read.
private func describe(_ event: DocumentEvent, of document: PlainTextDocument) -> String {
    switch event {
    case .opened: "opened \(document.text)"
    case .saved: "saved"
    case .saveFailed(let message): "saveFailed \(message)"
    case .reloaded: "reloaded \(document.text)"
    case .changedOnDiskWithUnsavedChanges: "changedOnDiskWithUnsavedChanges"
    case .othersAccessing(let readers, let writers): "others readers=\(readers) writers=\(writers)"
    case .moved(let url): "moved \(url.path)"
    case .conflictVersionsChanged(let count): "conflicts \(count)"
    case .closed(let reason): "closed \(reason == .deleted ? "deleted" : "byApp")"
    }
}

extension Host {
    /// Runs a `doc…` command. Calls are made from a task; their outcome is printed as `done doc-… NAME` or
    /// `failed doc-… NAME MESSAGE`.
    func runDocumentCommand(_ command: String, _ arguments: [String]) {
        guard let name = arguments.first else {
            say("error \(command) needs a name")
            return
        }
        let rest = Array(arguments.dropFirst())
        if command == "doc" {
            guard let path = rest.first else {
                say("error doc needs a path")
                return
            }
            var autosave: Duration? = nil
            if let index = rest.firstIndex(of: "autosave"), index + 1 < rest.count, let ms = Int(rest[index + 1]) {
                autosave = .milliseconds(ms)
            }
            let document = PlainTextDocument(fileURL: URL(fileURLWithPath: path), autosaveDelay: autosave)
            documents.add(name, document)
            Task {
                for await event in document.events { say("doc \(name) \(describe(event, of: document))") }
                say("doc \(name) events finished")
            }
            call(command, name) { try await document.open() }
            return
        }
        guard let document = documents.get(name) else {
            say("error no document \(name)")
            return
        }
        switch command {
        case "doc-edit":
            document.text = rest.joined(separator: " ")
            say("done doc-edit \(name) unsaved=\(document.hasUnsavedChanges)")
        case "doc-text":
            say("doc \(name) text \(document.text) unsaved=\(document.hasUnsavedChanges) url=\(document.fileURL.path)")
        case "doc-save":
            call(command, name) { try await document.save() }
        case "doc-revert":
            call(command, name) { try await document.revert() }
        case "doc-close":
            call(command, name) { try await document.close() }
        case "doc-conflicts":
            let conflicts = document.conflictVersions
            let names = conflicts.map { $0.localizedNameOfSavingComputer ?? "?" }
            say("doc \(name) conflictVersions \(conflicts.count) \(names.joined(separator: ","))")
        case "doc-pick":
            // doc-pick NAME INDEX (a conflict version) or doc-pick NAME current
            let conflicts = document.conflictVersions
            let version: NSFileVersion?
            if let index = rest.first.flatMap(Int.init) {
                guard conflicts.indices.contains(index) else {
                    say("failed doc-pick \(name) no conflict version \(index)")
                    return
                }
                version = conflicts[index]
            } else {
                version = nil
            }
            call(command, name) { try await document.resolveConflicts(keeping: version) }
        default:
            say("error unknown command: \(command)")
        }
    }

    private func call(_ command: String, _ name: String, _ body: @escaping @Sendable () async throws -> Void) {
        Task {
            do {
                try await body()
                say("done \(command) \(name)")
            } catch {
                say("failed \(command) \(name) \(error)")
            }
        }
    }
}
