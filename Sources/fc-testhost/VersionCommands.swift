import FCSystem
import FCToolkit
import FileCoordination
import Foundation

// fc-testhost's NSFileVersion and `.forUploading` commands (issue 15); see the command list in main.swift.

extension Host {
    /// Runs `add-version`, `resolve`, `versions` or `upload` on a thread of its own (or the main thread).
    func runVersionCommand(
        _ command: String,
        _ arguments: [String],
        background: (@escaping @Sendable () -> Void) -> Void
    ) {
        guard let path = arguments.first else {
            say("error \(command) needs a path")
            return
        }
        let url = URL(fileURLWithPath: path)
        switch command {
        case "versions":
            // `nil` (no file, or the store could not be read) is printed as such, never as an empty list.
            let others = NSFileVersion.otherVersionsOfItem(at: url)?.map(Self.id).joined(separator: ",") ?? "(nil)"
            let conflicts =
                NSFileVersion.unresolvedConflictVersionsOfItem(at: url)?.map(Self.id).joined(separator: ",") ?? "(nil)"
            say("versions \(path) \(others)")
            say("conflicts \(path) \(conflicts)")
        case "version-temp":
            let folder = NSFileVersion.temporaryDirectoryURLForNewVersionOfItem(at: url)
            say("version-temp \(path) \(folder.path)")
        case "add-version":
            var rest = Array(arguments.dropFirst())
            let byMoving = rest.contains("moving")
            rest.removeAll { $0 == "moving" }
            var computer: String?
            if let index = rest.firstIndex(of: "conflict"), index + 1 < rest.count {
                computer = rest[index + 1]
                rest.removeSubrange(index...(index + 1))
            }
            let contents = rest.first.map { URL(fileURLWithPath: $0) } ?? url
            let savingComputer = computer
            background {
                self.inWrite(url, "add-version") { writeURL in
                    let version =
                        if let savingComputer {
                            try NSFileVersion.addConflictVersionOfItem(
                                at: writeURL,
                                withContentsOf: contents,
                                savingComputer: savingComputer
                            )
                        } else {
                            try NSFileVersion.addOfItem(
                                at: writeURL,
                                withContentsOf: contents,
                                options: byMoving ? .byMoving : []
                            )
                        }
                    say("done add-version \(path) \(Self.id(version))")
                }
            }
        case "add-versions":
            // add-versions PATH COUNT BYTES [coordinated] [parallel]: COUNT adds, each of BYTES fresh bytes (written
            // first to a scratch file of its own), one after another (each on a thread of its own, all at once, with
            // `parallel`), outside any coordinated call unless `coordinated` (then each inside a coordinated write
            // of PATH).
            let count = arguments.count > 1 ? Int(arguments[1]) ?? 1 : 1
            let bytes = arguments.count > 2 ? Int(arguments[2]) ?? 4096 : 4096
            let coordinated = arguments.contains("coordinated")
            let parallel = arguments.contains("parallel")
            background {
                let adds = DispatchGroup()
                for index in 0..<count {
                    let one: @Sendable () -> Void = {
                        self.addOneVersion(of: url, index: index, bytes: bytes, coordinated: coordinated)
                    }
                    if parallel {
                        adds.enter()
                        Thread {
                            one()
                            adds.leave()
                        }
                        .start()
                    } else {
                        one()
                    }
                }
                adds.wait()
                say("done add-versions \(path)")
            }
        case "resolve":
            background {
                self.inWrite(url, "resolve") { writeURL in
                    let conflicts = NSFileVersion.unresolvedConflictVersionsOfItem(at: writeURL) ?? []
                    if let newest = conflicts.last { try newest.replaceItem(at: writeURL) }
                    for conflict in conflicts { conflict.isResolved = true }
                    try NSFileVersion.removeOtherVersionsOfItem(at: writeURL)
                    say("done resolve \(path)")
                }
            }
        case "upload":
            let hold = arguments.contains("hold") ? DispatchSemaphore(value: 0) : nil
            background {
                var error: NSError?
                NSFileCoordinator().coordinate(readingItemAt: url, options: .forUploading, error: &error) { snapshot in
                    say("granted upload \(path) \(snapshot.path)")
                    if let hold {
                        self.lock.withLock { self.held.append(hold) }
                        say("holding upload \(path)")
                        hold.wait()
                    }
                    let text = (try? String(contentsOf: snapshot, encoding: .utf8)) ?? ""
                    say("done upload \(path) \(text)")
                }
                self.report("upload", path, error)
            }
        default:
            say("error unknown command: \(command)")
        }
    }

    /// Adds one version of `url` with `bytes` fresh bytes, printing `done add-version PATH ID` or the failure.
    private func addOneVersion(of url: URL, index: Int, bytes: Int, coordinated: Bool) {
        let pid = ProcessIdentity.processID
        let scratch = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("fc-testhost-\(pid)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let stamp = Array("\(pid)-\(index)-".utf8)
        do {
            try Data((0..<bytes).map { stamp[$0 % stamp.count] }).write(to: scratch)
        } catch {
            say("failed add-version \(url.path) scratch \(error)")
            return
        }
        let add = { (target: URL) throws in
            let version = try NSFileVersion.addOfItem(at: target, withContentsOf: scratch)
            say("done add-version \(url.path) \(Self.id(version))")
        }
        if coordinated {
            inWrite(url, "add-version") { try add($0) }
        } else {
            do { try add(url) } catch { report("add-version", url.path, error as NSError) }
        }
    }

    /// A coordinated write of `url` whose accessor may throw: a thrown error is printed as a failed call.
    private func inWrite(_ url: URL, _ operation: String, _ body: (URL) throws -> Void) {
        var error: NSError?
        var thrown: NSError?
        NSFileCoordinator().coordinate(writingItemAt: url, options: [], error: &error) { writeURL in
            do { try body(writeURL) } catch { thrown = error as NSError }
        }
        report(operation, url.path, error ?? thrown)
    }

    private static func id(_ version: NSFileVersion) -> String {
        (version.persistentIdentifier as? NSString).map { $0 as String } ?? "?"
    }
}
