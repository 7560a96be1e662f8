import FileCoordination
import Foundation

/// Keeps two folders the same, file by file, through coordinated reads and writes: changes are read as
/// `.forUploading` snapshots and written to the other side, moves are made there too and reported with
/// `item(at:didMoveTo:)` (a file that appears under a new name with the contents a name gone from the same side had is
/// taken for that move, whichever report is handled first), deletions are made with `.forDeleting`, and when both
/// sides changed a file since the last sync, this side's text is kept on both and the other side's is recorded as an
/// `NSFileVersion` conflict version of this side's file (no "(conflicted copy)" files).
///
/// - Important: All of it runs on `queue` (serial); the presenters only hand work there.
final class Mirror: @unchecked Sendable {
    let queue = DispatchQueue(label: "mirror")
    let folders: [Side: URL]
    let otherDevice: String
    private var presenters: [Side: FolderPresenter] = [:]
    /// The contents both sides had at the last sync, by relative path.
    private var base: [String: Data] = [:]

    init(this: URL, other: URL, otherDevice: String) {
        folders = [.this: this.standardizedFileURL, .other: other.standardizedFileURL]
        self.otherDevice = otherDevice
    }

    func start() {
        for side in [Side.this, .other] {
            let presenter = FolderPresenter(side: side, folder: folders[side]!) { [self] side, change in
                queue.async { self.handle(change, on: side) }
            }
            presenters[side] = presenter
            NSFileCoordinator.addFilePresenter(presenter)
        }
        queue.async { [self] in
            let names = Set(files(.this) + files(.other)).sorted()
            for name in names { sync(name) }
            say("mirror: watching \(folders[.this]!.path) (this device) and \(folders[.other]!.path) (\(otherDevice))")
        }
    }

    private let pauseLock = NSLock()
    private var paused = false

    /// Stops mirroring until `resume()`: changes reported meanwhile are queued (the devices are offline).
    func pause() {
        let wasPaused = pauseLock.withLock { () -> Bool in
            defer { paused = true }
            return paused
        }
        guard !wasPaused else { return }
        queue.sync { say("mirror: paused") }
        queue.suspend()
    }

    /// Mirrors again, the queued changes first.
    func resume() {
        let wasPaused = pauseLock.withLock { () -> Bool in
            defer { paused = false }
            return paused
        }
        guard wasPaused else { return }
        queue.resume()
        queue.async { say("mirror: resumed") }
    }

    func stop() {
        for presenter in presenters.values { NSFileCoordinator.removeFilePresenter(presenter) }
    }

    private func files(_ side: Side) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folders[side]!.path)) ?? []).filter { name in
            var isDirectory: ObjCBool = false
            return !name.hasPrefix(".")
                && FileManager.default.fileExists(atPath: url(side, name).path, isDirectory: &isDirectory)
                && !isDirectory.boolValue
        }
    }

    private func url(_ side: Side, _ name: String) -> URL { folders[side]!.appendingPathComponent(name) }

    private func coordinator(_ side: Side) -> NSFileCoordinator { NSFileCoordinator(filePresenter: presenters[side]) }

    private func handle(_ change: FolderChange, on side: Side) {
        switch change {
        case .changed(let name):
            guard !name.hasPrefix("."), !name.contains("/") else { return }
            sync(name)
        case .moved(let from, let to):
            guard !to.hasPrefix("."), !to.contains("/") else { return }
            move(from, to, from: side)
        }
    }

    /// A snapshot of the file on `side` (a coordinated read with `.forUploading`), or `nil` when it is missing.
    private func snapshot(_ side: Side, _ name: String) -> Data? {
        let file = url(side, name)
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        var error: NSError?
        var data: Data?
        coordinator(side).coordinate(readingItemAt: file, options: .forUploading, error: &error) { snapshot in
            data = try? Data(contentsOf: snapshot)
        }
        return error == nil ? data : nil
    }

    /// Brings both sides of `name` to the same contents.
    private func sync(_ name: String) {
        let this = snapshot(.this, name)
        let other = snapshot(.other, name)
        let last = base[name]
        switch (this, other) {
        case (nil, nil):
            base[name] = nil
        case (let data?, nil), (nil, let data?):
            let present: Side = this != nil ? .this : .other
            if last != nil {
                delete(name, on: present)
            } else if let from = movedAway(data, to: name, on: present) {
                // A move whose report is still on its way: a move's destination is announced as a deletion (it may
                // replace a file) before the move, and when this sync runs after the move the new name looked like
                // a new file (a copy, and the old name deleted: the other side's presenters heard no move).
                move(from, name, from: present)
            } else {
                write(data, to: present.opposite, name)
                say("mirror: copied \(name) from \(present) to \(present.opposite)")
            }
        case (let mine?, let theirs?):
            if mine == theirs {
                base[name] = mine
            } else if theirs == last {
                write(mine, to: .other, name)
                say("mirror: copied \(name) from this to other")
            } else if mine == last {
                write(theirs, to: .this, name)
                say("mirror: copied \(name) from other to this")
            } else {
                conflict(name, mine: mine, theirs: theirs)
            }
        }
    }

    /// The name `data` had on `side` at the last sync, if it is gone from there and still on the other side: `name`
    /// is that file, moved.
    private func movedAway(_ data: Data, to name: String, on side: Side) -> String? {
        base.keys.sorted().first { from in
            from != name && base[from] == data
                && !FileManager.default.fileExists(atPath: url(side, from).path)
                && FileManager.default.fileExists(atPath: url(side.opposite, from).path)
        }
    }

    /// Writes `data` to the file on `side` in a coordinated write made for that side's presenter, with a file
    /// progress published about the copy (issue 44): an editor subscribed to the file's folder shows it.
    private func write(_ data: Data, to side: Side, _ name: String) {
        let progress = Progress(totalUnitCount: Int64(data.count))
        progress.kind = .file
        progress.fileURL = url(side, name)
        progress.fileOperationKind = .copying
        progress.publish()
        defer { progress.unpublish() }
        var error: NSError?
        coordinator(side).coordinate(writingItemAt: url(side, name), options: [], error: &error) { file in
            do {
                try data.write(to: file, options: .atomic)
                base[name] = data
                progress.completedUnitCount = Int64(data.count)
            } catch {
                say("mirror: cannot write \(file.path): \(error)")
            }
        }
        if let error { say("mirror: cannot write \(name) on \(side): \(error.localizedDescription)") }
    }

    /// Deletes the file on `side` in a coordinated write `.forDeleting`.
    private func delete(_ name: String, on side: Side) {
        var error: NSError?
        coordinator(side).coordinate(writingItemAt: url(side, name), options: .forDeleting, error: &error) { file in
            try? FileManager.default.removeItem(at: file)
        }
        base[name] = nil
        say("mirror: deleted \(name) on \(side) (deleted on \(side.opposite))")
        if let error { say("mirror: cannot delete \(name) on \(side): \(error.localizedDescription)") }
    }

    /// Both sides changed: this side's text stays on both; the other side's becomes a conflict version of this
    /// side's file, added inside a coordinated write so that its presenters (an editor) hear of it.
    private func conflict(_ name: String, mine: Data, theirs: Data) {
        let staging = NSFileVersion.temporaryDirectoryURLForNewVersionOfItem(at: url(.this, name))
        defer { try? FileManager.default.removeItem(at: staging) }
        let copy = staging.appendingPathComponent(name)
        var error: NSError?
        coordinator(.this).coordinate(writingItemAt: url(.this, name), options: [], error: &error) { file in
            do {
                try theirs.write(to: copy)
                _ = try NSFileVersion.addConflictVersionOfItem(
                    at: file,
                    withContentsOf: copy,
                    savingComputer: otherDevice,
                    options: .byMoving
                )
            } catch {
                say("mirror: cannot record the conflict version of \(name): \(error)")
            }
        }
        if let error { say("mirror: cannot record the conflict of \(name): \(error.localizedDescription)") }
        write(mine, to: .other, name)
        say("mirror: conflict on \(name): kept this device's text; \(otherDevice)'s recorded as a conflict version")
    }

    /// `from` moved to `to` on `side`: the same move on the other side, reported with `item(at:didMoveTo:)`.
    private func move(_ from: String, _ to: String, from side: Side) {
        let target = side.opposite
        let source = url(target, from)
        let destination = url(target, to)
        guard !from.hasPrefix("."), FileManager.default.fileExists(atPath: source.path),
            !FileManager.default.fileExists(atPath: destination.path)
        else {
            if !from.hasPrefix(".") { sync(from) }
            sync(to)
            return
        }
        let coordinator = coordinator(target)
        var error: NSError?
        coordinator.coordinate(
            writingItemAt: source,
            options: .forMoving,
            writingItemAt: destination,
            options: .forReplacing,
            error: &error
        ) { old, new in
            do {
                try FileManager.default.moveItem(at: old, to: new)
                coordinator.item(at: old, didMoveTo: new)
                base[to] = base.removeValue(forKey: from)
            } catch {
                say("mirror: cannot move \(from) to \(to) on \(target): \(error)")
            }
        }
        if let error { say("mirror: cannot move \(from) on \(target): \(error.localizedDescription)") }
        say("mirror: moved \(from) to \(to) on \(target) (moved on \(side))")
        sync(to)
    }
}

/// One line on standard output, at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
