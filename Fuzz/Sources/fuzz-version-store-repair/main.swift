// libFuzzer target: the version store's repair. Each input is a program over a fresh store (in /dev/shm when it
// exists): adds, removals, moves and marks through the store's API, interleaved with damage a crash or a person
// could leave (contents folders or files removed, orphan folders, staging and temporary folders of live and ended
// processes, bytes of the index overwritten) and reopenings (each one repairs). Afterwards the store either refuses
// to open with a VersionStoreError, or it opens and then every listed version has its contents, every contents
// folder has its row, a second repair finds nothing, and no version added since the last damage is lost.

import FCSystem
import FCVersionStore
import Foundation
import FuzzDriver
import Logging

private let root: String = {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    return "\(base)/fc-fuzz-version-store-\(ProcessIdentity.processID)"
}()
private let quiet = Logger(label: "fuzz") { _ in SwiftLogNoOpLogHandler() }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVersionStoreRepair(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: min(size, 256)))
    let manager = FileManager.default
    try? manager.removeItem(atPath: root)
    try? manager.createDirectory(atPath: root + "/items", withIntermediateDirectories: true)
    defer { try? manager.removeItem(atPath: root) }
    let directory = root + "/store"
    let items = [root + "/items/a.txt", root + "/items/b.txt"]
    for item in items { manager.createFile(atPath: item, contents: Data("item".utf8)) }
    guard var store = try? VersionStore(directory: directory, logger: quiet) else { return 0 }
    var added: [String] = []
    /// Versions added since the index was last damaged: none of them may be lost.
    var mustSurvive: Set<String> = []
    var damaged = false
    var bytes = input.makeIterator()
    while let op = bytes.next() {
        let argument = Int(bytes.next() ?? 0)
        let id = added.isEmpty ? nil : added[argument % added.count]
        switch op % 10 {
        case 0:
            let contents = root + "/contents-\(argument)"
            manager.createFile(atPath: contents, contents: Data(repeating: op, count: argument))
            if let version = try? store.add(item: items[argument % 2], contentsOf: contents) {
                added.append(version.id)
                mustSurvive.insert(version.id)
            }
        case 1:
            if let id { _ = try? store.remove(id: id) }
            if let id { mustSurvive.remove(id) }
        case 2:
            if let id {
                try? manager.removeItem(atPath: "\(directory)/contents/\(id)")
                mustSurvive.remove(id)
            }
        case 3:
            if let id, let version = try? store.version(id: id) {
                try? manager.removeItem(atPath: version.contentsPath)
                mustSurvive.remove(id)
            }
        case 4:
            try? manager.createDirectory(
                atPath: "\(directory)/contents/orphan-\(argument)",
                withIntermediateDirectories: false
            )
        case 5:
            // A staging folder of this process (kept), of pid 1 (alive, kept) or of an ended process (removed).
            let pid = [ProcessIdentity.processID, 1, 999_999_999][argument % 3]
            try? manager.createDirectory(
                atPath: "\(directory)/\(argument & 4 == 0 ? "staging" : "tmp")/\(pid)-\(argument)",
                withIntermediateDirectories: true
            )
        case 6:
            // Damage to the index itself: a few bytes overwritten somewhere in the first pages.
            if let handle = FileHandle(forUpdatingAtPath: directory + "/index.sqlite") {
                let offset = UInt64(argument) * 37
                try? handle.seek(toOffset: offset)
                try? handle.write(contentsOf: [op, UInt8(truncatingIfNeeded: argument), 0xff])
                try? handle.close()
                damaged = true
                mustSurvive = []
            }
        case 7:
            guard let reopened = try? VersionStore(directory: directory, logger: quiet) else { return 0 }
            store = reopened
        case 8:
            if let id {
                _ = try? store.markResolved(id: id)
                _ = try? store.markDiscardable(id: id)
            }
        default:
            _ = try? store.itemMoved(from: items[argument % 2], to: items[(argument + 1) % 2])
        }
    }
    // Reopened (and so repaired): refused with a reason, or consistent.
    guard let final = try? VersionStore(directory: directory, logger: quiet), let all = try? final.allVersions()
    else { return 0 }
    let ids = Set(all.map(\.id))
    for version in all {
        precondition(manager.fileExists(atPath: version.contentsPath), "a listed version has no contents")
    }
    if !damaged {
        let folders = Set((try? manager.contentsOfDirectory(atPath: directory + "/contents")) ?? [])
        precondition(folders == ids, "contents and index disagree after repair: \(folders) vs \(ids)")
        precondition((try? final.repair().isClean) == true, "a second repair found something")
    }
    precondition(mustSurvive.isSubset(of: ids), "an added version was lost: \(mustSurvive.subtracting(ids))")
    return 0
}

// The entry point SwiftPM's debug build links (FuzzDriver.runFuzzer says why).
@_cdecl("fuzz_version_store_repair_main")
public func fuzzerEntryPoint(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzVersionStoreRepair)
}
